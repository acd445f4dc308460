"""The judge's checks of the timed calls: how their inputs vary, the reference's answers on
those inputs, and what the timed outputs and figures say (a part of Verifier).

Timing runs in the candidate's worker (timing.py): every call's inputs are varied from a
secret seed (vary.py) and every call's output is projected (fingerprint.py). Here the
judge draws which calls to check after they all ran, has the reference's worker make the
same inputs again, and compares; only then are the figures shown.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import fingerprint, vary
from .checks import layout_problem
from .report import CONDITIONAL, FAIL, PASS, Report
from .sandbox import WorkerFailure

if TYPE_CHECKING:
    from .reference import Reference

REPLY_SLACK = 64 << 20  # a reply beyond its outputs: observations, notes
# The reference's worker compares the kept timed outputs: on its CPU where they are too
# large for its GPU, up to three passes over each (the check, a wrong one's message, the
# stale check) at no less than this many bytes a second. Its time limit grows with them,
# so a large wrong output cannot run it out of time (no figures instead of a failure).
CPU_COMPARE_BYTES_S = 200e6


def _number(x: Any) -> float | None:
    """A figure a worker reported, or None when it is missing or not a finite number >= 0."""
    if not isinstance(x, int | float) or isinstance(x, bool):
        return None
    try:
        f = float(x)  # an integer past float's range (10**400) raises
    except OverflowError:
        return None
    return f if 0 <= f < float("inf") else None


def _fmt_ops(ops: dict[str, int]) -> str:
    return ", ".join(f"aten.{k}" + (f" x{v}" if v > 1 else "") for k, v in sorted(ops.items()))


def _check_kept(kept: Any, want: int) -> None:
    """The worker's kept timed calls: as many as asked for, each a different call."""
    if not isinstance(kept, list) or len(kept) != want:
        raise ValueError(f"the worker kept {len(kept) if isinstance(kept, list) else '?'} timed calls, not {want}")
    if len({k["call"] for k in kept}) != want:
        raise ValueError("the worker kept one timed call twice")


def _check_prints(t: dict[str, Any], positions: int) -> dict[int, list[int]]:
    """The projections of every timed call, by call number: each call once, none missing."""
    calls = t["warmup"] + t["reps"] + t.get("audited", 0) + 3 * t.get("b2b_calls", 0)
    prints = {}
    for call, position, pairs in t["prints"]:
        if type(call) is not int or type(position) is not int or not 0 <= position < positions:
            raise ValueError("a timed call's projection is numbered wrongly")
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == fingerprint.STRIPES + 1 for p in pairs):
            raise ValueError("a timed call's projection has the wrong shape")
        prints[call] = [position, call]
    if sorted(prints) != list(range(calls)):
        raise ValueError(f"projections of {len(prints)} timed calls, not of all {calls}")
    return prints



class TimedChecks:
    """Verifier's steps after a candidate's timing (a mixin: it uses the Verifier's options,
    pool and comparison)."""

    def _timed_problem(
        self,
        wants: tuple[list[dict], list[Any]],
        checks: Sequence[int],
        t: dict[str, Any],
        excuse: bool = False,
    ) -> tuple[str | None, int]:
        """What was wrong with the timed calls' outputs: the kept ones as the reference's
        worker compared them in full (checks.kept_call), the projections of the `checks`
        calls against the reference's; None when nothing. With `excuse`, a call where the
        reference's own output holds NaN or inf is not judged (an honest kernel may give
        another value there); how many were not is the second value."""
        kept, projections = wants
        skipped = 0
        for k in kept:
            if excuse and not k["finite"]:
                skipped += 1
                continue
            if not k["ok"]:
                return f"An output produced while timing was wrong: {k['message']}", skipped
        got = {call: pairs for call, _, pairs in t["prints"]}
        for call, want in zip(checks, projections):
            if excuse and any(row[fingerprint.STRIPES] != 0 for row in want):
                skipped += 1
                continue
            why = fingerprint.agrees(got[call], want)
            if why is not None:
                return (
                    f"Timed call {call + 1} of {len(got)} returned a wrong output ({why}; "
                    f"{len(checks)} timed calls drawn at random afterwards were checked)"
                ), skipped
        return None, skipped

    def _vary_mode(self, ref: Reference) -> str:
        """How the timed calls' inputs are varied for this task: asked of the reference once
        (the first of vary.MODES it takes without new NaN or inf)."""
        with ref.lock:
            if ref.vary_mode is None:
                if not any(vary.varied_positions(ref.sets[i]["inputs"]) for i in ref.timed):
                    ref.vary_mode = "none"
                else:
                    with self.pool.lock.shared():
                        got = ref.worker.call(
                            "probe_vary",
                            self.options.timeout,
                            "The reference, on varied inputs",
                            sets=[ref.sets[i]["worker_index"] for i in ref.timed],
                            seed=secrets.randbits(62),
                        )
                    mode = got.get("mode")
                    ref.vary_mode = mode if mode in vary.MODES else "none"
            return ref.vary_mode

    def _varied_reference(
        self,
        ref: Reference,
        kept: list[dict],
        seed: int,
        checks: list[list[int]],
        projection_seed: int,
        gpu_held: bool = False,
    ) -> tuple[list[dict], list[Any]] | str:
        """The reference on the inputs timed calls saw (vary.py), made again in its own
        worker from the seed: how the kept calls' outputs compare with its own there
        (checks.kept_call: the outputs go to it, only the verdicts come back), and the
        projections of the `checks` calls ([position, call] each); or why it could not
        give them."""
        calls = []
        for k in kept:
            position, call = k["position"], k["call"]
            if not (
                type(position) is int
                and type(call) is int
                and type(k["set"]) is int
                and 0 <= position < len(ref.timed)
                and call >= 0
                and ref.timed[position] == k["set"]
            ):
                raise ValueError("a kept timed call is numbered wrongly")
            calls.append([position, call])
        # Only outputs laid out as the reference's travel to its worker (plain tensors of
        # its dtypes and numbers of dimensions, within the reply's size): nothing of the
        # candidate's making can fail it there. Another layout is wrong whatever its
        # values: the judge says how.
        problems = [layout_problem(k["outputs"], ref.sets[k["set"]]["outputs"]) for k in kept]
        compared = 3 * len(calls) * sum(ref.out_nbytes)
        try:
            with ref.lock, contextlib.nullcontext() if gpu_held else self.pool.lock.shared():
                got = ref.worker.call(
                    "varied_outputs",
                    self.options.timeout + compared / CPU_COMPARE_BYTES_S,
                    "The reference, on the timed calls' inputs",
                    max_reply=REPLY_SLACK,
                    sets=[ref.sets[i]["worker_index"] for i in ref.timed],
                    seed=seed,
                    vary_mode=ref.vary_mode or "elements",
                    calls=calls,
                    candidate=[k["outputs"] if p is None else None for k, p in zip(kept, problems)],
                    checks=checks,
                    projection_seed=projection_seed,
                    atol=self.options.atol,
                    rtol=self.options.rtol,
                )
        except WorkerFailure as f:
            return f.message
        verdicts = got.get("kept")
        if not isinstance(verdicts, list) or len(verdicts) != len(calls) or len(got["prints"]) != len(checks):
            return "the reference's worker returned too few outputs"
        if not all(isinstance(v, dict) and {"ok", "message", "finite", "stale"} <= set(v) for v in verdicts):
            return "the reference's worker returned a malformed comparison"
        for p, v in zip(problems, verdicts):
            if p is not None:  # sent as None
                v["ok"], v["message"] = False, p
        return verdicts, got["prints"]

    def _timing(
        self,
        ref: Reference,
        rt: dict[str, Any],
        timed: dict[str, Any],
        wants: tuple[list[dict], list[Any]] | str,
        r: Report,
        checks: Sequence[int] = (),
    ) -> None:
        t = timed["timing"]
        self._tampering(timed["tampered"], r)
        inputs = (
            f"the timed calls' inputs are the task's own, each float scaled by factors in "
            f"[{vary.LOW}, {vary.HIGH}) drawn anew for every call"
        )
        trusted = True  # whether the figures may be shown
        if isinstance(wants, str):
            # The reference could not run on the varied inputs (a domain it needs, its
            # worker gone, its memory): no fault of the candidate, and no check of its
            # timed outputs either, so no figures.
            trusted = False
            r.notes.append(
                f"no speed figures: the reference could not run on the timed calls' inputs "
                f"({inputs}), so the outputs of the timed calls went unchecked: {wants}"
            )
        else:
            # Where the task's own outputs are finite, NaN or inf that only the varied inputs
            # bring to the reference leaves that call unjudged, not the candidate failed.
            excuse = all(ref.sets[i]["finite"] for i in ref.timed)  # from the reference's run
            problem, skipped = self._timed_problem(wants, checks, t, excuse)
            if skipped:
                judged = len(wants[0]) + len(wants[1]) - skipped
                r.notes.append(
                    f"{skipped} of the checked timed calls were not judged: the reference gives "
                    f"NaN or inf on their inputs ({inputs}) and on none of the task's own"
                    + ("" if judged else "; none was left to judge, so no speed figures")
                )
                trusted = trusted and judged > 0
            if problem is None:
                r.add("timed_outputs", PASS)
                if any(k["stale"] for k in wants[0]):
                    # The varied inputs did not move the reference's output beyond the
                    # tolerance: an output kept from an earlier call would pass as this one.
                    trusted = False
                    r.notes.append(
                        "no speed figures: the task's output hardly changes with its inputs "
                        f"({inputs}, the output stays within tolerance of the unvaried one), "
                        "so the timed calls cannot tell a computed output from a kept one"
                    )
            elif any(c.name == "judge_inputs" and c.status == CONDITIONAL for c in r.checks):
                # Already wrong on inputs the judge made: wrong on these too, as expected
                # of a kernel that relies on a pattern of the task's inputs.
                trusted = False
                r.notes.append(f"no speed figures: {problem[0].lower()}{problem[1:]} ({inputs})")
            else:
                r.add(
                    "timed_outputs",
                    FAIL,
                    f"{problem} ({inputs}); the candidate behaves differently when timed, or "
                    "returns outputs it kept from earlier calls.",
                )
        if ref.vary_mode == "none":
            r.notes.append(
                "the timed calls all saw the same few input sets (the task's inputs have no "
                "float tensor with fractional values, or the reference takes none varied), so "
                "a kernel that keeps its outputs by input value would time as fast as a copy"
            )
        elif ref.vary_mode == "congruent":
            r.notes.append(
                "the timed calls' matrices were varied by secret matrices of factors that keep "
                "symmetry, definiteness and signs (the reference takes no inputs varied "
                "element by element), which is weaker than a factor per element"
            )
        elif ref.vary_mode == "tensor":
            r.notes.append(
                "the timed calls' inputs were varied by one factor per tensor (the reference "
                "takes no inputs varied element by element): a kernel whose output scales with "
                "its input could rescale an output it kept"
            )
        during = "while timed"
        if t.get("calls_without_launch"):
            r.add(
                "launches",
                FAIL,
                f"{t['calls_without_launch']} of {t['calls']} calls {during} "
                "launched none of the candidate's own Triton kernels.",
            )
        ops = {k: v for k, v in t.get("audited_compute_ops", {}).items() if not self._allowed(k)}
        if ops:
            r.add("torch_ops", FAIL, f"forward ran PyTorch compute ops {during}: {_fmt_ops(ops)}.")
        if t.get("audited_host_ops"):
            r.add(
                "host_compute",
                FAIL,
                f"forward copied data to the host {during} ({_fmt_ops(t['audited_host_ops'])}).",
            )
        after = timed["after"]
        where = f"after {t['reps'] + t['warmup'] + t.get('audited', 0)} timed calls"
        self._observation(after["obs"], where, r, first=False)
        if after["outputs"] is not None:
            want = ref.sets[after["set"]]["outputs"]
            c = self._compare(after["outputs"], want, quick=True)
            if not c.ok:
                c = self._compare(after["outputs"], want)  # for its message
                r.add("timed_outputs", FAIL, f"{c.message} {where}.")
        cand = t["median_ms"]
        if t["wall_median_ms"] > 1.5 * cand + 0.25:
            r.add(
                "timing_integrity",
                FAIL,
                f"Each call takes {t['wall_median_ms']:.3f} ms of wall time but only {cand:.3f} ms "
                "on the timed stream: work is running where the timer cannot see it.",
            )
        else:
            r.add("timing_integrity", PASS)
        if not trusted:
            return
        eager, comp = rt.get("eager_ms"), rt.get("compile_ms")
        b2b = _number(t.get("b2b_ms"))
        eager_b2b, comp_b2b = _number(rt.get("eager_b2b_ms")), _number(rt.get("compile_b2b_ms"))
        r.timing = {
            "candidate_ms": cand,
            "eager_ms": eager,
            "compile_ms": comp,
            "speedup_vs_eager": eager / cand if eager and cand else None,
            "speedup_vs_compile": comp / cand if comp and cand else None,
            "candidate_wall_ms": t["wall_median_ms"],
            "candidate_q1_ms": t.get("q1_ms"),
            "candidate_q3_ms": t.get("q3_ms"),
            "reps": t["reps"],
            "method": "CUDA events, median, L2 flushed, inputs refilled each call",
            # Back to back: calls in a row, no flush or synchronisation between them.
            "candidate_b2b_ms": b2b,
            "eager_b2b_ms": eager_b2b,
            "compile_b2b_ms": comp_b2b,
            "speedup_vs_eager_b2b": eager_b2b / b2b if eager_b2b and b2b else None,
            "speedup_vs_compile_b2b": comp_b2b / b2b if comp_b2b and b2b else None,
            "b2b_method": "CUDA events around each of the calls in a row, median of 3 rows",
        }
        if b2b and cand > 2 * b2b:
            r.notes.append(
                f"launch-bound: one call takes {cand:.4f} ms on an idle GPU but {b2b:.4f} ms "
                "in a row of calls, so most of a single call is launch overhead; inside a model, "
                "the back-to-back figure is the one that counts"
            )
        if rt.get("compile_error"):
            r.notes.append(f"torch.compile of the reference failed: {rt['compile_error']}")
        if rt.get("cached_at"):
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(rt["cached_at"]))
            r.timing["reference_timed_at"] = when
            r.notes.append(
                f"the reference's eager and torch.compile times were measured at {when} on this "
                "GPU with these versions, and reused (--no-cache measures them again)"
            )
