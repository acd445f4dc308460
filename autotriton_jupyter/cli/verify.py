"""`autotriton verify` and the `autotriton verifier` service commands."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .args import EXIT_CONDITIONAL, EXIT_FAIL, EXIT_PASS, EXIT_USAGE, output_file, source_file
from .common import _STARTED, _add_tune_flags, _add_verify_flags, _options, _progress, _warn

HINT_AFTER_S = 2.0  # a one-shot verify this slow says how to make the next ones quick
# Set once a one-shot verify has closed its own verifier: `run()` may end the process at once.
FAST_EXIT = False

# Checks that need more than one argument, run by main() before the command does any work.


def _check_verify(args: argparse.Namespace) -> None:
    from ..config import TritonizeOptions
    from ..task import TaskError

    if not args.tune and (args.tuned_out or args.tune_variants is not None):
        args.tune = True  # asking where the tuned kernel goes, or how many variants, is asking to tune
    if args.tune_variants is None:
        args.tune_variants = TritonizeOptions.tune_variants
    if args.tuned_out and Path(args.tuned_out).resolve() in {
        Path(args.candidate).resolve(), Path(args.reference).resolve()
    }:
        raise TaskError(
            f"--tuned-out {args.tuned_out} is one of the files being verified; write the tuned "
            "kernel to a new file."
        )
    if args.tune and args.no_timing:
        raise TaskError(
            "tuning (--tune, --tuned-out or --tune-variants) compares the timed variants of a "
            "kernel, and --no-timing turns timing off: give one of them."
        )
    if args.tune and args.device == "cpu":
        _warn("--tune needs timing on a GPU: on the CPU the candidate is verified, not tuned.")


def cmd_verify(args: argparse.Namespace) -> int:
    from ..task import Candidate, Task, TaskError
    from ..verify import service

    task = Task.from_file(args.reference)
    cand = Candidate.from_file(args.candidate)
    options = _options(args)
    progress = _progress(args.quiet)
    report = None
    remote = not args.local
    if remote:  # a running `autotriton verifier` has its workers and references warm
        try:
            report = service.verify_remote(task, cand, options, progress)
        except TaskError:  # the task (or the request) cannot work: the same answer here
            raise
        except (service.ServiceError, OSError, ValueError) as e:
            _warn(f"the verifier service failed during this verify ({e}); verifying here instead")
        except KeyboardInterrupt:
            print(
                "autotriton: interrupted; the verifier service stops this candidate (no "
                "verdict) and goes on (`autotriton verifier stop` ends it).",
                file=sys.stderr,
            )
            return 130
    tuned = None
    answered: Any = None
    one_shot = report is None  # no service answered: this process starts its own verifier
    if report is not None:
        if args.tune:
            here: list = []  # a verifier of this process's own, once the service is gone

            def remote_judge(cands: list) -> list:
                if not here:
                    try:
                        out = []
                        for c in cands:
                            r = service.verify_remote(task, c, options, progress)
                            if r is None:
                                raise service.ServiceError("it stopped, or another took its place")
                            out.append(r)
                        return out
                    except (service.ServiceError, OSError, ValueError) as e:
                        _warn(f"the verifier service left during tuning ({e}); tuning goes on here")
                        from ..verify import Verifier

                        here.append(Verifier(options, on_event=progress))
                return here[0].verify_many(task, cands)

            try:
                tuned = _tune(args, cand, report, remote_judge, progress)
            finally:
                if here:
                    here[0].close()
    else:
        from ..interrupt import signals_held
        from ..verify import prestart

        try:
            with signals_held():  # an interrupt inside torch's import can abort the process
                prestart.launch(options.sandbox)  # its start overlaps the judge's imports
                from ..verify import Verifier, static

            v = Verifier(options, on_event=progress)
            try:
                v.pool.on_event = progress  # the fork server's start, in this command's lines
                if not args.tune:  # one candidate: one worker behind the reference's
                    v.pool.spares = 1
                # The reference's worker first; the fork server then imports torch._dynamo
                # (on a GPU) while the reference runs, for the candidate's worker forked after.
                # A candidate the lint refuses gets its verdict with no worker at all.
                if not static.lint(cand.source, cand.path or cand.name).problems:
                    v.pool.start_for_reference()
                report = v.verify(task, cand)
                if args.tune:
                    tuned = _tune(args, cand, report, lambda cands: v.verify_many(task, cands), progress)
            except BaseException:
                _close(v)
                raise
            # Before the verifier closes: its workers' ends (on a GPU, a CUDA context each,
            # torn down in a few tenths of a second) come after the answer.
            answered = report
            _answer_and_close(args, report, tuned, v)
        finally:
            prestart.drop()  # one its Verifier did not take (it could not be built)
    if one_shot and not args.quiet:
        _bytecode_hint()
    if one_shot and remote and not args.quiet:
        took = time.perf_counter() - _STARTED
        if took > HINT_AFTER_S and _no_service():  # (one running said why not)
            print(
                f"autotriton: this verify started its own verifier and stopped it again "
                f"({took:.1f} s); `autotriton verifier start` keeps one warm, so that each later "
                "verify pays only for its candidate (and for a task's reference, the first time)",
                file=sys.stderr,
                flush=True,
            )
    if answered is None:
        _answer(args, report, tuned)
    return _exit_code(report)


def _no_service() -> bool:
    """Whether no verifier service runs, for a hint (one that cannot say: as if one ran)."""
    from ..verify import service

    try:
        return service.status() is None
    except (service.ServiceError, OSError, ValueError):
        return False


def _exit_code(report: Any) -> int:
    return {"pass": EXIT_PASS, "conditional": EXIT_CONDITIONAL}.get(report.verdict, EXIT_FAIL)


def _close(v: Any) -> None:
    """Close a one-shot verify's own verifier that has no answer (an error, an interrupt)."""
    global FAST_EXIT
    v.close()
    FAST_EXIT = True  # every worker and the fork server ended: run() may end the process at once


def _answer_and_close(args: argparse.Namespace, report: Any, tuned: Any, v: Any) -> None:
    """Write a one-shot verify's answer, then close its verifier, with Ctrl-C and SIGTERM
    held from before the answer to the close's end: one that comes while the answer is
    written or after does not cut the close short (every worker's end waited for, their
    control groups and folder removed), and the exit status stays the verdict's. A second
    one ends the process at once with the verdict's status (the workers were sent SIGKILL
    already; the next verifier removes a folder left so). A failure of the close is a
    warning."""
    global FAST_EXIT
    from ..interrupt import signals_held

    closed = False
    try:
        with signals_held(exit_on_second=_exit_code(report)):
            try:
                _answer(args, report, tuned)
            finally:
                try:
                    v.close()
                    closed = True
                except Exception as e:
                    _warn(f"the verdict is above, but its verifier did not close cleanly: {type(e).__name__}: {e}")
    except KeyboardInterrupt:
        pass  # asked to stop while it answered and closed: both done, the command ends as it would have
    FAST_EXIT = closed


def _answer(args: argparse.Namespace, report: Any, tuned: Any) -> None:
    """The verdict on stdout (JSON with --json), written out at once."""
    from ..verify import format_text

    if args.json:
        got = json.loads(report.to_json())
        if tuned is not None:
            got["tuning"] = tuned.to_dict()
        print(json.dumps(got), flush=True)
    else:
        text = format_text(report)
        print(text if tuned is None else f"{text}\n{tuned.summary()}", flush=True)


def _bytecode_hint() -> None:
    """A one-shot verify whose packages lack their bytecode (slow in every process) says
    so, and how to mend it."""
    from .. import bytecode

    try:
        folders = bytecode.missing()
    except Exception:  # an odd import finder: no hint, and the verdict still comes
        return
    if folders:
        print(f"autotriton: {bytecode.hint(folders)}", file=sys.stderr, flush=True)


def _tune(args: argparse.Namespace, cand: Any, report: Any, judge: Callable, progress: Callable) -> Any:
    """The tuning pass over a verified candidate; --tuned-out gets the best variant's source."""
    from ..files import write_whole
    from ..tuning import tune
    from ..verify.report import FAIL

    tuned = tune(cand, report, judge, args.tune_variants, progress, rank_by=args.rank_by)
    if tuned.suspect:
        report.add("tuning_integrity", FAIL, tuned.suspect)
        report.finish(args.strict)
    if args.tuned_out and tuned.best is not None:
        out = Path(args.tuned_out)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            write_whole(out, tuned.best.variant.source)
        except OSError as e:
            _warn(f"the tuned kernel could not be written to {out} ({e.strerror or e}); it is in the report")
        else:
            progress(f"tuning: the best variant was written to {args.tuned_out}")
    elif args.tuned_out:  # asked for a file: said even with --quiet
        why = (
            f"no tuning: {tuned.skipped}"
            if tuned.skipped
            else "tuning stopped: a variant was caught cheating"
            if tuned.suspect
            else "no variant beat the original"
        )
        _warn(f"{why}, so {args.tuned_out} was not written")
    return tuned


def _service_state(got: dict) -> str:
    if got.get("failed"):
        return f"failed to start its workers ({got['failed']}) and stopping"
    return "stopping" if got.get("stopping") else "starting" if got.get("starting") else "running"


def _service_line(got: dict) -> str:
    from ..verify import service

    since = time.strftime("%H:%M", time.localtime(got.get("started", 0)))
    active = got.get("active", 0)
    if got.get("starting"):
        return (
            f"pid {got['pid']} (device {got.get('device')}), since {since}: importing torch and "
            f"its verifier; socket and log in {service.folder()}"
        )
    if got.get("stopping"):
        return (
            f"pid {got['pid']} on {got['device']}; it finishes its {active} "
            f"verif{'y' if active == 1 else 'ies'} under way and takes no new one; socket "
            f"and log in {service.folder()}"
        )
    return (
        f"pid {got['pid']} on {got['device']}, sandbox {'on' if got['sandbox'] else 'off'}, "
        f"since {since}; {'' if got.get('ready') else 'still starting its workers, '}"
        f"{active} verif{'y' if active == 1 else 'ies'} running, references of "
        f"{got.get('references', 0)} task(s) kept; stops after {got['idle_s'] / 60:g} min "
        f"without a request, or on `autotriton verifier stop`; socket and log in {service.folder()}"
    )


def cmd_verifier(args: argparse.Namespace) -> int:
    from ..verify import service

    try:
        service.folder()  # a runtime folder it cannot use: said, not read as "none runs"
        if args.what == "start":
            options = _options(args)
            got = service.start(options, args.idle * 60.0, on_event=_progress(args.quiet))
            if got.get("already"):
                differs = service.mismatch(got, options)
                if differs and options.device == "cuda":  # without a GPU: said, not "stop it"
                    from ..verify.judge import resolve_device

                    resolve_device("cuda")
                if differs:
                    print(
                        f"autotriton: a verifier service already runs (pid {got['pid']}), but "
                        f"{differs}; stop it first (`autotriton verifier stop`), then start again.",
                        file=sys.stderr,
                    )
                    return EXIT_FAIL
                print(f"a verifier service is already running: {_service_line(got)}")
                if abs(got["idle_s"] - args.idle * 60.0) > 1e-6:
                    print(
                        f"(its idle limit stays {got['idle_s'] / 60:g} min; stop it and start "
                        f"again for --idle {args.idle:g})"
                    )
            else:
                print(f"verifier service ready: {_service_line(got)}")
        elif args.what == "stop":
            try:
                finished = service.stop(on_event=_progress(getattr(args, "quiet", False)))
            except KeyboardInterrupt:
                print(
                    "autotriton: interrupted; a stop already sent still takes effect once the "
                    "verifies under way are done (`autotriton verifier status` says whether it runs)",
                    file=sys.stderr,
                )
                return 130
            if finished is None:
                print("no verifier service is running")
            elif finished:
                print(
                    f"verifier service stopped ({finished} verif{'y' if finished == 1 else 'ies'} "
                    "under way finished first)"
                )
            else:
                print("verifier service stopped")
        else:
            got = service.status()
            if got is None:
                print(json.dumps({"running": False}) if args.json else "no verifier service is running")
                return EXIT_FAIL
            print(
                json.dumps({"running": True, **got})
                if args.json
                else f"verifier service {_service_state(got)}: "
                f"{_service_line(got)}"
            )
            if not args.json and got.get("code") not in (None, service.code_id()):
                print(
                    "note: it runs other autotriton code than this command (changed since it "
                    "started, or another installation): verifies from here are done in their "
                    "own process; `autotriton verifier stop`, then start it again"
                )
    except service.ServiceError as e:
        print(f"autotriton: {e}", file=sys.stderr)
        return EXIT_USAGE if e.usage else EXIT_FAIL
    return EXIT_PASS


def register(sub: Any, T: dict[str, Callable[[str], Any]], sampling: Any, run: Any) -> None:
    """The `verify` and `verifier` subcommands."""
    from ..verify.options import VerifyOptions
    from ..verify.service import IDLE_S
    v = sub.add_parser(
        "verify",
        help="judge a candidate ModelNew against a reference Model",
        description="Exit status: 0 pass, 1 fail, 2 usage or input error, 3 conditional "
        "(right on the task's own inputs, wrong on inputs the judge made).",
    )
    v.add_argument(
        "reference", type=source_file, help="REF.py: Model, get_inputs(), get_init_inputs()"
    )
    v.add_argument("candidate", type=source_file, help="CAND.py: ModelNew with the same signature")
    v.add_argument("--json", action="store_true", help="print the report as one JSON object")
    v.add_argument(
        "--local",
        action="store_true",
        help="verify in this process even when an `autotriton verifier` service runs",
    )
    _add_tune_flags(v)
    v.add_argument(
        "--tuned-out", type=output_file, metavar="FILE", help="write the best verified variant here"
    )
    _add_verify_flags(v)
    v.set_defaults(func=cmd_verify, precheck=_check_verify)

    vs = sub.add_parser(
        "verifier",
        help="a warm verifier service that later `autotriton verify` calls use",
        description="`start` keeps a verifier (its workers, and the references of recent "
        "tasks) running in the background, so each `autotriton verify` skips its start-up. "
        "It stops after --idle minutes without a request, or on `stop`.",
    )
    vsub = vs.add_subparsers(dest="what", required=True)
    vstart = vsub.add_parser(
        "start",
        help="start the service on a device, sandboxed or not",
        description="Each `autotriton verify` still chooses its own tolerances, trials, seed "
        "and timing; the service is started for a device and a sandbox setting only. Exit "
        "status 0 when a service is ready (started now, or already running with these "
        "settings), 1 when one runs with other settings or it could not start, 2 when what "
        "was asked cannot work here (--device cuda without a GPU).",
    )
    vstart.add_argument(
        "--idle",
        type=T["idle"],
        default=IDLE_S / 60,
        metavar="MINUTES",
        help="minutes without a request before it stops (default %(default)g)",
    )
    vstart.add_argument(
        "--device", choices=["auto", "cpu", "cuda"], help=f"where to run (default {VerifyOptions.device})"
    )
    vstart.add_argument(
        "--no-sandbox", action="store_true", help="run its workers without the OS sandbox (trusted code only)"
    )
    vstart.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    vstart.set_defaults(func=cmd_verifier, allow_torch=None, shapes=None, no_timing=False)
    vsub.add_parser(
        "stop", help="stop it, once the verifies under way have finished (exit 0 either way)"
    ).set_defaults(func=cmd_verifier)
    vstatus = vsub.add_parser(
        "status", help="say whether one runs: exit 0 when it does, 1 when none runs"
    )
    vstatus.add_argument("--json", action="store_true", help="print its status as one JSON object")
    vstatus.set_defaults(func=cmd_verifier)
