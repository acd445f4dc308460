"""The `autotriton` command: parses arguments and calls library code (nothing else lives here)."""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_CONDITIONAL = 0, 1, 2, 3


_STARTED = time.perf_counter()
MAX_SAMPLES = 64  # samples per task: each is a sequence in the decode batch and a worker
MAX_SOURCE = 16 * 2**20  # a task or candidate is Python source, not a data file


# Argument types. Each refuses a bad value with one sentence that says what to give
# instead; argparse turns it into exit 2 with the usage above it. Settings that the
# config file also holds are checked by the config's own rules, so both say the same.


def _flag(rule: Any, name: str = "") -> Callable[[str], Any]:
    """An argparse type from a config rule (config.SECTIONS or one made like them)."""

    def parse(text: str) -> Any:
        from .config import Refused

        try:
            return rule(text)
        except Refused as e:
            raise argparse.ArgumentTypeError(
                f"{text!r} cannot be used{e.because()}: give {e.need}."
            ) from None

    parse.rule = rule  # type: ignore[attr-defined]
    parse.__name__ = name or rule.need
    return parse


def _setting(section: str, field: str) -> Callable[[str], Any]:
    """The argparse type of a flag that overrides the config file's [section] field."""
    from .config import SECTIONS

    return _flag(SECTIONS[section][field], f"{section}.{field}")


def _show(p: Path | str) -> str:
    """A path for a message: as given, or quoted when it holds anything unprintable or blank."""
    s = str(p)
    return s if s.isprintable() and s.strip() == s and s else repr(s)


def _refuse(message: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(message)


def _stat(text: str) -> tuple[Path, os.stat_result | None]:
    """(path, its stat or None when nothing is there); an unusable path is refused."""
    if not text.strip():
        raise _refuse("an empty path cannot be used; give a file or folder.")
    p = Path(text)
    try:
        return p, p.stat()
    except (FileNotFoundError, NotADirectoryError):
        return p, None
    except (OSError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise _refuse(f"{_show(p)} cannot be used ({why}); check the path.") from None


def _path_tag(kind: str) -> Callable[[Callable[[str], Any]], Callable[[str], Any]]:
    def tag(fn: Callable[[str], Any]) -> Callable[[str], Any]:
        fn.path_kind = kind  # type: ignore[attr-defined]
        return fn

    return tag


@_path_tag("file")
def existing_file(text: str) -> str:
    """A file that exists and can be read."""
    p, st = _stat(text)
    if st is None:
        raise _refuse(f"{_show(p)} does not exist; give the path of an existing file.")
    if stat.S_ISDIR(st.st_mode):
        raise _refuse(f"{_show(p)} is a folder; give a file.")
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(f"{_show(p)} is not a regular file; give a file.")
    if not os.access(p, os.R_OK):
        raise _refuse(f"{_show(p)} cannot be read (permission denied); check its permissions.")
    return text


@_path_tag("source")
def source_file(text: str) -> str:
    """A Python source file (task or candidate): exists, readable, UTF-8, not huge."""
    existing_file(text)
    p = Path(text)
    try:
        with p.open("rb") as f:
            data = f.read(MAX_SOURCE + 1)
    except OSError as e:
        raise _refuse(f"{_show(p)} cannot be read ({e.strerror}); check its permissions.") from None
    if len(data) > MAX_SOURCE:
        raise _refuse(
            f"{_show(p)} is larger than {MAX_SOURCE >> 20} MiB; give a Python source file."
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _refuse(
            f"{_show(p)} is not UTF-8 text (byte {data[e.start]:#04x} at offset {e.start}); "
            "give a Python source file saved as UTF-8."
        ) from None
    return text


@_path_tag("dir")
def existing_dir(text: str) -> str:
    """A folder that exists and can be listed."""
    p, st = _stat(text)
    if st is None:
        raise _refuse(f"{_show(p)} does not exist; give the path of an existing folder.")
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(f"{_show(p)} is not a folder; give a folder.")
    if not os.access(p, os.R_OK | os.X_OK):
        raise _refuse(f"{_show(p)} cannot be read (permission denied); check its permissions.")
    return text


@_path_tag("path")
def existing_path(text: str) -> str:
    """A file or folder that exists."""
    p, st = _stat(text)
    if st is None:
        raise _refuse(f"{_show(p)} does not exist; give the path of an existing file or folder.")
    return text


def _can_create(p: Path) -> None:
    """Refuse a path that cannot be made: its nearest existing ancestor must be a writable folder."""
    for parent in p.absolute().parents:
        try:
            st = parent.stat()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:
            raise _refuse(
                f"{_show(parent)} cannot be used ({e.strerror}); choose another path."
            ) from None
        if not stat.S_ISDIR(st.st_mode):
            raise _refuse(
                f"{_show(parent)} is a file, so {_show(p)} cannot be made; choose another path."
            )
        if not os.access(parent, os.W_OK | os.X_OK):
            raise _refuse(
                f"{_show(p)} cannot be made: the folder {_show(parent)} is not writable; "
                "choose another path."
            )
        return


@_path_tag("out-dir")
def output_dir(text: str) -> str:
    """A folder to write into: an existing writable folder, or a path where one can be made."""
    p, st = _stat(text)
    if st is None:
        _can_create(p)
    elif not stat.S_ISDIR(st.st_mode):
        raise _refuse(f"{_show(p)} exists and is not a folder; give a new or existing folder.")
    elif not os.access(p, os.W_OK | os.X_OK):
        raise _refuse(f"{_show(p)} is not writable; give a folder you can write to.")
    return text


@_path_tag("out-file")
def output_file(text: str) -> str:
    """A file to write: an existing writable file, or a path where one can be made."""
    p, st = _stat(text)
    if st is None:
        _can_create(p)
    elif stat.S_ISDIR(st.st_mode):
        raise _refuse(f"{_show(p)} is a folder; give a file path.")
    elif not stat.S_ISREG(st.st_mode):
        raise _refuse(f"{_show(p)} is not a regular file; give a file path.")
    elif not os.access(p, os.W_OK):
        raise _refuse(f"{_show(p)} is not writable; check its permissions.")
    return text


def _names(need: str, ok: Callable[[str], bool]) -> Callable[[str], str]:
    from .config import Rule, Unusable

    def parse(value: str) -> str:
        if not isinstance(value, str) or not ok(value) or not value.isprintable():
            raise Unusable("")
        return value

    return _flag(Rule(need, parse, kind="name"), need)


def _batches(value: str) -> tuple[int, ...]:
    from .config import whole

    return tuple(whole(1)(b) for b in value.split(","))


def _then(text: str) -> tuple[str, str]:
    """--then REF.py:DIR: a task file and a folder of candidates."""
    ref, sep, folder = text.rpartition(":")
    if not sep:
        raise _refuse(f"{text!r} cannot be used: give REF.py:CANDIDATES_DIR.")
    return source_file(ref), existing_dir(folder)


_then.path_kind = "then"  # type: ignore[attr-defined]


def _types() -> dict[str, Callable[[str], Any]]:
    """The argument types that are not config settings (built once per parser)."""
    from .config import Rule, number, whole

    return {
        "samples": _flag(whole(1, MAX_SAMPLES), "samples"),
        "tokens": _flag(whole(1), "tokens"),
        "count": _flag(whole(1), "count"),
        "rounds": _flag(whole(0), "rounds"),
        "seed": _setting("verify", "seed"),
        "temperature": _flag(number(0), "temperature"),
        "top_p": _flag(number(0, 1, above=True), "top_p"),
        "ms": _flag(number(0), "ms"),
        "idle": _flag(number(0, 7 * 24 * 60, above=True), "idle"),
        "name": _names("a non-empty name", lambda v: bool(v.strip())),
        "adapter": _names(
            "an adapter name of letters, digits, _ and - (not starting with a digit)",
            lambda v: v.replace("-", "_").isidentifier(),
        ),
        "batches": _flag(
            Rule("batch sizes separated by commas (e.g. 1,8)", _batches, kind="list"), "batches"
        ),
    }


def _progress(quiet: bool):
    """Progress lines on stderr, each with the seconds since the command started."""

    def emit(msg: str) -> None:
        if not quiet:
            print(
                f"[autotriton {time.perf_counter() - _STARTED:5.1f}s] {msg}",
                file=sys.stderr,
                flush=True,
            )

    return emit


def _warn(message: str) -> None:
    """One warning line on stderr, shown even with -q (it is about the user's files or settings)."""
    print(f"autotriton: warning: {_one_line(message)}", file=sys.stderr, flush=True)


def _add_tune_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tune",
        action="store_true",
        help="after a pass with timing, sweep the kernels' launch parameters (num_warps, "
        "num_stages, BLOCK sizes written as numbers); every variant is verified in full",
    )
    p.add_argument(
        "--tune-variants",
        type=_types()["count"],
        default=12,
        metavar="N",
        help="at most N one-parameter variants (default 12), then the improving ones together",
    )


def _add_verify_flags(p: argparse.ArgumentParser, seed: bool = True) -> None:
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help="where to run (default auto)")
    p.add_argument(
        "--trials",
        type=_setting("verify", "trials"),
        help="fresh input sets from get_inputs() (default 3)",
    )
    p.add_argument(
        "--atol", type=_setting("verify", "atol"), help="absolute tolerance (default 1e-2)"
    )
    p.add_argument(
        "--rtol", type=_setting("verify", "rtol"), help="relative tolerance (default 1e-2)"
    )
    p.add_argument(
        "--allow-torch",
        type=_setting("verify", "allow_torch"),
        metavar="OPS",
        help="comma-separated ATen ops forward may run in PyTorch (e.g. mm,addmm); "
        "'all' allows any (default: none)",
    )
    p.add_argument(
        "--shapes",
        type=_setting("verify", "shapes"),
        metavar="SETS",
        help="also judge at other input shapes: one shape per tensor input, sets separated "
        "by ';' (e.g. '33x257 33x257; 1x7 1x7'); values are drawn from the task's own inputs",
    )
    p.add_argument("--no-timing", action="store_true", help="skip the GPU timing")
    p.add_argument(
        "--strict",
        action="store_true",
        help="fail a candidate that is right on the task's inputs but wrong on inputs the "
        "judge made (instead of the verdict 'conditional', exit 3)",
    )
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run workers without the OS sandbox (generated code then runs with your privileges)",
    )
    p.add_argument(
        "--timeout",
        type=_setting("verify", "timeout"),
        help="seconds allowed per step before a worker is killed (default 120)",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="time the reference (eager and torch.compile) again instead of reusing its "
        "timings from an earlier run on this GPU",
    )
    if seed:
        p.add_argument(
            "--seed",
            type=_setting("verify", "seed"),
            help="fix the input seeds (default: fresh each run)",
        )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def _options_default():
    """Verify options from defaults, the config file and the environment (no flags)."""
    from .config import load
    from .verify import VerifyOptions

    return load("verify", VerifyOptions())


def _options(args: argparse.Namespace):
    from .config import load
    from .verify import VerifyOptions

    o = load("verify", VerifyOptions())
    for name in ("device", "trials", "atol", "rtol", "timeout", "seed"):
        v = getattr(args, name, None)
        if v is not None:
            setattr(o, name, v)
    if args.allow_torch is not None:
        o.allow_torch = args.allow_torch
    if args.shapes is not None:
        o.shapes = args.shapes
    if args.no_timing:
        o.timing = False
    if getattr(args, "no_sandbox", False):
        o.sandbox = False
    if getattr(args, "strict", False):
        o.strict = True
    if getattr(args, "no_cache", False):
        o.reference_cache = False
    return o  # every value was checked: flags by their types, the rest by config.check()


# Checks that need more than one argument, run by main() before the command does any work.


def _check_verify(args: argparse.Namespace) -> None:
    from .task import TaskError

    if not args.tune and (args.tuned_out or args.tune_variants != 12):
        args.tune = True  # asking where the tuned kernel goes, or how many variants, is asking to tune
    if args.tuned_out and Path(args.tuned_out).resolve() in {
        Path(args.candidate).resolve(), Path(args.reference).resolve()
    }:
        raise TaskError(
            f"--tuned-out {args.tuned_out} is one of the files being verified; write the tuned "
            "kernel to a new file."
        )
    if args.tune and args.device == "cpu":
        _warn("--tune needs timing on a GPU: on the CPU the candidate is verified, not tuned.")


def _check_generate(args: argparse.Namespace) -> None:
    from .generate import earlier_samples
    from .task import TaskError

    out = args.output or f"autotriton-out/{Path(args.reference).stem}"
    if not args.output:  # -o DIR was checked as it was parsed
        try:
            output_dir(out)
        except argparse.ArgumentTypeError as e:
            raise TaskError(
                f"{str(e).rstrip('.')}; it is the default output folder: choose another with -o DIR."
            ) from None
    blocked = [p for p in earlier_samples(out) if not p.is_file()]
    if blocked:
        raise TaskError(
            f"{blocked[0]} is not a file, so the sample cannot be written there (even with "
            "--force); move it away or choose another folder with -o DIR."
        )
    found = [] if args.force else earlier_samples(out)
    if found:
        shown = ", ".join(p.name for p in found[:4]) + (", ..." if len(found) > 4 else "")
        raise TaskError(
            f"{out} already holds samples of an earlier run ({shown}); pass --force to "
            "overwrite them, or choose another folder with -o DIR."
        )


def _check_eval(args: argparse.Namespace) -> None:
    from .evaluation import check_candidates, check_results, task_files

    # Refused here, before a model loads: folders without tasks or candidates, and a
    # results.jsonl that exists without --resume or that a resumed run could not continue.
    tasks = task_files(args.tasks)
    if args.candidates:
        check_candidates(args.candidates, tasks)
    check_results(args.out, args.resume)


def cmd_verify(args: argparse.Namespace) -> int:
    from .task import Candidate, Task, TaskError
    from .verify import format_text, service

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
                "autotriton: interrupted; the verifier service still finishes this candidate "
                "(its verdict is not shown; `autotriton verifier stop` ends the service).",
                file=sys.stderr,
            )
            return 130
    tuned = None
    if report is not None:
        if args.tune:
            def remote_judge(cands: list) -> list:
                out = []
                for c in cands:
                    r = service.verify_remote(task, c, options, progress)
                    if r is None:
                        raise service.ServiceError("the verifier service stopped during tuning")
                    out.append(r)
                return out

            tuned = _tune(args, cand, report, remote_judge, progress)
    else:
        from .verify import Verifier

        with Verifier(options, on_event=progress) as v:
            report = v.verify(task, cand)
            if args.tune:
                tuned = _tune(args, cand, report, lambda cands: v.verify_many(task, cands), progress)
    if args.json:
        got = json.loads(report.to_json())
        if tuned is not None:
            got["tuning"] = tuned.to_dict()
        print(json.dumps(got))
    else:
        print(format_text(report))
        if tuned is not None:
            print(tuned.summary())
    return {"pass": EXIT_PASS, "conditional": EXIT_CONDITIONAL}.get(report.verdict, EXIT_FAIL)


def _tune(args: argparse.Namespace, cand: Any, report: Any, judge: Callable, progress: Callable) -> Any:
    """The tuning pass over a verified candidate; --tuned-out gets the best variant's source."""
    from .files import write_whole
    from .tuning import tune
    from .verify.report import FAIL

    tuned = tune(cand, report, judge, args.tune_variants, progress)
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
    elif args.tuned_out:
        progress(f"tuning: no variant beat the original, so {args.tuned_out} was not written")
    return tuned


def _service_line(got: dict) -> str:
    from .verify import service

    since = time.strftime("%H:%M", time.localtime(got.get("started", 0)))
    active = got.get("active", 0)
    return (
        f"pid {got['pid']} on {got['device']}, sandbox {'on' if got['sandbox'] else 'off'}, "
        f"since {since}; {'' if got.get('ready') else 'still starting its workers, '}"
        f"{active} verif{'y' if active == 1 else 'ies'} running, references of "
        f"{got.get('references', 0)} task(s) kept; stops after {got['idle_s'] / 60:g} min "
        f"without a request, or on `autotriton verifier stop`; socket and log in {service.folder()}"
    )


def cmd_verifier(args: argparse.Namespace) -> int:
    from .verify import service

    try:
        if args.what == "start":
            options = _options(args)
            got = service.start(options, args.idle * 60.0, on_event=_progress(args.quiet))
            if got.get("already"):
                differs = service.mismatch(got, options)
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
            print(
                "verifier service stopped (verifies under way were finished first)"
                if service.stop()
                else "no verifier service is running"
            )
        else:
            got = service.status()
            if got is None:
                print(json.dumps({"running": False}) if args.json else "no verifier service is running")
                return EXIT_FAIL
            print(
                json.dumps({"running": True, **got})
                if args.json
                else f"verifier service running: {_service_line(got)}"
            )
    except service.ServiceError as e:
        print(f"autotriton: {e}", file=sys.stderr)
        return EXIT_USAGE if e.usage else EXIT_FAIL
    return EXIT_PASS


def cmd_bench_verify(args: argparse.Namespace) -> int:
    from .verify.bench import run_benchmark

    result = run_benchmark(
        args.reference, args.candidates, _options(args), on_event=_progress(args.quiet)
    )
    print(json.dumps(result, indent=2) if args.json else result["text"])
    return EXIT_PASS


def _model_options(args: argparse.Namespace):
    from .config import load
    from .model.registry import ModelOptions

    o = load("model", ModelOptions())
    if getattr(args, "model", None):
        o.name = args.model
    return o


class _TokenProgress:
    """Model loading and per-sample progress on stderr; the live token line only on a terminal."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.live = sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, e) -> None:
        import time

        if self.quiet:
            return
        if e.kind == "load":
            print(f"[autotriton] {e.message}", file=sys.stderr, flush=True)
        elif e.kind == "token" and self.live and time.monotonic() - self.last > 0.2:
            self.last = time.monotonic()
            who = "all samples" if e.sample < 0 else f"sample {e.sample + 1}"
            line = f"[autotriton] {who}: {e.tokens} tokens, {e.tokens_per_s:.1f} tok/s"
            print(f"\r\033[K{line}", end="", file=sys.stderr, flush=True)
        elif e.kind == "done":
            line = (
                f"[autotriton] sample {e.sample + 1}: {e.tokens} tokens, "
                f"{e.tokens_per_s:.1f} tok/s, {e.message}"
            )
            print(f"\r\033[K{line}" if self.live else line, file=sys.stderr, flush=True)


def cmd_generate(args: argparse.Namespace) -> int:
    from .generate import generate_interruptibly, sample_record, write_samples
    from .model.generator import GenerationParams
    from .model.registry import load
    from .task import Task

    task = Task.from_file(args.reference)
    options = _model_options(args)
    progress = _TokenProgress(args.quiet)
    generator = load(options.name, options, on_event=progress)
    params = GenerationParams(
        max_tokens=args.max_tokens, temperature=args.temperature, top_p=args.top_p, seed=args.seed
    )
    samples, interrupted = generate_interruptibly(task, generator, args.n, params, progress)
    out_dir = args.output or f"autotriton-out/{task.name}"
    summary = write_samples(samples, out_dir, options.name)
    if args.json:
        print(
            json.dumps(
                {
                    "model": options.name,
                    "summary": str(summary),
                    "interrupted": interrupted,
                    "samples": [sample_record(x) for x in samples],
                }
            )
        )
    else:
        for x in samples:
            c = x.completion
            what = x.code_path or f"no candidate ({x.extraction.problem})"
            print(
                f"sample {c.sample + 1}: {c.tokens} tokens in {c.seconds:.1f} s "
                f"({c.tokens_per_s:.1f} tok/s, {c.finish_reason}) -> {what}"
            )
        print(f"written to {out_dir} (summary.json)")
    if interrupted:
        print(
            f"autotriton: interrupted; {len(samples)} finished samples were kept.", file=sys.stderr
        )
        return 130
    return EXIT_PASS


def cmd_model_list(args: argparse.Namespace) -> int:
    from .model.registry import list_models

    specs = list_models(_model_options(args))
    if args.json:
        from dataclasses import asdict

        print(json.dumps([asdict(s) for s in specs]))
        return EXIT_PASS
    for s in specs:
        state = "ready" if s.available else f"needs {s.needs}"
        where = f"  {s.path}" if s.available and s.path else ""
        print(
            f"{s.name:<14} {s.backend:<9} {state}{where}{'  (' + s.about + ')' if s.about else ''}"
        )
    return EXIT_PASS


def cmd_model_pull(args: argparse.Namespace) -> int:
    from .model.registry import pull

    path = pull(args.name, on_event=_progress(args.quiet))
    print(path)
    return EXIT_PASS


def cmd_bench_generate(args: argparse.Namespace) -> int:
    from .model.bench import bench_generate

    result = bench_generate(
        args.shape,
        batches=args.batches,
        prompt_tokens=args.prompt_tokens,
        new_tokens=args.new_tokens,
        static_cache=not args.no_static_cache,
        fused=args.decoder == "fused",
        temperature=args.temperature,
        top_p=args.top_p,
        budget_tokens=args.budget_tokens,
        profile=args.profile,
        on_event=_progress(args.quiet),
    )
    print(json.dumps(result, indent=2) if args.json else result["text"])
    return EXIT_PASS


def cmd_bench_finetune(args: argparse.Namespace) -> int:
    from .model.bench import bench_finetune

    result = bench_finetune(
        args.shape,
        examples=args.examples,
        seq_tokens=args.seq_tokens,
        rank=args.rank,
        on_event=_progress(args.quiet),
    )
    print(json.dumps(result, indent=2) if args.json else result["text"])
    return EXIT_PASS


def cmd_bench_pipeline(args: argparse.Namespace) -> int:
    from .bench import bench_pipeline

    then = list(args.then or [])  # (REF.py, DIR) pairs, checked by _then
    result = bench_pipeline(
        args.reference,
        args.candidates,
        n=args.n,
        repeats=args.repeats,
        verify=_options(args),
        on_event=_progress(args.quiet),
        then=then,
    )
    print(json.dumps(result, indent=2) if args.json else result["text"])
    return EXIT_PASS


def cmd_tritonize(args: argparse.Namespace) -> int:
    from .config import TritonizeOptions
    from .model.generator import GenerationParams
    from .model.registry import load
    from .pipeline import tritonize
    from .store import Store
    from .task import Task
    from .verify.report import format_text

    task = Task.from_file(args.reference)
    options = _model_options(args)
    verify = _options(args)
    with Store(args.library) as store:  # before any work: a library that cannot take the results
        store.writable()
    progress = _TokenProgress(args.quiet)
    generator = load(options.name, options, on_event=progress)
    topts = TritonizeOptions(
        n=args.n,
        rounds=args.rounds,
        verify=verify,
        tune=args.tune,
        tune_variants=args.tune_variants,
        speed_rounds=args.speed_rounds,
        params=GenerationParams(
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            top_p=args.top_p,
            seed=args.seed,
        ),
    )
    emit = _progress(args.quiet)

    def on_event(e) -> None:
        if e.kind == "token":
            progress(e.data["event"])
        elif e.kind in ("generating", "repairing", "verifying", "speeding", "tuning", "done"):
            emit(e.message)
        elif e.kind == "verified":
            emit(f"round {e.round + 1} sample {e.sample + 1}: {e.message}")

    from .interrupt import run_interruptibly

    result, interrupted = run_interruptibly(
        lambda cancel: tritonize(task, generator, topts, on_event=on_event, cancel=cancel)
    )
    if interrupted:
        print("autotriton: interrupted; the candidates that finished are kept.", file=sys.stderr)
    with Store(args.library) as store:
        store.save_result(task.name, task.source, result)
    best = result.best
    if args.output and best and best.code:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(best.code)
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        for c in result.candidates:
            r = c.report
            why = (
                ""
                if c.passed
                else f" ({r.reasons[0]['check']}: {r.reasons[0]['message']})"
                if r and r.reasons
                else ""
            )
            tuned = f" (tuned: {c.tuned})" if c.tuned else ""
            print(
                f"round {c.round + 1} sample {c.sample + 1}{tuned}: {r.verdict if r else 'no code'}{why}"
            )
        if best and best.report:
            print("\nbest candidate:\n" + format_text(best.report))
            if args.output:
                print(f"written to {args.output}")
    return EXIT_PASS if best else EXIT_FAIL


def cmd_kernels_check(args: argparse.Namespace) -> int:
    """SQLite's integrity check of the library: exit 0 when sound, 1 when damaged."""
    from .store import LibraryDamaged, Store, default_path

    path = Path(args.library) if args.library else default_path()
    if not path.exists():
        print(f"autotriton: there is no kernel library at {path} yet", file=sys.stderr)
        return EXIT_USAGE
    try:
        store = Store(path, write=False)
    except LibraryDamaged as e:  # damaged past opening: the same answer as damaged pages
        print(f"autotriton: {_one_line(e)}", file=sys.stderr)
        return 1
    with store:
        problems = store.check()
        if problems:
            print(f"the kernel library {path} is damaged:", file=sys.stderr)
            for p in problems[:20]:
                print(f"  {p}", file=sys.stderr)
            print(f"`autotriton kernels recover --library {path}` copies what is readable "
                  "into a new file.", file=sys.stderr)
            return 1
        counts = store.counts()
    print(f"{path}: ok ({counts['accepted']} accepted kernels, {counts['candidates']} "
          f"candidates, {counts['tasks']} tasks)")
    return 0


def cmd_kernels_recover(args: argparse.Namespace) -> int:
    from .recover import recover
    from .store import default_path

    path = Path(args.library) if args.library else default_path()
    got = recover(path, Path(args.out) if args.out else None)
    print(got.summary())
    print(f"Check it with `autotriton kernels list --library {got.out}`, then move {path} "
          f"aside and {got.out} into its place.")
    return 0


def cmd_kernels(args: argparse.Namespace) -> int:
    from .store import NoLibrary, Store

    try:
        store = Store(args.library, write=False)
    except NoLibrary as e:
        if args.what != "list":
            raise
        print(f"no accepted kernels yet (there is no library at {e.path})")
        return EXIT_PASS
    with store:
        if args.what == "list":
            rows = store.accepted()
            if not rows:
                print(f"no accepted kernels yet in {store.path}")
            for a in rows:
                sp = f"{a.speedup_vs_eager:.2f}x eager" if a.speedup_vs_eager else "not timed"
                print(
                    f"{a.name:<24} {a.task_name:<20} {sp:<16} {time.strftime('%Y-%m-%d', time.localtime(a.created))}"
                )
        elif args.what == "show":
            print(store.get(args.name).code)
        else:
            for a in store.accepted():
                print(
                    json.dumps(
                        {
                            "name": a.name,
                            "task": a.task_name,
                            "task_source": a.task_source,
                            "code": a.code,
                            "edited": a.edited,
                            "model": a.model,
                            "prompt": a.prompt,
                            "chat": a.chat,  # the messages as sent (None before schema 2)
                            "completion": a.completion,
                            "speedup_vs_eager": a.speedup_vs_eager,
                            "speedup_vs_compile": a.speedup_vs_compile,
                        }
                    )
                )
    return EXIT_PASS


def cmd_eval(args: argparse.Namespace) -> int:
    from .evaluation import EvalOptions, render_markdown, run_eval
    from .model.generator import GenerationParams

    verify = _options(args)
    generator = None
    if not args.candidates:
        from .model.registry import load

        options = _model_options(args)
        generator = load(options.name, options, on_event=_TokenProgress(args.quiet))
    eo = EvalOptions(
        out_dir=args.out,
        candidates_dir=args.candidates,
        n=args.n,
        rounds=args.rounds,
        resume=args.resume,
        launch_bound_ms=args.launch_bound_ms,
        verify=verify,
        params=GenerationParams(max_tokens=args.max_tokens),
    )
    summary = run_eval(
        args.tasks, eo, generator, on_progress=_progress(args.quiet), on_warning=_warn
    )
    print(json.dumps(summary, indent=2) if args.json else render_markdown(summary))
    print(f"results in {args.out} (results.jsonl, summary.md, report.html)", file=sys.stderr)
    return EXIT_PASS


def cmd_finetune(args: argparse.Namespace) -> int:
    from .config import load
    from .interrupt import run_interruptibly
    from .model.finetune import FinetuneOptions, run_finetune

    o = load("finetune", FinetuneOptions())
    for key in ("rank", "alpha", "epochs", "lr", "method", "generations", "steps"):
        if getattr(args, key) is not None:
            setattr(o, key, getattr(args, key))
    if args.max_completion_tokens is not None:
        o.max_completion_tokens = args.max_completion_tokens
    if o.method not in ("sft", "grpo"):
        from .task import TaskError

        raise TaskError(f"method must be sft or grpo, not {o.method!r} (check [finetune]).")
    quiet = args.quiet

    def progress(d: dict) -> None:
        if quiet:
            return
        if "reward" in d:
            from .grpo import describe

            line = describe(d)
        else:
            line = (
                f"epoch {d['epoch']}/{d['epochs']} step {d['step']}/{d['steps']} "
                f"loss {d['loss']:.4f} ({d['tokens_per_s']:.0f} tok/s)"
            )
        print(f"\r[autotriton] {line}", end="", file=sys.stderr, flush=True)

    def train(cancel):
        kw = dict(
            library=args.library,
            resume=args.resume,
            model_options=_model_options(args),
            on_progress=progress,
            cancel=cancel,
        )
        if o.method == "grpo":
            from .grpo import run_grpo

            return run_grpo(args.base, args.name, o, verify_options=_options_default(), **kw)
        return run_finetune(args.base, args.name, o, **kw)

    result, interrupted = run_interruptibly(train)
    if not quiet:
        print(file=sys.stderr)
    if result["interrupted"]:
        print(json.dumps(result, indent=2))
        print(
            f"autotriton: interrupted; resume with `autotriton finetune --name {args.name} "
            f"{'--method grpo ' if o.method == 'grpo' else ''}--resume`.",
            file=sys.stderr,
        )
        return 130
    figures = (
        f"mean reward {result['first_reward']:.3f} -> {result['final_reward']:.3f}"
        if o.method == "grpo"
        else f"loss {result['first_loss']:.3f} -> {result['final_loss']:.3f}"
    )
    print(
        f"adapter {args.name} saved; the next generations with {args.base} use it ({figures}).",
        file=sys.stderr,
    )
    if result["held_out_tasks"]:
        from .evaluation import before_after
        from .model.registry import load

        mo = _model_options(args)
        mo.adapter = "none"
        base = load(args.base, mo)
        mo.adapter = args.name
        tuned = load(args.base, mo)
        scores = before_after(
            result["held_out_tasks"],
            base,
            tuned,
            _options_default(),
            max_tokens=args.max_tokens,
            on_progress=_progress(quiet),
        )
        b, a = scores["before"], scores["after"]
        print(
            f"held-out tasks: {b['passed']}/{b['tasks']} verified before fine-tuning, "
            f"{a['passed']}/{a['tasks']} after",
            file=sys.stderr,
        )
        result["held_out_scores"] = scores
    print(json.dumps(result, indent=2))
    return EXIT_PASS


def cmd_adapters(args: argparse.Namespace) -> int:
    from .model.adapters import list_adapters, remove_adapter, use_adapter

    if args.what == "list":
        infos = list_adapters()
        if not infos:
            print("no adapters yet (make one with `autotriton finetune`)")
        for a in infos:
            loss = a.metrics.get("final_loss")
            print(
                f"{a.name:<20} base {a.base:<12} {a.examples} examples, final loss "
                f"{loss if loss is None else round(loss, 4)}, "
                f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(a.created))}"
            )
    elif args.what == "export":
        from .model.gguf_lora import export_adapter
        from .model.registry import resolve

        options = _model_options(args)
        out = export_adapter(
            args.name, lambda base: resolve(base, options), args.output or "", args.base or ""
        )
        print(f"wrote {out} (llama.cpp: --lora {out})")
    elif args.what == "use":
        use_adapter(args.name)
        print(f"generation now prefers adapter {args.name} for its base model")
    else:
        remove_adapter(args.name)
        print(f"removed adapter {args.name}")
    return EXIT_PASS


class _Usage(SystemExit):
    """argparse's refusal: exit status 2, with the one-line message kept for --json."""

    def __init__(self, message: str) -> None:
        super().__init__(EXIT_USAGE)
        self.message = message


def _one_line(text: object) -> str:
    return re.sub(r"\s*[\r\n]+\s*", " ", str(text)).strip()


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose error line always ends by saying what to do."""

    def error(self, message: str):  # type: ignore[override]
        message = _one_line(message)
        if not message.endswith("."):  # argparse's own wording: point at the help
            message += f"; see `{self.prog} --help`."
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr, flush=True)
        raise _Usage(message)


def build_parser() -> argparse.ArgumentParser:
    """The `autotriton` parser; every value-taking argument has a type that checks it."""
    from .config import TritonizeOptions
    from .model.generator import GenerationParams

    sampling = GenerationParams()  # the sampling defaults, written once (model/generator.py)
    run = TritonizeOptions()  # samples and rounds, written once (config.py)
    T = _types()
    parser = _Parser(prog="autotriton", description="Verified Triton kernels from PyTorch modules.")
    sub = parser.add_subparsers(dest="command", required=True)

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
        default=30.0,
        metavar="MINUTES",
        help="minutes without a request before it stops (default 30)",
    )
    vstart.add_argument("--device", choices=["auto", "cpu", "cuda"], help="where to run (default auto)")
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

    g = sub.add_parser("generate", help="sample Triton rewrites of a task with the local model")
    g.add_argument("reference", type=source_file, help="REF.py in the KernelBench format")
    g.add_argument(
        "--model",
        type=T["name"],
        help="autotriton (default), tiny, tiny-hf, a .gguf file, an HF folder, or openai:NAME",
    )
    g.add_argument("-n", type=T["samples"], default=run.n, help=f"number of samples (default {run.n})")
    g.add_argument(
        "--max-tokens",
        type=T["tokens"],
        default=sampling.max_tokens,
        help=f"per sample (default {sampling.max_tokens})",
    )
    g.add_argument("--temperature", type=T["temperature"], default=sampling.temperature)
    g.add_argument("--top-p", type=T["top_p"], default=sampling.top_p)
    g.add_argument("--seed", type=T["seed"])
    g.add_argument(
        "-o",
        "--output",
        type=output_dir,
        help="folder for completions and candidates (default autotriton-out/TASK)",
    )
    g.add_argument(
        "--force",
        action="store_true",
        help="overwrite the samples of an earlier run in the output folder",
    )
    g.add_argument("--json", action="store_true")
    g.add_argument("-q", "--quiet", action="store_true")
    g.set_defaults(func=cmd_generate, precheck=_check_generate)

    t = sub.add_parser("tritonize", help="generate, verify and rank Triton rewrites of a task")
    t.add_argument("reference", type=source_file, help="REF.py in the KernelBench format")
    t.add_argument("--model", type=T["name"])
    t.add_argument("-n", type=T["samples"], default=run.n, help=f"samples (default {run.n})")
    t.add_argument(
        "--rounds",
        type=T["rounds"],
        default=run.rounds,
        help=f"repair rounds after the first (default {run.rounds})",
    )
    t.add_argument("--max-tokens", type=T["tokens"], default=sampling.max_tokens)
    t.add_argument("--temperature", type=T["temperature"], default=sampling.temperature)
    t.add_argument("--top-p", type=T["top_p"], default=sampling.top_p)
    t.add_argument("--seed", type=T["seed"])
    t.add_argument("-o", "--output", type=output_file, help="write the best passing candidate here")
    t.add_argument(
        "--speed-rounds",
        type=T["rounds"],
        default=run.speed_rounds,
        metavar="N",
        help="while the best passing candidate is slower than torch.compile, send it back with "
        f"its timing for a faster one, up to N times (default {run.speed_rounds}; needs a GPU)",
    )
    _add_tune_flags(t)
    t.add_argument(
        "--library",
        type=output_file,
        help="kernel library file (default: the user data directory)",
    )
    t.add_argument("--json", action="store_true")
    _add_verify_flags(t, seed=False)
    t.set_defaults(func=cmd_tritonize)

    e = sub.add_parser(
        "eval", help="measure a model, or a folder of candidates, on a folder of tasks"
    )
    e.add_argument("tasks", type=existing_dir, help="folder of KernelBench-format task files")
    e.add_argument(
        "--candidates",
        type=existing_dir,
        help="score these files instead of generating: DIR/<task>/*.py",
    )
    e.add_argument("--model", type=T["name"])
    e.add_argument("-n", type=T["samples"], default=run.n, help=f"samples per task (default {run.n})")
    e.add_argument("--rounds", type=T["rounds"], default=run.rounds)
    e.add_argument("--max-tokens", type=T["tokens"], default=sampling.max_tokens)
    e.add_argument(
        "--out",
        type=output_dir,
        default="autotriton-eval",
        help="results folder (default autotriton-eval)",
    )
    e.add_argument("--resume", action="store_true", help="continue a run in --out")
    e.add_argument(
        "--launch-bound-ms",
        type=T["ms"],
        default=0.1,
        help="mark timings under this many ms per call as launch-bound (default 0.1)",
    )
    e.add_argument("--json", action="store_true")
    _add_verify_flags(e)
    e.set_defaults(func=cmd_eval, precheck=_check_eval)

    k = sub.add_parser("kernels", help="the library of accepted kernels")
    ksub = k.add_subparsers(dest="what", required=True)
    for what, helptext in (
        ("list", "accepted kernels"),
        ("show", "one kernel's code"),
        ("export", "everything, one JSON object per line"),
    ):
        kp = ksub.add_parser(what, help=helptext)
        if what == "show":
            kp.add_argument("name", type=T["name"])
        if what == "export":
            kp.add_argument("--jsonl", action="store_true", help="the format (the only one)")
        kp.add_argument("--library", type=existing_file)
        kp.set_defaults(func=cmd_kernels)
    kc = ksub.add_parser("check", help="SQLite's integrity check of the library")
    kc.add_argument("--library", type=existing_file)
    kc.set_defaults(func=cmd_kernels_check)
    kr = ksub.add_parser(
        "recover", help="copy what is readable of a damaged library into a new file"
    )
    kr.add_argument("--library", type=existing_file)
    kr.add_argument(
        "--out", type=output_file, help="the new library (default LIBRARY.recovered.sqlite)"
    )
    kr.set_defaults(func=cmd_kernels_recover)

    f = sub.add_parser("finetune", help="train a LoRA adapter on your accepted kernels")
    f.add_argument(
        "--base", type=T["name"], default="tiny-hf", help="a transformers model (default tiny-hf)"
    )
    f.add_argument(
        "--name", type=T["adapter"], default="personal", help="adapter name (default personal)"
    )
    f.add_argument("--rank", type=_setting("finetune", "rank"))
    f.add_argument("--alpha", type=_setting("finetune", "alpha"))
    f.add_argument("--epochs", type=_setting("finetune", "epochs"))
    f.add_argument("--lr", type=_setting("finetune", "lr"))
    f.add_argument(
        "--method",
        choices=["sft", "grpo"],
        help="sft (default): learn the accepted answers; grpo: reinforcement learning on "
        "the accepted tasks with the verifier as the reward (needs trl)",
    )
    f.add_argument(
        "--generations",
        type=_setting("finetune", "generations"),
        help="grpo: answers per task and step (default 4)",
    )
    f.add_argument(
        "--steps",
        type=_setting("finetune", "steps"),
        help="grpo: training steps (default epochs x tasks)",
    )
    f.add_argument(
        "--max-completion-tokens",
        type=_setting("finetune", "max_completion_tokens"),
        help="grpo: answer length (default 4096)",
    )
    f.add_argument("--resume", action="store_true", help="continue an interrupted run")
    f.add_argument(
        "--max-tokens",
        type=T["tokens"],
        default=sampling.max_tokens,
        help="per answer when comparing before/after on held-out tasks",
    )
    f.add_argument("--library", type=existing_file)
    f.add_argument("-q", "--quiet", action="store_true")
    f.set_defaults(func=cmd_finetune, model=None)

    a = sub.add_parser("adapters", help="LoRA adapters made by finetune")
    asub = a.add_subparsers(dest="what", required=True)
    asub.add_parser("list").set_defaults(func=cmd_adapters)
    for what in ("use", "remove"):
        ap = asub.add_parser(what)
        ap.add_argument("name", type=T["adapter"])
        ap.set_defaults(func=cmd_adapters)
    ae = asub.add_parser("export", help="write an adapter as a llama.cpp LoRA GGUF file")
    ae.add_argument("name", type=T["adapter"])
    ae.add_argument("-o", "--output", type=output_file, help="default: adapter.gguf in its folder")
    ae.add_argument(
        "--base", type=existing_path, help="base .gguf or model folder (default: its base)"
    )
    ae.set_defaults(func=cmd_adapters, model=None)

    m = sub.add_parser("model", help="the models available here")
    msub = m.add_subparsers(dest="what", required=True)
    ml = msub.add_parser("list", help="named models and what each needs")
    ml.add_argument("--json", action="store_true")
    ml.set_defaults(func=cmd_model_list, model=None)
    mp = msub.add_parser("pull", help="download a model's weights (needs network)")
    mp.add_argument("name", nargs="?", type=T["name"], default="autotriton")
    mp.add_argument("-q", "--quiet", action="store_true")
    mp.set_defaults(func=cmd_model_pull)

    b = sub.add_parser("bench", help="benchmarks of this tool itself")
    bsub = b.add_subparsers(dest="what", required=True)
    bv = bsub.add_parser("verify", help="fixed cost per candidate and wall time for N candidates")
    bv.add_argument("reference", type=source_file)
    bv.add_argument(
        "candidates", nargs="+", type=source_file, help="candidate files (repeat one to get N)"
    )
    bv.add_argument("--json", action="store_true")
    _add_verify_flags(bv)
    bv.set_defaults(func=cmd_bench_verify)
    bg = bsub.add_parser(
        "generate",
        help="decode tok/s of the transformers backend (random "
        "weights of AutoTriton's shape by default)",
    )
    bg.add_argument("--shape", choices=["autotriton", "tiny"], default="autotriton")
    bg.add_argument("--batches", type=T["batches"], default="1,8")
    bg.add_argument("--prompt-tokens", type=T["tokens"], default=512)
    bg.add_argument("--new-tokens", type=T["tokens"], default=256)
    bg.add_argument("--no-static-cache", action="store_true")
    bg.add_argument(
        "--temperature", type=T["temperature"], default=0.0, help="0 (default): greedy; >0 samples"
    )
    bg.add_argument("--top-p", type=T["top_p"], default=sampling.top_p)
    bg.add_argument(
        "--profile", action="store_true", help="add the GPU kernels of 16 decode steps (CUDA)"
    )
    bg.add_argument(
        "--decoder",
        choices=["fused", "hf"],
        default="fused",
        help="fused: this project's Llama decoder; hf: transformers' forward + StaticCache",
    )
    bg.add_argument(
        "--budget-tokens",
        type=T["tokens"],
        help="size the KV cache for this many new tokens (as a real 8k-token answer "
        "does) while timing only --new-tokens",
    )
    bg.add_argument("--json", action="store_true")
    bg.add_argument("-q", "--quiet", action="store_true")
    bg.set_defaults(func=cmd_bench_generate)
    bf = bsub.add_parser(
        "finetune",
        help="LoRA training tokens/s and peak memory (random weights of AutoTriton's shape)",
    )
    bf.add_argument("--shape", choices=["autotriton", "tiny"], default="autotriton")
    bf.add_argument("--examples", type=T["count"], default=8)
    bf.add_argument("--seq-tokens", type=T["tokens"], default=2048)
    bf.add_argument("--rank", type=_setting("finetune", "rank"), default=16)
    bf.add_argument("--json", action="store_true")
    bf.add_argument("-q", "--quiet", action="store_true")
    bf.set_defaults(func=cmd_bench_finetune)
    bp = bsub.add_parser(
        "pipeline",
        help="seconds from a cell run to its result view, generation excluded "
        "(known candidates replayed from a folder)",
    )
    bp.add_argument("reference", type=source_file)
    bp.add_argument(
        "candidates", type=existing_dir, help="folder of candidate files (replayed as the model)"
    )
    bp.add_argument("-n", type=T["samples"], default=run.n)
    bp.add_argument("--repeats", type=T["count"], default=2)
    bp.add_argument(
        "--then",
        type=_then,
        action="append",
        metavar="REF.py:DIR",
        help="after the repeats, a cell for another task in the same session (repeatable)",
    )
    bp.add_argument("--json", action="store_true")
    _add_verify_flags(bp)
    bp.set_defaults(func=cmd_bench_pipeline)
    return parser


def _terminate(signum: int, frame: object) -> None:
    """A SIGTERM unwinds like Ctrl-C, so workers are killed and scratch files removed."""
    raise KeyboardInterrupt


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `autotriton`; returns the exit status.

    Arguments (by their types), the config file and the environment (config.check) and
    anything that needs several arguments at once (the command's precheck) are all
    checked before the command does any work: a bad one is exit 2 and one line.
    """
    from .config import ConfigError
    from .config import check as check_config
    from .model.generator import GenerationError
    from .store import StoreError
    from .task import TaskError

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help (0), or a usage error already said on stderr (2)
        if isinstance(e, _Usage) and "--json" in argv:
            print(json.dumps({"verdict": "error", "error": e.message, "exit": EXIT_USAGE}))
        return e.code if isinstance(e.code, int) else EXIT_USAGE if e.code else EXIT_PASS
    import signal

    from .config import unknown_environment

    for warning in unknown_environment():
        _warn(warning)
    if threading_main():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        check_config()
        if getattr(args, "precheck", None):
            args.precheck(args)
        return args.func(args)
    except BrokenPipeError:  # output piped into `head` and the like: nothing left to say
        return 141
    except (TaskError, ConfigError, GenerationError, StoreError) as e:
        print(f"autotriton: {_one_line(e)}", file=sys.stderr)
        if getattr(args, "json", False):  # a tool reading stdout still gets one JSON object
            print(json.dumps({"verdict": "error", "error": str(e), "exit": EXIT_USAGE}))
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("autotriton: interrupted; workers were stopped.", file=sys.stderr)
        return 130
