"""The judge: runs the VERIFY.md protocol for candidates of a task and writes their Reports.

The judge itself never runs task or candidate code. The reference runs in one worker,
each candidate in another; inputs and outputs come back as plain data and are
compared here. The reference's own steps are in reference.py, the checks after a
candidate's timing in timed.py.

Length: the protocol for one candidate, step by step; each step's checks sit beside the
step.
"""

from __future__ import annotations

import contextlib
import copy
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..task import Candidate, Task, TaskError, arity, parse_source, signature
from . import fingerprint, static
from .checks import Comparison, compare
from .firstrun import FirstRun
from .options import VerifyOptions
from .reference import (
    INIT_INT_SET,
    INIT_SET,
    INIT_SETS,
    PART_BYTES,
    VARIANTS,
    Reference,
    ReferencePrep,
    _nbytes,
    _resources,
    _still_running,
)
from .report import CONDITIONAL, FAIL, INCONCLUSIVE, PASS, SKIP, Report, full_stop, their_traceback
from .sandbox import Pool, Worker, WorkerFailure
from .timed import REPLY_SLACK, TimedChecks, _check_kept, _check_prints, _fmt_ops, _number

EventSink = Callable[[str], None]

# Where a candidate's runs spent their time (Report.seconds), added up over the parts.
_RUN_SPENT = ("runs_add_sets", "runs_in_worker", "runs_messages", "runs_compare")
RETRIES_WHEN_LOST = 2  # runs of a candidate whose worker died with the fork server
# The check a worker's reported error belongs to, by the step that was running.
STEP_CHECKS = {"load_candidate": "load", "add_sets": "runs", "run": "runs", "time_candidate": "timing"}

_VARIANT_WHAT = {
    "signed": ("signs flipped at random", "booleans flipped at random"),
    "scaled": ("values scaled by 4 and shifted", "some boolean rows all False"),
    "extreme": ("magnitudes 64 times larger", "some boolean rows all True"),
    "zeros": (
        "values rounded to halves (ties) and an eighth set to zero",
        "boolean rows all False or all True",
    ),
    "offset": ("values shifted far from zero (256 times their largest magnitude)", "booleans kept"),
    "tiny": ("magnitudes 1024 times smaller", "booleans kept"),
    INIT_SET: (
        "the task's own inputs, with ModelNew and Model built from get_init_inputs() with "
        "its float arguments scaled by 1.5",
        "booleans kept",
    ),
    INIT_INT_SET: (
        "the task's own inputs, with ModelNew and Model built from get_init_inputs() with "
        "its integer arguments one larger",
        "booleans kept",
    ),
}


# Failures that come from Triton's CPU interpreter, not from the kernel: what to do.
_INTERPRETER_HINTS = (
    (("active drivers",), "Triton's CPU interpreter has no GPU driver: code that asks for "
     "one (get_active_torch_device(), torch.cuda, multi-config autotune) runs only on a GPU. "
     "Verify on a GPU, or take the device from the inputs (x.device)."),
    (("NoneType",), "If the kernel calls libdevice, note that its functions return nothing in "
     "Triton's CPU interpreter: use tl / tl.math functions, or verify on a GPU."),
    (("mask has unsupported dtype",), "Triton's CPU interpreter cannot mix a block and a "
     "scalar in a mask: broadcast the scalar to the block's shape."),
    (("bfloat16",), "Triton's CPU interpreter computes bfloat16 inaccurately (and truncates "
     "float32 to bfloat16): verify bf16 kernels on a GPU."),
)


def _interpreter_hints(r: Report) -> list[str]:
    """Hints for failures that come from the CPU interpreter (see README, Known limits)."""
    text = " ".join(c.message for c in r.failed()) + " ".join(r.errors)
    if "correctness" not in {c.name for c in r.failed()} and "runs" not in {
        c.name for c in r.failed()
    } and "load" not in {c.name for c in r.failed()}:
        return []
    hints = [h for keys, h in _INTERPRETER_HINTS[:3] if any(k in text for k in keys)]
    if "correctness" in {c.name for c in r.failed()} and "bfloat16" in text:
        hints.append(_INTERPRETER_HINTS[3][1])
    return hints


def _variant_what(label: str, inputs: Any) -> str:
    """How the judge made an input set, naming what it did to booleans only when there are any."""
    what = _VARIANT_WHAT.get(label.split(" ")[0])
    if what is None:
        return "other shapes"
    bools = any(str(getattr(x, "dtype", "")) == "torch.bool" for x in inputs or ())
    return f"{what[0]}; {what[1]}" if bools else what[0]


# Wall time the late calls may take before the last, audited one: on a GPU the timing loop
# adds hundreds of calls audited at random, so a second is enough there.
LATE_BUDGET_S = 5.0
LATE_BUDGET_GPU_S = 1.0
RUN_PROGRESS_S = 4.0  # a part of the runs still going after this long says so, and again


def _late_calls() -> int:
    """How many calls precede the last audited one: log-uniform in 48..600, unpredictable.

    A candidate that behaves while it is being counted (honest for its first N calls)
    cannot know N, and every one of these calls is audited. On a GPU the timing loop
    adds hundreds more, audited at random.
    """
    return int(48 * (12.5 ** (secrets.randbelow(1 << 20) / (1 << 20))))


def _start_cuda(lock: Any) -> None:
    """Create this process's CUDA context now rather than at the first comparison, and
    run one comparison that passes and one that fails: the first comparison of a process
    paid about 4 s on the H100 machine (its kernels loaded on first use), the next 0.2 s.
    Fixed values (no random draw: the process may be the user's, seeded), and under the
    GPU's shared lock, as every comparison is (no other process is being timed)."""
    import torch

    with contextlib.suppress(Exception):  # a comparison would fall back to the CPU
        torch.empty(1, device="cuda")
        x = torch.linspace(-4.0, 4.0, 1 << 20)
        with lock.shared():
            for y in (x, x + 1):
                compare(y, x, 1e-2, 1e-2, device="cuda")
                compare(y, x, 1e-2, 1e-2, quick=True, device="cuda")


def _release_cuda_cache() -> None:
    import torch

    with contextlib.suppress(Exception):
        torch.cuda.empty_cache()


def _seconds(x: Any) -> float:
    """A duration a worker reported (it may lie; figures only): 0 unless a finite number >= 0."""
    return _number(x) or 0.0


def _short_of_memory(r: Report) -> bool:
    """Whether a report failed for want of memory (the host's, the GPU's, a library's) in
    its load or runs: its worker's limit, or an error that says so (a model built, a run)."""
    return any(
        c.name == "memory" or (c.name in ("load", "runs") and _resources(c.message)) for c in r.failed()
    )


def _parts(sizes: list[int], limit: int) -> list[list[int]]:
    """Consecutive indices grouped so each group's sizes sum to at most limit (one at least)."""
    groups: list[list[int]] = []
    total = 0
    for i, n in enumerate(sizes):
        if not groups or total + n > limit:
            groups.append([])
            total = 0
        groups[-1].append(i)
        total += n
    return groups


def _plan(ref: Reference) -> list[dict]:
    """The runs every candidate of a task gets: each input set in its own slot, the repeat
    and refill runs, then the late calls (their number drawn anew for each candidate)."""
    n = len(ref.sets)
    plan = [
        {
            "set": i,
            "slot": i,
            "kind": "judge-made" if _made_by_judge(s["label"]) else "fresh",
            **({"model": s["model"]} if "model" in s else {}),
        }
        for i, s in enumerate(ref.sets)
    ]
    plan.append({"set": 0, "slot": 0, "kind": "repeat"})
    if len(ref.own_shape) > 1:  # new values into slot 0's buffers: same shapes
        plan.append({"set": ref.own_shape[1], "slot": 0, "kind": "refill"})
    fresh = [i for i, s in enumerate(ref.sets) if s["label"].startswith("fresh-")]
    late = fresh[-1] if fresh else n - 1
    plan.append({"set": late, "slot": late, "kind": "late", "extra_calls": _late_calls()})
    return plan


def _plan_parts(ref: Reference, plan: list[dict], device: str) -> list[list[int]]:
    """The plan's runs grouped into messages.

    On a GPU as many runs as fit PART_BYTES of inputs and outputs go in one message, on
    the CPU one each (the interpreter takes seconds a call: progress shows); the late calls
    last, on their own. The first input set is sent on its own (a candidate can run it while
    the reference draws the others: firstrun.py). A run wrong on a fresh set stops the plan
    before its next part (_run_plan): a candidate wrong on the first set gets no other run,
    on a GPU as on the CPU."""
    cost = [
        _nbytes(ref.sets[p["set"]]["outputs"]) + _nbytes(ref.sets[p["set"]]["inputs"])
        for p in plan
    ]
    head, *rest = _parts(cost[:-1], PART_BYTES if device == "cuda" else 0)
    split = [[head[0]], head[1:]] if len(head) > 1 else [head]
    return [*split, *rest, [len(plan) - 1]]


def _set_ranges(plan: list[dict], parts: list[list[int]]) -> list[tuple[int, int] | None]:
    """For each part, the input sets it sends first (first, end): those it uses that no
    earlier part sent; None when every set it uses was sent already."""
    ranges: list[tuple[int, int] | None] = []
    sent = 0
    for part in parts:
        upto = max(plan[i]["set"] for i in part) + 1
        ranges.append((sent, upto) if upto > sent else None)
        sent = max(sent, upto)
    return ranges


def _run_label(ref: Reference, p: dict) -> str:
    if p["kind"] == "late":
        # The number is at most what runs: the calls stop when their time is up.
        return f"up to {p['extra_calls'] + 1} calls in a row"
    if p["kind"] in ("repeat", "refill"):
        return f"the {p['kind']} run"
    return f"input set {ref.sets[p['set']]['label']}"


def _made_by_judge(label: str) -> bool:
    """An input set the judge made (a variant, other shapes, other init arguments), not one
    get_inputs() drew for the model get_init_inputs() built."""
    return label in VARIANTS or label in INIT_SETS or label.startswith("shape-")


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' when PyTorch sees a GPU, else 'cpu'; an unusable request raises TaskError."""
    import torch

    if device not in ("auto", "cpu", "cuda"):
        raise TaskError(f"Unknown device {device!r}; use auto, cpu or cuda.")
    has_cuda = torch.cuda.is_available()
    if device == "cuda" and not has_cuda:
        raise TaskError(
            "--device cuda was asked for, but PyTorch sees no CUDA device here; "
            "use --device cpu (Triton's interpreter) or run on a GPU machine."
        )
    if device == "auto":
        return "cuda" if has_cuda else "cpu"
    return device


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 16 * 2**30


def _unknown_ops(allow: Iterable[str]) -> str:
    """A note on --allow-torch names that are no ATen op (a typo allows nothing)."""
    import torch

    unknown = [a for a in allow if a != "all" and not a.endswith("*") and not hasattr(torch.ops.aten, a)]
    if not unknown:
        return ""
    return (
        f" (--allow-torch named {', '.join(repr(a) for a in unknown)}, which "
        f"{'is no ATen op' if len(unknown) == 1 else 'are no ATen ops'}: check the spelling.)"
    )


class Interrupted(Exception):
    """A verify stopped by Verifier.interrupt() before its first verdict: it has none."""


class _Judging:
    """One verify call under way, for interrupt(): its candidate workers, whether its first
    verdict (correctness) is given, and whether an interrupt stopped it before that."""

    __slots__ = ("past_first_verdict", "stopped", "workers")

    def __init__(self) -> None:
        self.past_first_verdict = False
        self.stopped = False
        self.workers: list[Worker] = []


class Verifier(ReferencePrep, TimedChecks):
    """Verifies candidates against tasks with a pool of isolated workers; use as a context manager."""

    def __init__(
        self, options: VerifyOptions | None = None, on_event: EventSink | None = None
    ) -> None:
        self.options = options or VerifyOptions()
        self.device = resolve_device(self.options.device)
        self.on_event = on_event or (lambda _msg: None)
        o = self.options
        self.parallel = o.parallel or (4 if self.device == "cuda" else min(2, os.cpu_count() or 1))
        limit = (
            o.memory_limit_gb * 2**30
            if o.memory_limit_gb
            else _total_memory() * 0.5 / self.parallel
        )
        self.pool = Pool(
            self.device,
            spares=self.parallel,
            memory_limit=int(limit),
            gpu_fraction=0.9 / (self.parallel + 1) if self.device == "cuda" else 0.0,
            start_timeout=max(120.0, o.timeout),
            sandbox=o.sandbox,
        )
        self._refs: dict[str, Reference] = {}
        self._refs_lock = threading.Lock()
        self._owns_pool = True
        self._judging: set[_Judging] = set()  # its verifies under way (interrupt())
        self._judging_lock = threading.Lock()
        if self.device == "cuda":  # the judge compares outputs on the GPU: its CUDA start, meanwhile
            self._cuda_start = threading.Thread(
                target=_start_cuda, args=(self.pool.lock,), name="autotriton-judge-cuda", daemon=True
            )
            self._cuda_start.start()

    def pool_alive(self) -> bool:
        """False once close() was called on the verifier that owns the workers."""
        return not self.pool.closed

    def shares_workers_with(self, options: VerifyOptions) -> bool:
        """Whether a verifier with these options could use this one's workers (view())."""
        mine, o = self.options, options
        return (
            resolve_device(o.device) == self.device
            and o.sandbox == mine.sandbox
            and o.memory_limit_gb == mine.memory_limit_gb
            and (o.parallel or self.parallel) == self.parallel
        )

    def view(self, options: VerifyOptions, on_event: EventSink | None = None) -> Verifier:
        """A verifier with other options that uses this one's workers and references.

        A kernel session keeps one warm Verifier and judges each cell through a view of
        it, so a cell does not pay for a fork server, spares or a reference again. Closing
        a view closes nothing; the references are keyed on the options they depend on.
        """
        if not self.shares_workers_with(options):
            raise ValueError("these options need workers of their own (device, sandbox or memory)")
        v = object.__new__(Verifier)
        v.options, v.device, v.parallel, v.pool = options, self.device, self.parallel, self.pool
        v.on_event = on_event or (lambda _msg: None)
        v._refs, v._refs_lock, v._owns_pool = self._refs, self._refs_lock, False
        v._judging, v._judging_lock = set(), threading.Lock()  # (interrupt: this view's own)
        return v

    def interrupt(self) -> None:
        """A user's interrupt: the verifies this verifier (this view) has under way and
        still checking correctness stop now. Their candidates' workers are killed, and
        those verifies raise Interrupted (no verdict; nothing is judged again). A verify
        past its first verdict (`before_timing` called) finishes: the caller's
        before_timing then skips the timing. Verifies begun later, references and their
        workers are not touched."""
        with self._judging_lock:
            doomed = []
            for judging in self._judging:
                if not judging.past_first_verdict:
                    judging.stopped = True
                    doomed.extend(judging.workers)
        for w in doomed:
            w.signal()

    def _candidate_worker(self, judging: _Judging) -> Worker:
        w = self.pool.acquire()
        with self._judging_lock:
            judging.workers.append(w)
            stopped = judging.stopped
        if stopped:  # stopped while its worker started
            w.signal()
        return w

    # lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill all workers (the reference ones too); a view() closes nothing."""
        if self._owns_pool:
            start = getattr(self, "_cuda_start", None)
            if start is not None:  # a process that exits inside CUDA's start can crash
                start.join(30)
            self.pool.close()
            self._await_builds(5.0)

    # candidates ------------------------------------------------------------------------
    def verify(
        self,
        task: Task,
        candidate: Candidate,
        before_timing: Callable[[Report], bool] | None = None,
    ) -> Report:
        """Judge one candidate; its trouble becomes a failing check. A broken task raises TaskError.

        A worker lost with the fork server (no fault of the candidate's) is judged again
        from the start in a fresh worker. `before_timing`, if given, is called with the
        report once correctness is judged and before the candidate is timed (the first
        verdict); it may block, for example until the GPU is free of other work, and
        returns False to skip the timing (an interrupted run).

        A candidate that started beside its reference (firstrun.py) and failed for want of
        memory, which the reference held too, is judged again from the start, alone.
        """
        judging = _Judging()
        with self._judging_lock:
            self._judging.add(judging)
        try:
            report = self._verify_retried(task, candidate, before_timing, judging)
        finally:
            with self._judging_lock:
                self._judging.discard(judging)
        if judging.stopped:
            raise Interrupted(f"{candidate.name}: stopped by an interrupt before its verdict")
        return report

    def _verify_retried(
        self,
        task: Task,
        candidate: Candidate,
        before_timing: Callable[[Report], bool] | None,
        judging: _Judging,
    ) -> Report:
        alone = False
        asked: list[Report] = []  # the first verdicts given: a report past them is not judged again

        def first_verdict(rep: Report) -> bool:
            with self._judging_lock:  # from here on an interrupt lets it finish
                judging.past_first_verdict = not judging.stopped
            asked.append(rep)
            assert before_timing is not None  # only passed on when there is one
            return before_timing(rep)

        gate = first_verdict if before_timing is not None else None
        for attempt in range(RETRIES_WHEN_LOST + 1):
            report, beside = self._verify_once(task, candidate, gate, judging)
            if beside and not alone and not asked and _short_of_memory(report) and not judging.stopped:
                alone = True  # once: the reference is kept now, so no candidate runs beside it
                self.on_event(f"{report.candidate}: it ran out of memory beside its reference; again alone")
                report, _ = self._verify_once(task, candidate, gate, judging)
            if (
                not any(c.name == "lost" for c in report.failed())
                or attempt == RETRIES_WHEN_LOST
                or judging.stopped
            ):
                return report
            self.on_event(f"{report.candidate}: its worker was lost with the fork server; again")
        return report

    def _verify_once(
        self,
        task: Task,
        candidate: Candidate,
        before_timing: Callable[[Report], bool] | None,
        judging: _Judging,
    ) -> tuple[Report, bool]:
        """One judging; and whether the candidate started beside its reference."""
        t0 = time.perf_counter()
        o = self.options
        r = Report(
            device=self.device,
            interpreted=self.device == "cpu",
            sandboxed=self.pool.sandboxed,
            task=task.path or task.name,
            candidate=candidate.path or candidate.name,
        )
        # The lint needs no worker: a candidate it refuses gets its verdict at once, before
        # any reference is run (a reference that cannot run is raised by the next one).
        lint = static.lint(candidate.source, candidate.path or candidate.name)
        by_check: dict[str, list[str]] = {}
        for p in lint.problems:  # every problem, not just the first of each check
            by_check.setdefault(p.check, []).append(p.message)
        for check, messages in by_check.items():
            r.add(check, FAIL, " ".join(dict.fromkeys(messages)))
        r.notes.extend(lint.notes)
        if not r.failed():
            t_ref = time.perf_counter()
            # Judged after the reference has run (a reference that cannot run is the task's
            # error, and a candidate that merely differs from a broken one is not to blame),
            # but known now: a candidate it fails is not started beside the reference.
            sig = Report()
            self._signature(task, candidate, sig)
            # Where this verify runs the reference, the candidate starts on its first input
            # set meanwhile (firstrun.py).
            first = FirstRun(self.pool, lambda ref, run: self._first_part(ref, candidate, r, run, judging))
            # A reference that cannot run is the caller's error. Held until this candidate
            # is judged: other tasks cannot push it out from under it meanwhile.
            try:
                ref = self._prepare_beside(task, first if not sig.failed() else None)
                try:
                    r.seconds["reference"] = time.perf_counter() - t_ref
                    if ref.prepared_at >= t_ref:  # this report waited for it: where that went
                        r.seconds.update({f"reference_{k}": v for k, v in ref.prep_seconds.items()})
                    for c in sig.checks:
                        r.add(c.name, c.status, c.message)
                    if not r.failed():
                        beside = first.started
                        report = self._against(
                            ref, candidate, r, before_timing, t0, judging, first if beside else None
                        )
                        return report, beside
                finally:
                    self.drop(ref)
            finally:
                # The worker it holds, if the judge took none (its thread ends with it: no
                # event of it after this verify's answer).
                first.cancel(wait_s=5.0)
        r.seconds["total"] = time.perf_counter() - t0
        return r.finish(o.strict), False

    def _prepare_beside(self, task: Task, first: FirstRun | None) -> Reference:
        """prepare(hold=True), with the candidate started on the first input set meanwhile.
        A reference that fails in a way the candidate beside it may have caused (out of
        time, memory or the GPU's memory: a candidate can starve it of the host's CPUs or
        take the device's memory) is run again without this candidate: its error is the
        task's only if it fails that way again. Its own errors are the task's at once."""
        try:
            return self.prepare(task, hold=True, first_set=first.start if first else None)
        except TaskError as e:
            cause = e.__cause__
            if first is None or not first.started or not (
                isinstance(cause, WorkerFailure)
                and (cause.kind in ("timeout", "memory", "crash", "lost") or _resources(cause.message))
            ):
                raise
            first.cancel(wait_s=10.0)  # its worker's memory is free again
            how = cause.placed().strip().rstrip(".")
            self.on_event(
                "reference: it failed while the candidate ran beside it: "
                f"{how if len(how) <= 300 else how[:299] + '…'}; running the reference again "
                "without the candidate"
            )
        return self.prepare(task, hold=True)

    def _against(
        self,
        ref: Reference,
        candidate: Candidate,
        r: Report,
        before_timing: Callable[[Report], bool] | None,
        t0: float,
        judging: _Judging,
        first: FirstRun | None = None,
    ) -> Report:
        """The candidate judged against the reference, once the lint passed; `first`: its
        load and first part, started while the reference ran."""
        o = self.options
        r.add("lint", PASS)
        r.notes.extend(ref.notes)
        if ref.null:
            r.add(
                "null_control",
                INCONCLUSIVE,
                f"A do-nothing output ({ref.null}) matches the reference on every input set at "
                f"atol {o.atol:g}, so correctness cannot be judged; lower --atol or use inputs "
                "that give larger outputs.",
            )
        if first is None:
            self._say_running(r)
        w = None

        def release(wait: bool = False) -> None:  # as soon as the worker is no longer needed
            nonlocal w
            if w is not None:
                self.pool.release(w, wait)
                w = None

        try:
            begun = None
            if first is not None:
                w, begun = first.take()
                r.seconds["worker_wait"] = begun["worker_wait"]
            else:
                w0 = time.perf_counter()
                w = self._candidate_worker(judging)
                r.seconds["worker_wait"] = time.perf_counter() - w0
            r.seconds["worker_init"] = float((w.ready or {}).get("init_s", 0.0))
            self._judge(ref, candidate, w, r, before_timing, release, begun)
        except WorkerFailure as f:
            name = STEP_CHECKS.get(f.op, f.op or "runs") if f.kind == "error" else f.kind
            r.add(name, FAIL, f.message)
            if f.log.strip():
                r.errors.append(f.log)
        except (
            KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError, ArithmeticError
        ) as e:
            # Only a worker that was tampered with sends replies of the wrong shape.
            r.add(
                "protocol",
                FAIL,
                f"The worker's reply was malformed ({type(e).__name__}: "
                f"{str(e)[:120]}); the candidate may have tampered with the judge.",
            )
        finally:
            release()
            if self.device == "cuda":  # the comparisons' blocks: this process keeps no GPU memory
                _release_cuda_cache()
        if r.interpreted:
            r.notes.extend(_interpreter_hints(r))
        r.notes = list(dict.fromkeys(r.notes))
        r.seconds["total"] = time.perf_counter() - t0
        return r.finish(o.strict)

    def verify_many(
        self,
        task: Task,
        candidates: Iterable[Candidate],
        on_report: Callable[[int, Report], None] | None = None,
    ) -> list[Report]:
        """Judge several candidates: correctness in parallel, timing one at a time."""
        cands = list(candidates)
        self.prepare(task)

        def one(i: int) -> Report:
            rep = self.verify(task, cands[i])
            if on_report:
                on_report(i, rep)
            return rep

        with ThreadPoolExecutor(max_workers=self.parallel) as ex:
            reports = list(ex.map(one, range(len(cands))))
        # Their workers' ends too, and a reference's build ahead: the caller's next GPU
        # work (a training step) has the memory they held, and the GPU to itself.
        self.pool.settle()
        self._await_builds(max(self.options.timeout, 300.0) + 30.0)
        return reports

    def _signature(self, task: Task, candidate: Candidate, r: Report) -> None:
        ref_tree, cand_tree = task.tree(), parse_source(candidate.source)
        for method in ("__init__", "forward"):
            want = signature(ref_tree, "Model", method)
            got = signature(cand_tree, "ModelNew", method)
            span = arity(cand_tree, "ModelNew", method)
            # Extra arguments with defaults are fine (`forward(x, out=None)`): the judge,
            # like the reference's callers, passes the reference's arguments only.
            if want is not None and got is not None and span is not None and not (
                span[0] <= len(want) <= span[1]
            ):
                r.add(
                    "signature",
                    FAIL,
                    f"ModelNew.{method} takes ({', '.join(got)}) but Model.{method} takes "
                    f"({', '.join(want)}); ModelNew must take the same arguments (more are "
                    "fine if they have defaults).",
                )

    def _judge(
        self,
        ref: Reference,
        candidate: Candidate,
        w: Worker,
        r: Report,
        before_timing: Callable[[Report], bool] | None = None,
        release: Callable[[bool], None] = lambda wait: None,
        begun: dict[str, Any] | None = None,
    ) -> None:
        """`begun`: the load and first part that _first_part did (its errors raised here,
        where the judge's own commands would have raised them)."""
        o = self.options
        step = time.perf_counter()

        def took(name: str) -> None:
            nonlocal step
            now = time.perf_counter()
            r.seconds[name] = now - step
            step = now

        with self.pool.lock.shared():
            took("gpu_wait")
            out_bytes = sum(ref.out_nbytes)
            if begun is None:
                loaded = self._load(ref, candidate, w)
                took("load")
            elif "loaded" in begun:
                loaded = begun["loaded"]
                r.seconds["load"] = begun["load"]
            else:
                raise begun["error"]
            r.add("load", PASS)
            if loaded.get("triton_warm_up_s") is not None:  # done while the worker waited
                r.seconds["worker_triton_warm_up"] = _seconds(loaded["triton_warm_up_s"])
            if loaded["unmatched"] and ref.state:
                r.notes.append(
                    f"{len(loaded['unmatched'])} reference parameters/buffers have no "
                    "same-named, same-shaped counterpart in ModelNew; it keeps its own "
                    "values for them"
                )
            if loaded["copy_mode"] == "position" and loaded["copied"]:
                r.notes.append(
                    "parameters were copied from the reference by position and shape "
                    "(the names differ)"
                )
            if not loaded["own_forward"]:
                r.add(
                    "own_forward",
                    FAIL,
                    "ModelNew.forward is not defined in the candidate's own "
                    "code, so an inherited or borrowed forward would run.",
                )
            else:
                r.add("own_forward", PASS)
            plan = _plan(ref)
            early = plan[:-1]  # every run but the late calls
            ran = self._run_plan(ref, w, plan, r, slice(None, -1), begun)
            took("runs")
            self._tampering(loaded["tampered"] + ran["tampered"], r)
            runs = ran["runs"]
            errors = any("error" in x for x in runs)
            if len(runs) < len(early) and not ran["stopped"] and not errors:
                r.add("runs", FAIL, "The worker returned fewer runs than it was asked for.")
                return
            complete = len(runs) == len(early) and not errors
            # The first verdict, on every run but the late calls, judged into a copy: the
            # report itself is judged once, on every run, as it always was. Under the shared
            # lock: the comparison runs on the GPU where there is one.
            compared = ran["compared"]
            early_report = copy.deepcopy(r)
            self._runs(ref, plan[: len(runs)] if ran["stopped"] else early, runs, early_report, compared)
            # Wrong on an input set the task draws: the late calls are skipped (as when a
            # later part of the plan finds it so).
            wrong = ran["stopped"] or any(
                not c.ok for i, c in compared.items() if plan[i]["kind"] == "fresh"
            )
            took("compare")
            late = complete and not wrong
            # On a GPU with timing, the first verdict ("correct": before_timing) comes
            # before the late calls, which then run with the timing: up to a second sooner.
            ahead = (
                late and self.device == "cuda" and o.timing and before_timing is not None
                and not early_report.blocking()
            )
            if not ahead:  # judged at once, in the same hold of the lock
                self._finish_runs(ref, w, plan, runs, r, compared, late, wrong)
        go_on = True
        if ahead:
            assert before_timing is not None
            go_on = before_timing(early_report)
            before_timing = None
            step = time.perf_counter()  # the wait for it is the caller's, not the judge's
            with self.pool.lock.shared():
                self._finish_runs(ref, w, plan, runs, r, compared, late, wrong)
        if late:
            took("late")
        if r.blocking() or not o.timing:
            if not o.timing and self.device == "cuda":  # (on the CPU nothing is timed anyway)
                r.notes.append("timing was switched off (--no-timing)")
            return
        if self.device != "cuda":
            return
        if before_timing is not None and not before_timing(r):
            go_on = False
        if not go_on:
            r.notes.append("timing was skipped: the run was interrupted")
            return
        step = time.perf_counter()
        if ref.timing_failure:
            r.notes.append(f"no speed figures: {ref.timing_failure}")
            return
        try:
            self._vary_mode(ref)
            rt = self._reference_timing(ref)
        except WorkerFailure as f:
            # The reference's failure is not the candidate's: its verdict stands, without
            # figures (as with --no-timing). One that ran out of time is not tried again.
            if f.kind == "lost":
                raise  # the fork server ended: the candidate is judged again
            why = f"the reference could not be timed ({f.kind}: {f.message[:200]})"
            if f.kind == "timeout":
                ref.timing_failure = why
            r.notes.append(f"no speed figures: {why}")
            return
        mode = ref.vary_mode or "elements"  # as the reference's timing left it (it may step down)
        took("reference_timing")
        keep = max(1, min(3, PART_BYTES // max(1, out_bytes) - 2))  # outputs kept while timed
        self.on_event(f"{r.candidate}: timing (the GPU is held exclusively)")
        vary_seed = secrets.randbits(62)  # the timed calls' inputs: unknown to the candidate
        projection_seed = secrets.randbits(62)  # the weights of every timed output's projection
        with self.pool.lock.exclusive():
            self.pool.settle()  # no released worker's end (its CUDA context's teardown) beside it
            took("timing_wait")
            timed = w.call(
                "time_candidate",
                max(o.timeout, 300.0),
                "Timing the candidate",
                max_reply=REPLY_SLACK + 2 * out_bytes * (keep + 2),  # + one back to back, + after
                sets=ref.timed,
                # Never derived from the model's seed, which the candidate can recover from
                # its own parameters: which calls are kept and audited must stay unknown.
                seed=secrets.randbits(63),
                budget_s=o.timing_budget_s,
                keep=keep,
                vary_seed=vary_seed,
                vary_mode=mode,
                projection_seed=projection_seed,
            )
            took("timing")
            phases = timed["timing"].get("seconds")
            if isinstance(phases, dict):  # the worker's own clock: for the figures only
                for k in ("warmup", "single", "b2b", "prints", "after"):
                    if k in phases:
                        r.seconds[f"timing_{k}"] = _seconds(phases[k])
            release(True)  # its reply holds everything: its memory is the reference's now
            _check_kept(timed["kept"], keep + 1)
            prints = _check_prints(timed["timing"], len(ref.timed))
            if any(k["call"] not in prints for k in timed["kept"]):
                raise ValueError("a kept timed call is not one of the timed calls")
            # Which timed calls are checked is drawn now, after they all ran.
            checks = secrets.SystemRandom().sample(sorted(prints), min(fingerprint.CHECKED, len(prints)))
            # Still holding the GPU: the next candidate's timing would otherwise make this
            # wait its whole turn. (ref.lock inside the exclusive lock cannot deadlock here:
            # the steps that hold ref.lock while they wait for the GPU, the reference's
            # timing and vary probe and its build ahead, were done before this candidate's
            # timing began: a build starts only while ref.timing is None, and ref.timing,
            # once set, is never unset.)
            wants = self._varied_reference(
                ref, timed["kept"], vary_seed, [prints[c] for c in checks], projection_seed,
                gpu_held=True,
            )
        took("timing_reference")
        with self.pool.lock.shared():
            self._timing(ref, rt, timed, wants, r, checks)
        took("timing_compare")

    def _say_running(self, r: Report) -> None:
        self.on_event(
            f"{r.candidate}: running in a {'sandboxed' if self.pool.sandboxed else 'separate (unsandboxed)'} worker"
        )

    def _load(self, ref: Reference, candidate: Candidate, w: Worker) -> dict[str, Any]:
        o = self.options
        return w.call(
            "load_candidate",
            o.timeout,
            "Loading the candidate",
            max_reply=REPLY_SLACK,
            source=candidate.source,
            init_inputs=ref.init_inputs,
            init_variants=ref.init_variants,
            state=ref.state,
            seed=ref.seed,
            out_nbytes=ref.out_nbytes,
            tolerance=(o.atol, o.rtol),
        )

    def _first_part(
        self, ref: Reference, candidate: Candidate, r: Report, run: FirstRun, judging: _Judging
    ) -> dict[str, Any]:
        """The candidate's worker, its load and the plan's first part (the reference's first
        input set, all of `ref` there is yet), on FirstRun's thread. The load's or the run's
        error is kept for _judge and _run_plan to raise; r is only read (its name)."""
        self._say_running(r)
        w0 = time.perf_counter()
        w = self._candidate_worker(judging)
        run.hold(w)
        got: dict[str, Any] = {"worker_wait": time.perf_counter() - w0}
        with self.pool.lock.shared():
            t0 = time.perf_counter()
            try:
                got["loaded"] = self._load(ref, candidate, w)
            except Exception as e:
                got["error"] = e
                return got
            got["load"] = time.perf_counter() - t0
            # The plan as far as the one set there is yet gives it: its first part is the
            # full plan's (_run_plan checks that it is).
            plan = _plan(ref)
            parts = _plan_parts(ref, plan, self.device)
            part: dict[str, Any] = {
                "entry": plan[0], "spent": dict.fromkeys(_RUN_SPENT, 0.0), "runs": [], "tampered": []
            }
            try:
                self._run_part(
                    ref, w, plan, r, parts[0], 0, None, _set_ranges(plan, parts)[0],
                    part["spent"], part["runs"], part["tampered"],
                )
            except Exception as e:
                part["error"] = e
            got["part"] = part
        return got

    def _seal_ahead(self, ref: Reference) -> None:
        """Encode the input-set messages every candidate of this reference will be sent, in
        the background (a second or two for a GPU-sized task), while its first candidates
        start their workers and load."""
        try:
            plan = _plan(ref)
            ranges = _set_ranges(plan, _plan_parts(ref, plan, self.device))
        except Exception:  # only ahead of time: the candidates' own path says what is wrong
            return

        def seal() -> None:
            for first, end in filter(None, ranges):
                try:
                    ref.input_sets(first, end)
                except Exception:  # no memory for it now: the candidate that needs it says so
                    return

        threading.Thread(target=seal, name="autotriton-seal-sets", daemon=True).start()

    def _run_plan(
        self,
        ref: Reference,
        w: Worker,
        plan: list[dict],
        r: Report,
        which: slice = slice(None),
        begun: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run the plan's parts `which` in the candidate's worker (the plan goes in parts
        when inputs and outputs are large; the late calls are the last part, on its own).

        Input sets are sent with the first part that uses them; a part that ends in an
        error ends the run. Where the time went is added to r.seconds ("runs_*"). The
        runs returned are those of the parts run, from the first of them on. `begun`: the
        first part as _first_part ran it (its error raised where its run would have).
        """
        spent = dict.fromkeys(_RUN_SPENT, 0.0)
        runs: list[dict] = []
        tampered: list[str] = []
        # The late calls go last, on their own: a candidate already wrong on an input set
        # the task draws has its verdict, and is not kept for hundreds of calls more.
        every = _plan_parts(ref, plan, self.device)
        numbers = list(range(len(every)))[which]
        parts = every[which]
        sends = _set_ranges(plan, every)[which]  # the sets each part sends first, if any
        base = parts[0][0] if parts else 0  # the plan's index of the first run here
        stopped = wrong = False
        compared: dict[int, Comparison] = {}  # runs compared once, as their part returns
        checked = 0
        # The fresh runs are compared here, before the next part, which they may stop. The
        # others (judge-made sets, repeat, refill) on a thread, while the worker runs the
        # next part; `_runs` reuses every comparison.
        behind = ThreadPoolExecutor(1, thread_name_prefix="autotriton-compare")
        pending: list[Any] = []

        def compare_run(i: int) -> Comparison:
            c = self._compare(runs[i]["outputs"], ref.sets[plan[base + i]["set"]]["outputs"])
            compared[base + i] = c
            return c

        try:
            for k, part in enumerate(parts):
                t0 = time.perf_counter()
                for i in range(checked, len(runs)):
                    kind = plan[base + i]["kind"]
                    if kind == "fresh" and "outputs" in runs[i]:
                        right = compare_run(i).ok
                        wrong = not right or wrong
                        if right and ref.compile_wanted:  # it may be timed: compile the reference
                            self._compile_ahead(ref)
                    elif kind != "late" and runs[i].get("outputs") is not None:
                        pending.append(behind.submit(compare_run, i))
                checked = len(runs)
                spent["runs_compare"] += time.perf_counter() - t0
                if k and wrong:
                    stopped = True
                    break
                if begun is not None and numbers[k] == 0:
                    done = begun["part"]
                    if every[0] != [0] or done["entry"] != plan[0]:
                        raise RuntimeError("the part run ahead of the reference is not the plan's first")
                    if "error" in done:
                        raise done["error"]
                    runs += done["runs"]
                    tampered += done["tampered"]
                    for key, value in done["spent"].items():
                        spent[key] = spent.get(key, 0.0) + value
                else:
                    self._run_part(
                        ref, w, plan, r, part, numbers[k], len(every), sends[k], spent, runs, tampered
                    )
                if len(runs) < checked + len(part) or any("error" in x for x in runs[checked:]):
                    break
            t0 = time.perf_counter()
            for f in pending:
                f.result()  # its error, if any, is the judge's
            spent["runs_compare_wait"] = time.perf_counter() - t0
        finally:
            behind.shutdown(wait=True, cancel_futures=True)
        for key, value in spent.items():
            r.seconds[key] = r.seconds.get(key, 0.0) + value
        return {"runs": runs, "tampered": tampered, "stopped": stopped, "compared": compared}

    def _run_part(
        self,
        ref: Reference,
        w: Worker,
        plan: list[dict],
        r: Report,
        part: list[int],
        number: int,
        count: int | None,
        send: tuple[int, int] | None,
        spent: dict[str, float],
        runs: list[dict],
        tampered: list[str],
    ) -> None:
        """One part of the plan (`number` of `count`) in the candidate's worker, its input
        sets `send` first: its runs and tampering are added to `runs` and `tampered`. count
        None: the first part, run while the reference makes the others."""
        o, name = self.options, r.candidate
        label = ", ".join(_run_label(ref, plan[i]) for i in part)
        if count is None:
            self.on_event(f"{name}: {label} (part 1, while the reference makes its other input sets)")
        elif count > 1:
            self.on_event(f"{name}: {label} ({number + 1}/{count})")
        t0 = time.perf_counter()
        if send is not None:
            try:
                sets = ref.input_sets(*send)
            except OSError as e:  # no memory or descriptors left for a memory file
                raise WorkerFailure(
                    "error",
                    f"the judge could not prepare the input sets ({e}); free memory and run again",
                    op="add_sets",
                ) from e
            w.call(
                "add_sets",
                o.timeout,
                "Sending the input sets",
                max_reply=REPLY_SLACK,
                sealed=sets,
            )
        t1 = time.perf_counter()
        spent["runs_add_sets"] += t1 - t0
        # A part can take many seconds (the late calls on a CPU, Triton's interpreter): said.
        with _still_running(self.on_event, f"{name}: {label}", o.timeout, every=RUN_PROGRESS_S):
            got = w.call(
                "run",
                o.timeout,
                "Running the candidate",
                max_reply=REPLY_SLACK + 2 * sum(_nbytes(ref.sets[plan[i]["set"]]["outputs"]) for i in part),
                runs=[
                    {k: plan[i][k] for k in ("set", "slot", "extra_calls", "model") if k in plan[i]}
                    for i in part
                ],
                extra_budget_s=LATE_BUDGET_S if self.device == "cpu" else LATE_BUDGET_GPU_S,
            )
        # The worker's own clock: for the figures only, never for a verdict.
        in_worker = _seconds(got.get("op_s"))
        spent["runs_in_worker"] += in_worker
        spent["runs_messages"] += max(0.0, time.perf_counter() - t1 - in_worker)
        if not runs and not part[0] and got["runs"] and isinstance(got["runs"][0].get("obs"), dict):
            first = got["runs"][0]["obs"]
            spent["runs_first_call"] = _seconds(first.get("seconds"))
            # On a GPU: when its driver module, kernels and launchers were ready (Triton's
            # builds and compiles, from the worker's cache files; a lie costs only figures).
            steps = first.get("triton_steps")
            steps = steps if isinstance(steps, dict) else {}
            for kind in ("driver", "kernel", "launcher"):
                if kind in steps:
                    spent[f"runs_first_call_{kind}_ready"] = _seconds(steps[kind])
        runs += got["runs"]
        tampered += got["tampered"]

    def _finish_runs(
        self,
        ref: Reference,
        w: Worker,
        plan: list[dict],
        runs: list[dict],
        r: Report,
        compared: dict[int, Comparison],
        late: bool,
        wrong: bool,
    ) -> None:
        """The late calls (the plan's last part) when `late`, then the report judged on
        every run (the first judging's comparisons reused). Hold the device lock shared."""
        if late:
            got = self._run_plan(ref, w, plan, r, slice(-1, None))
            self._tampering(got["tampered"], r)
            if not got["runs"]:
                r.add("runs", FAIL, "The worker returned fewer runs than it was asked for.")
                return
            runs = runs + got["runs"]
        self._runs(ref, plan[: len(runs)] if wrong else plan, runs, r, compared)
        if wrong:
            r.notes.append("the repeated calls were skipped: the output was already wrong")

    # judging ---------------------------------------------------------------------------
    def _tampering(self, changed: list[str], r: Report) -> None:
        if changed:
            shown = ", ".join(sorted(set(changed))[:5])
            r.add(
                "tampering", FAIL, f"The candidate replaced functions the judge relies on: {shown}."
            )
        else:
            r.add("tampering", PASS)

    def _observation(
        self, obs: dict[str, Any], where: str, r: Report, first: bool, judge_made: bool = False
    ) -> None:
        if obs["output_problem"]:
            r.add(
                "output_type",
                FAIL,
                f"{obs['output_problem'][0].upper()}{obs['output_problem'][1:]} ({where}).",
            )
        elif obs.get("pytorch_copy") and not judge_made:
            # Only on inputs the task draws: on a judge-made set (all positive, say) an
            # honest ReLU is an identity, equal to a copy of its input.
            r.add(
                "output_type",
                FAIL,
                "An output is exactly what a PyTorch copy (clone, .to, .contiguous, copy_, "
                "fill_) wrote from forward's inputs or from data no kernel of the candidate had "
                f"touched, or a kernel's move of such a copy: PyTorch made it ({where}).",
            )
        own = obs["launches"]
        calls, launchless = obs.get("calls", 1), obs.get("calls_without_launch", 0)
        if own and launchless:
            r.add(
                "launches",
                FAIL,
                f"{launchless} of {calls} calls {where} launched none of the "
                "candidate's own Triton kernels; the result was computed some other way.",
            )
        if not own:
            foreign = obs["foreign_launches"]
            extra = (
                f" (only kernels defined elsewhere ran: {', '.join(foreign)})" if foreign else ""
            )
            r.add(
                "launches",
                FAIL,
                f"forward launched none of the candidate's own Triton kernels "
                f"{where}{extra}; the result was computed some other way.",
            )
        else:
            r.add("launches", PASS)
            for k, v in own.items():
                r.kernels[k] = max(r.kernels.get(k, 0), v)
        ops = {k: v for k, v in obs["compute_ops"].items() if not self._allowed(k)}
        if ops:
            flag = ",".join(sorted(ops))
            r.add(
                "torch_ops",
                FAIL,
                f"forward ran PyTorch compute ops {where}: {_fmt_ops(ops)}; the "
                f"work must be done by the candidate's Triton kernels. Only if a kernel that "
                f"leaves these ops to PyTorch is what you want (a matmul left to cuBLAS, say) "
                f"does --allow-torch {flag} allow them.{_unknown_ops(self.options.allow_torch)}",
            )
        else:
            r.add("torch_ops", PASS)
        if obs["host_ops"]:
            r.add(
                "host_compute",
                FAIL,
                f"forward copied device data to the host {where} ({_fmt_ops(obs['host_ops'])}).",
            )
        if obs["aliased"]:
            r.add(
                "aliasing",
                FAIL,
                f"An output shares memory with an input {where}; forward must return new tensors.",
            )
        else:
            r.add("aliasing", PASS)
        if obs["mutated"]:
            which = ", ".join(str(i) for i in obs["mutated"])
            r.add("mutation", FAIL, f"forward changed input {which} in place {where}.")
        else:
            r.add("mutation", PASS)
        threads = obs["py_threads"] > 0 or (obs["native_threads"] > 0 and not first)
        if threads:
            r.add(
                "threads",
                FAIL,
                f"forward left new threads running {where}; work on a "
                "background thread escapes the checks and the timer.",
            )
        if obs["streams"]:
            r.add(
                "side_stream",
                FAIL,
                f"a kernel was launched on a stream other than the caller's "
                f"{where}; the timer would not see that work.",
            )

    def _compare(self, out: Any, want: Any, quick: bool = False) -> Comparison:
        """On the GPU being verified on, where there is one (hold the device lock shared)."""
        o = self.options
        device = "cuda" if self.device == "cuda" else None
        return compare(out, want, o.atol, o.rtol, quick, device=device)

    def _allowed(self, op: str) -> bool:
        allow = self.options.allow_torch
        return "all" in allow or any(
            op.startswith(a[:-1]) if a.endswith("*") else op == a for a in allow
        )

    def _runs(
        self,
        ref: Reference,
        plan: list[dict],
        runs: list[dict],
        r: Report,
        compared: dict[int, Comparison] | None = None,
    ) -> None:
        o = self.options
        worst_abs = worst_rel = 0.0
        detail = []
        first_out = None
        for i, (p, run) in enumerate(zip(plan, runs)):
            s = ref.sets[p["set"]]
            where = {
                "fresh": f"on input set '{s['label']}'",
                "judge-made": f"on input set '{s['label']}'",
                "late": "on repeated calls",
            }.get(p["kind"], f"on the {p['kind']} run")
            if "error" in run:
                hint = ""
                if r.interpreted and "active drivers" in run["error"]:
                    hint = (
                        " Multi-config @triton.autotune benchmarks its configs on a GPU, which "
                        "Triton's CPU interpreter cannot do: verify on a GPU, or keep one config."
                    )
                error = full_stop(str(run["error"]).rstrip())
                r.add("runs", FAIL, f"{where[0].upper()}{where[1:]}, forward raised {error}{hint}")
                r.errors.append(their_traceback(run.get("traceback", ""), r.candidate))
                return
            obs = run["obs"]
            self._observation(
                obs, where, r, first=i == 0, judge_made=_made_by_judge(s["label"])
            )
            out = run["outputs"]
            if out is None:
                continue
            c = compared.get(i) if compared is not None else None
            if c is None:
                c = self._compare(out, s["outputs"])
                if compared is not None:  # a second judging of the same runs reuses it
                    compared[i] = c
            worst_abs, worst_rel = max(worst_abs, c.max_abs), max(worst_rel, c.max_rel)
            detail.append(
                {
                    "set": s["label"],
                    "kind": p["kind"],
                    "ok": c.ok,
                    "max_abs_err": c.max_abs,
                    "max_rel_err": c.max_rel,
                }
            )
            if (
                p["kind"] == "refill"
                and not c.ok
                and self._compare(out, ref.sets[plan[0]["set"]]["outputs"]).ok
            ):
                r.add(
                    "stale_cache",
                    FAIL,
                    "After new values were written into the same input "
                    "buffers, forward returned the results for the old values (a cached result).",
                )
            elif (
                p["kind"] == "repeat"
                and first_out is not None
                and not self._compare(out, first_out).ok
            ):
                agree = self._compare(out, first_out)
                r.add(
                    "repeatability",
                    FAIL,
                    "Two runs on the same inputs gave different results "
                    f"({agree.message}); the kernel may read uninitialised or out-of-bounds memory.",
                )
            elif not c.ok and _made_by_judge(s["label"]):
                r.add(
                    "judge_inputs",
                    CONDITIONAL,
                    f"Right within tolerance on the inputs get_inputs() draws, but wrong {where}, "
                    f"which the judge made from them ({_variant_what(s['label'], s['inputs'])}): "
                    f"{c.message}. The kernel may rely on a range or pattern of inputs that "
                    "the task does not promise, or have an error that the tolerance hides at "
                    "the task's own magnitudes.",
                )
            elif not c.ok:
                r.add("correctness", FAIL, f"{c.message[0].upper()}{c.message[1:]} {where}.")
            if i == 0:
                first_out = out
        if any(c.name == "correctness" and c.status == FAIL for c in r.checks):
            # Already wrong on the task's own inputs: "right on them" would be false.
            judged = [c for c in r.checks if c.name == "judge_inputs" and c.status == CONDITIONAL]
            r.checks = [c for c in r.checks if c not in judged]
            if judged:
                n = len({d["set"] for d in detail if not d["ok"] and _made_by_judge(d["set"])})
                r.notes.append(f"also wrong on {n} input set{'s' if n != 1 else ''} the judge made")
                r.add("judge_inputs", SKIP, "not judged: already wrong on the task's own inputs")
        if len(runs) < len(plan):
            r.add("runs", FAIL, "the worker stopped before all runs finished.")
        r.add("runs", PASS)
        r.add("correctness", PASS)
        # A check whose runs were not reached (the plan stopped at a wrong answer) is
        # skipped, not passed: nothing was learnt about it.
        ran = {p["kind"] for p in plan[: len(runs)]}
        made = any(_made_by_judge(s["label"]) for s in ref.sets)
        for name, kind, needed in (
            ("judge_inputs", "judge-made", made),
            ("stale_cache", "refill", len(ref.own_shape) > 1),
            ("repeatability", "repeat", True),
        ):
            if kind in ran or not needed:
                r.add(name, PASS)
            else:
                r.add(name, SKIP, "not reached: the runs stopped at the first wrong answer")
        r.correctness = {
            "input_sets": len(ref.sets),
            "runs": len(detail),
            "atol": o.atol,
            "rtol": o.rtol,
            "max_abs_err": worst_abs,
            "max_rel_err": worst_rel,
            "seed": ref.seed,
            "detail": detail,
        }
        if detail and all(d["ok"] for d in detail):
            dtypes = {
                str(t.dtype)
                for t in (
                    list(ref.sets[0]["outputs"])
                    if isinstance(ref.sets[0]["outputs"], tuple | list)
                    else [ref.sets[0]["outputs"]]
                )
            }
            # On the task's own inputs only: judge-made sets (values far from zero) are
            # ill-conditioned for the reference too.
            own = [d for d in detail if not _made_by_judge(d["set"])] or detail
            own_rel = max(d["max_rel_err"] for d in own)
            own_abs = max(d["max_abs_err"] for d in own)
            if dtypes == {"torch.float32"} and own_rel > 1e-3 and own_abs > 1e-4:
                r.notes.append(
                    f"errors (max rel {own_rel:.2g} on the task's own inputs) are well above float32 rounding; "
                    "the kernel may compute in a lower precision (tf32/fp16)"
                )
