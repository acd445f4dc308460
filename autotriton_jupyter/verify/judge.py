"""The judge: runs the VERIFY.md protocol for candidates of a task and writes their Reports.

The judge itself never runs task or candidate code. The reference runs in one worker,
each candidate in another; inputs and outputs come back as plain data and are
compared here. The checks after a candidate's timing are in timed.py.

Length: the protocol for one candidate, step by step, with the reference it is judged
against; each step's checks sit beside the step.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..task import Candidate, Task, TaskError, arity, parse_source, signature
from . import fingerprint, refcache, static, wire
from .checks import Comparison, compare, null_control
from .options import VerifyOptions
from .report import CONDITIONAL, FAIL, INCONCLUSIVE, PASS, Report
from .sandbox import Pool, Worker, WorkerFailure
from .shapes import ShapeError, describe, parse_shapes
from .timed import REPLY_SLACK, TimedChecks, _check_kept, _check_prints, _fmt_ops, _number

EventSink = Callable[[str], None]

# The check a worker's reported error belongs to, by the step that was running.
STEP_CHECKS = {"load_candidate": "load", "add_sets": "runs", "run": "runs", "time_candidate": "timing"}
MAX_REFERENCES = 4  # reference workers kept alive (one per recent task)
RETRIES_WHEN_LOST = 2  # runs of a candidate whose worker died with the fork server
# The most tensor data one message carries. Input sets and outputs beyond it travel in
# several messages (one input set per message at worst), so a large task is judged in parts.
PART_BYTES = 1 << 30
# Input sets the judge makes from the task's own (VERIFY.md item 14): a candidate wrong only
# on these is `conditional`, not `pass`.
VARIANTS = ("signed", "scaled", "extreme", "zeros", "offset", "tiny")
# Both models built again with get_init_inputs()'s floats scaled (a negative slope, an
# epsilon, a scale): a kernel that hard-codes the one value the task builds with shows itself.
INIT_SET = "init-scaled"
INIT_SCALE = 1.5
# ... and with its integers one larger (a p, a count, a power hard-coded), where that keeps
# the reference's parameters and output shapes (an int that is a size or a dim does not).
INIT_INT_SET = "init-shifted"
INIT_SETS = (INIT_SET, INIT_INT_SET)
# Variants whose point is a non-finite input: kept even when the reference's output is not
# finite. None by default: NaN semantics of reductions differ between honest kernels and
# torch (tl.max drops NaN, torch.max keeps it), so NaN inputs would fail honest kernels.
NONFINITE_OK: tuple[str, ...] = ()


@dataclass
class Reference:
    """What the reference worker produced for a task, reused by all its candidates."""

    task: Task
    worker: Worker
    seed: int
    init_inputs: list[Any]
    state: dict[str, Any]
    sets: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    null: str | None = None
    timing: dict[str, Any] | None = None
    machine: dict[str, Any] = field(default_factory=dict)  # GPU and versions, from the worker
    # The sets at the task's own shapes: timing refills one buffer with each in turn.
    own_shape: list[int] = field(default_factory=list)
    timed: list[int] = field(default_factory=list)
    vary_mode: str | None = None  # how timing varies the timed sets (vary.MODES), once probed
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Input sets encoded once into sealed memory files, by (first, end) set index: every
    # candidate's worker is handed the same files, which none of them can change.
    sealed: dict[tuple[int, int], wire.Sealed] = field(default_factory=dict)
    # Its own lock: sealing happens while the GPU is held shared, and `lock` is held while
    # waiting for it exclusively (the reference's timing); one lock for both would deadlock.
    sealed_lock: threading.Lock = field(default_factory=threading.Lock)

    def input_sets(self, first: int, end: int) -> wire.Sealed:
        """The command that gives a worker input sets first..end-1 (encoded once)."""
        with self.sealed_lock:
            if (first, end) not in self.sealed:
                self.sealed[(first, end)] = wire.Sealed(
                    {"op": "add_sets", "sets": [s["inputs"] for s in self.sets[first:end]]}
                )
            return self.sealed[(first, end)]

    @property
    def out_nbytes(self) -> list[int]:
        outs = self.sets[0]["outputs"]
        leaves = list(outs) if isinstance(outs, tuple | list) else [outs]
        return [t.numel() * t.element_size() for t in leaves]


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


@contextlib.contextmanager
def _still_running(on_event: Callable[[str], None], what: str, limit: float) -> Iterator[None]:
    """Says every 10 s that a step is still running, and when it will be stopped."""
    done = threading.Event()
    t0 = time.monotonic()

    def tell() -> None:
        while not done.wait(10.0):
            on_event(
                f"{what}: still running after {time.monotonic() - t0:.0f} s (stopped after "
                f"{limit:g} s; --timeout or `timeout` under [verify] in the config changes that)"
            )

    thread = threading.Thread(target=tell, daemon=True, name="autotriton-still")
    thread.start()
    try:
        yield
    finally:
        done.set()


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


def _late_calls() -> int:
    """How many calls precede the last audited one: log-uniform in 48..600, unpredictable.

    A candidate that behaves while it is being counted (honest for its first N calls)
    cannot know N, and every one of these calls is audited. On a GPU the timing loop
    adds hundreds more, audited at random.
    """
    return int(48 * (12.5 ** (secrets.randbelow(1 << 20) / (1 << 20))))


def _start_cuda() -> None:
    """Create this process's CUDA context now rather than at the first comparison."""
    import torch

    with contextlib.suppress(Exception):  # a comparison would fall back to the CPU
        torch.empty(1, device="cuda")


def _release_cuda_cache() -> None:
    import torch

    with contextlib.suppress(Exception):
        torch.cuda.empty_cache()


def _seconds(x: Any) -> float:
    """A duration a worker reported (it may lie; figures only): 0 unless a finite number >= 0."""
    return _number(x) or 0.0


def _nbytes(tree: Any) -> int:
    """Bytes of tensor data in a tree of tensors, lists and tuples."""
    if isinstance(tree, list | tuple):
        return sum(_nbytes(x) for x in tree)
    n = getattr(tree, "numel", None)
    return n() * tree.element_size() if callable(n) else 0


def _shapes(tree: Any) -> Any:
    """Shapes and dtypes of the tensors in a tree; other values as they are."""
    if isinstance(tree, list | tuple):
        return [_shapes(x) for x in tree]
    if callable(getattr(tree, "numel", None)):
        return f"{tuple(tree.shape)}:{tree.dtype}"
    return repr(tree)


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


def _run_label(ref: Reference, p: dict) -> str:
    if p["kind"] == "late":
        return f"{p['extra_calls'] + 1} calls in a row"
    if p["kind"] in ("repeat", "refill"):
        return f"the {p['kind']} run"
    return f"input set {ref.sets[p['set']]['label']}"


def _made_by_judge(label: str) -> bool:
    """An input set the judge made (a variant, other shapes, other init arguments), not one
    get_inputs() drew for the model get_init_inputs() built."""
    return label in VARIANTS or label in INIT_SETS or label.startswith("shape-")


def varied_init(init: list[Any], kind: type) -> list[Any] | None:
    """get_init_inputs() with every non-zero float scaled by INIT_SCALE (kind float), or
    every int one larger (kind int), also inside lists and tuples; None when there is
    nothing of that kind to vary."""
    changed = False

    def one(x: Any) -> Any:
        nonlocal changed
        if kind is float and type(x) is float and x != 0.0 and math.isfinite(x):
            changed = True
            return x * INIT_SCALE
        if kind is int and type(x) is int:
            changed = True
            return x + 1
        if type(x) in (list, tuple):
            return type(x)(one(v) for v in x)
        return x

    out = [one(x) for x in init]
    return out if changed else None


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


class Verifier(TimedChecks):
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
        if self.device == "cuda":  # the judge compares outputs on the GPU: its CUDA start, meanwhile
            threading.Thread(target=_start_cuda, name="autotriton-judge-cuda", daemon=True).start()

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
        return v

    # lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill all workers (the reference ones too); a view() closes nothing."""
        if self._owns_pool:
            self.pool.close()

    # the reference ---------------------------------------------------------------------
    def prepare(self, task: Task) -> Reference:
        """Run the reference once for this task: parameters, fresh input sets, outputs."""
        o = self.options
        key = f"{task.key}:{o.seed}:{o.trials}:{';'.join(o.shapes)}"
        with self._refs_lock:
            ref = self._refs.pop(key, None)
            if ref is not None and not ref.worker.proc.is_alive():
                self.pool.release(ref.worker)  # lost with its fork server: run it again
                ref = None
            if ref is None:
                ref = self._prepare(task)
            self._refs[key] = ref  # most recent last
            while len(self._refs) > MAX_REFERENCES:
                oldest = next(iter(self._refs))
                self.pool.release(self._refs.pop(oldest).worker)
            return ref

    def _prepare(self, task: Task) -> Reference:
        o = self.options
        # The model seed and the input seeds are independent draws, so a candidate that reads
        # torch.initial_seed() (the model is built under it) cannot predict its inputs.
        draw = random.Random(o.seed) if o.seed is not None else secrets.SystemRandom()
        seed = draw.randrange(2**31)
        try:
            extra_shapes = parse_shapes(o.shapes)
        except ShapeError as e:
            raise TaskError(str(e)) from e
        input_seeds = [
            draw.randrange(2**31) for _ in range(max(1, o.trials) + len(VARIANTS) + len(extra_shapes))
        ]
        self.on_event(f"reference: starting a worker on {self.device}")
        self.pool.warm()
        w = self.pool.acquire()
        try:
            with self.pool.lock.shared():
                with _still_running(self.on_event, "reference: importing and building it", o.timeout):
                    loaded = w.call(
                        "load_reference", o.timeout, "The reference", source=task.source, seed=seed
                    )
                specs = [
                    {"label": f"fresh-{i + 1}", "seed": input_seeds[i], "variant": "none"}
                    for i in range(max(1, o.trials))
                ]
                specs += [
                    {"label": v, "seed": input_seeds[-1 - k], "variant": v}
                    for k, v in enumerate(VARIANTS)
                ]
                first = max(1, o.trials)
                for label, kind in ((INIT_SET, float), (INIT_INT_SET, int)):
                    varied = varied_init(loaded["init_inputs"], kind)
                    if varied is not None:
                        specs.append(
                            {"label": label, "seed": input_seeds[0], "variant": "none", "init": varied}
                        )
                specs += [
                    {
                        "label": f"shape-{k + 1} ({describe(shapes)})",
                        "seed": input_seeds[first + k],
                        "variant": "none",
                        "shapes": [list(sh) for sh in shapes],
                    }
                    for k, shapes in enumerate(extra_shapes)
                ]
                self.on_event(f"reference: computing outputs on {len(specs)} input sets")
                got = self._trials(w, specs)
        except WorkerFailure as f:
            self.pool.release(w)
            detail = (
                f" Its output ended with:\n{f.log.strip()[-800:]}"
                if f.kind == "crash" and f.log
                else ""
            )
            if f.message.startswith("Input set 'shape-"):
                raise TaskError(
                    f"--shapes does not fit {task.path or task.name}: {f.message}"
                ) from f
            raise TaskError(
                f"The reference {task.path or task.name} cannot be run: {f.message}{detail}"
            ) from f
        sets, notes = [], []
        worker_index = 0
        inits = {spec["label"]: spec["init"] for spec in specs if "init" in spec}
        for s in got["sets"]:
            if s["label"] in inits:
                s["init"] = inits[s["label"]]
                if "skipped" not in s and _shapes(s["outputs"]) != _shapes(got["sets"][0]["outputs"]):
                    s = {"label": s["label"], "skipped": "its outputs have other shapes"}
            if "skipped" in s:
                notes.append(
                    f"the reference cannot take the {s['label']} input variant "
                    f"({s['skipped']}), so it was left out"
                )
                continue
            s["worker_index"] = worker_index  # the reference worker keeps every set it ran
            worker_index += 1
            if (
                (s["label"] in VARIANTS or s["label"] in INIT_SETS)
                and s["label"] not in NONFINITE_OK
                and not s["finite"]
                and got["sets"][0]["finite"]
            ):
                notes.append(
                    f"the {s['label']} input variant makes the reference non-finite, so it "
                    "was left out"
                )
                continue
            sets.append(s)
        ref = Reference(task, w, seed, loaded["init_inputs"], loaded["state"], sets, notes)
        ref.machine = dict(loaded.get("machine") or {})
        ref.own_shape = [i for i, s in enumerate(sets) if not s["label"].startswith("shape-")]
        # Timing refills its buffers with sets drawn from get_inputs() only: outputs kept
        # while timing are judged as those sets are, never as judge-made ones.
        ref.timed = [i for i in ref.own_shape if sets[i]["label"].startswith("fresh-")] or ref.own_shape
        ref.null = null_control(sets, o.atol, o.rtol)
        return ref

    def _trials(self, w: Worker, specs: list[dict]) -> dict[str, Any]:
        """The reference's input sets and outputs, in parts when they are large.

        The first set's size (inputs and outputs) sets how many go in one message.
        """
        o = self.options
        got = w.call("trials", o.timeout, "The reference", sets=specs[:1])
        sets = got["sets"]
        each = max((_nbytes([s.get("inputs"), s.get("outputs")]) for s in sets), default=0)
        per = max(1, PART_BYTES // max(1, each))
        for k in range(1, len(specs), per):
            if len(specs) > 1 + per:
                self.on_event(f"reference: input sets {k + 1}-{min(k + per, len(specs))} of {len(specs)}")
            sets += w.call("trials", o.timeout, "The reference", sets=specs[k : k + per])["sets"]
        return {"sets": sets}

    def _reference_timing(self, ref: Reference) -> dict[str, Any]:
        """Eager and torch.compile timings of the reference: once per reference, and kept
        on disk between runs (refcache.py) unless options.reference_cache is off."""
        with ref.lock:
            if ref.timing is None:
                o = self.options
                k = refcache.key(
                    source=ref.task.source,
                    inputs=[_shapes(ref.sets[i]["inputs"]) for i in ref.timed],
                    machine=ref.machine,
                    device=self.device,
                    budget=o.timing_budget_s,
                    vary=ref.vary_mode,
                    version=3,  # 2: with the back-to-back figures; 3: inputs varied per call
                )
                cache = refcache.ReferenceTimings() if o.reference_cache else None
                ref.timing = cache.get(k) if cache else None
                if ref.timing is not None:
                    self.on_event("reference: eager and torch.compile timings from the cache")
                    return ref.timing
                self.on_event("reference: timing eager PyTorch and torch.compile")
                with self.pool.lock.exclusive():
                    ref.timing = ref.worker.call(
                        "time_reference",
                        max(o.timeout, 300.0),
                        "Timing the reference",
                        sets=[ref.sets[i]["worker_index"] for i in ref.timed],
                        seed=ref.seed,
                        budget_s=o.timing_budget_s,
                        vary_mode=ref.vary_mode or "elements",
                    )
                if cache is not None and ref.machine:
                    cache.put(k, ref.timing)
            return ref.timing

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
        """
        for attempt in range(RETRIES_WHEN_LOST + 1):
            report = self._verify_once(task, candidate, before_timing)
            if not any(c.name == "lost" for c in report.failed()) or attempt == RETRIES_WHEN_LOST:
                return report
            self.on_event(f"{report.candidate}: its worker was lost with the fork server; again")
        return report

    def _verify_once(
        self, task: Task, candidate: Candidate, before_timing: Callable[[Report], bool] | None
    ) -> Report:
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
            ref = self.prepare(task)  # a reference that cannot run is the caller's error
            r.seconds["reference"] = time.perf_counter() - t_ref
            self._signature(task, candidate, r)
        if r.failed():
            r.seconds["total"] = time.perf_counter() - t0
            return r.finish(o.strict)
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
        self.on_event(
            f"{r.candidate}: running in a {'sandboxed' if self.pool.sandboxed else 'separate (unsandboxed)'} worker"
        )
        w0 = time.perf_counter()
        w = None

        def release() -> None:  # as soon as the worker is no longer needed (its GPU memory)
            nonlocal w
            if w is not None:
                self.pool.release(w)
                w = None

        try:
            w = self.pool.acquire()
            r.seconds["worker_wait"] = time.perf_counter() - w0
            r.seconds["worker_init"] = float((w.ready or {}).get("init_s", 0.0))
            self._judge(ref, candidate, w, r, before_timing, release)
        except WorkerFailure as f:
            name = STEP_CHECKS.get(f.op, f.op or "runs") if f.kind == "error" else f.kind
            r.add(name, FAIL, f.message)
            if f.log.strip():
                r.errors.append(f.log)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as e:
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
            return list(ex.map(one, range(len(cands))))

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
        release: Callable[[], None] = lambda: None,
    ) -> None:
        o = self.options
        seed = ref.seed
        step = time.perf_counter()

        def took(name: str) -> None:
            nonlocal step
            now = time.perf_counter()
            r.seconds[name] = now - step
            step = now

        with self.pool.lock.shared():
            took("gpu_wait")
            out_bytes = sum(ref.out_nbytes)
            loaded = w.call(
                "load_candidate",
                o.timeout,
                "Loading the candidate",
                max_reply=REPLY_SLACK,
                source=candidate.source,
                init_inputs=ref.init_inputs,
                init_variants=[s["init"] for s in ref.sets if "init" in s],
                state=ref.state,
                seed=seed,
                out_nbytes=ref.out_nbytes,
                tolerance=(o.atol, o.rtol),
            )
            r.add("load", PASS)
            took("load")
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
            n = len(ref.sets)
            plan = [
                {
                    "set": i,
                    "slot": i,
                    "kind": "judge-made" if _made_by_judge(s["label"]) else "fresh",
                    **({"model": 1 + [x["label"] for x in ref.sets if "init" in x].index(s["label"])}
                       if "init" in s else {}),
                }
                for i, s in enumerate(ref.sets)
            ]
            plan.append({"set": 0, "slot": 0, "kind": "repeat"})
            if len(ref.own_shape) > 1:  # new values into slot 0's buffers: same shapes
                plan.append({"set": ref.own_shape[1], "slot": 0, "kind": "refill"})
            fresh = [i for i, s in enumerate(ref.sets) if s["label"].startswith("fresh-")]
            late = fresh[-1] if fresh else n - 1
            plan.append(
                {"set": late, "slot": late, "kind": "late", "extra_calls": _late_calls()}
            )
            ran = self._run_plan(ref, w, plan, r)
            took("runs")
            self._tampering(loaded["tampered"] + ran["tampered"], r)
            if (
                len(ran["runs"]) < len(plan)
                and not ran["stopped"]
                and not any("error" in x for x in ran["runs"])
            ):
                r.add("runs", FAIL, "The worker returned fewer runs than it was asked for.")
                return
            # Under the shared lock: the comparison runs on the GPU where there is one.
            self._runs(
                ref, plan[: len(ran["runs"])] if ran["stopped"] else plan, ran["runs"], r, ran["compared"]
            )
            took("compare")
        if ran["stopped"]:
            r.notes.append("the repeated calls were skipped: the output was already wrong")
        if r.blocking() or not o.timing:
            if not o.timing:
                r.notes.append("timing was switched off (--no-timing)")
            return
        if self.device != "cuda":
            return
        if before_timing is not None and not before_timing(r):
            r.notes.append("timing was skipped: the run was interrupted")
            return
        step = time.perf_counter()
        mode = self._vary_mode(ref)
        rt = self._reference_timing(ref)
        took("reference_timing")
        keep = max(1, min(3, PART_BYTES // max(1, out_bytes) - 2))  # outputs kept while timed
        self.on_event(f"{r.candidate}: timing (the GPU is held exclusively)")
        vary_seed = secrets.randbits(62)  # the timed calls' inputs: unknown to the candidate
        projection_seed = secrets.randbits(62)  # the weights of every timed output's projection
        with self.pool.lock.exclusive():
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
            release()  # its reply holds everything: its memory is the reference's now
            _check_kept(timed["kept"], keep + 1)
            prints = _check_prints(timed["timing"], len(ref.timed))
            if any(k["call"] not in prints for k in timed["kept"]):
                raise ValueError("a kept timed call is not one of the timed calls")
            # Which timed calls are checked is drawn now, after they all ran.
            checks = secrets.SystemRandom().sample(sorted(prints), min(fingerprint.CHECKED, len(prints)))
            # Still holding the GPU: the next candidate's timing would otherwise make this
            # wait its whole turn. (ref.lock inside the exclusive lock cannot deadlock here:
            # the reference's timing and vary mode, the only steps that hold ref.lock while
            # they wait for the GPU, were settled before this candidate's timing began.)
            wants = self._varied_reference(
                ref, timed["kept"], vary_seed, out_bytes, [prints[c] for c in checks],
                projection_seed, gpu_held=True,
            )
        took("timing_reference")
        with self.pool.lock.shared():
            self._timing(ref, rt, timed, wants, r, checks)
        took("timing_compare")

    def _run_plan(self, ref: Reference, w: Worker, plan: list[dict], r: Report) -> dict[str, Any]:
        """Run the plan in the candidate's worker, in parts when inputs and outputs are large.

        Input sets are sent with the first part that uses them; a part that ends in an
        error ends the run. Where the time went goes into r.seconds ("runs_*").
        """
        o, name = self.options, r.candidate
        spent = {"runs_add_sets": 0.0, "runs_in_worker": 0.0, "runs_messages": 0.0, "runs_compare": 0.0}
        cost = [
            _nbytes(ref.sets[p["set"]]["outputs"]) + _nbytes(ref.sets[p["set"]]["inputs"])
            for p in plan
        ]
        runs: list[dict] = []
        tampered: list[str] = []
        sent = 0
        # On the CPU (the interpreter: seconds a call) one run per message, so progress shows.
        # The late calls go last, on their own: a candidate already wrong on an input set
        # the task draws has its verdict, and is not kept for hundreds of calls more.
        parts = _parts(cost[:-1], PART_BYTES if self.device == "cuda" else 0) + [[len(plan) - 1]]
        stopped = False
        compared: dict[int, Comparison] = {}  # fresh runs, compared once, as their part returns
        checked = 0
        for k, part in enumerate(parts):
            t0 = time.perf_counter()
            for i in range(checked, len(runs)):
                if plan[i]["kind"] == "fresh" and "outputs" in runs[i]:
                    want = ref.sets[plan[i]["set"]]["outputs"]
                    compared[i] = self._compare(runs[i]["outputs"], want)
            checked = len(runs)
            spent["runs_compare"] += time.perf_counter() - t0
            if k and any(not c.ok for c in compared.values()):
                stopped = True
                break
            if len(parts) > 1:
                what = ", ".join(_run_label(ref, plan[i]) for i in part)
                self.on_event(f"{name}: {what} ({k + 1}/{len(parts)})")
            upto = max(plan[i]["set"] for i in part) + 1
            t0 = time.perf_counter()
            if upto > sent:
                try:
                    sets = ref.input_sets(sent, upto)
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
            if not runs and got["runs"] and isinstance(got["runs"][0].get("obs"), dict):
                spent["runs_first_call"] = _seconds(got["runs"][0]["obs"].get("seconds"))
            sent = max(sent, upto)
            runs += got["runs"]
            tampered += got["tampered"]
            if len(got["runs"]) < len(part) or any("error" in x for x in got["runs"]):
                break
        r.seconds.update(spent)
        return {"runs": runs, "tampered": tampered, "stopped": stopped, "compared": compared}

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
                f"work must be done by the candidate's Triton kernels (to accept this, pass "
                f"--allow-torch {flag}).",
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
                r.add("runs", FAIL, f"forward raised {run['error']} {where}.{hint}")
                r.errors.append(run.get("traceback", ""))
                return
            obs = run["obs"]
            self._observation(
                obs, where, r, first=i == 0, judge_made=_made_by_judge(s["label"])
            )
            out = run["outputs"]
            if out is None:
                continue
            c = (compared or {}).get(i) or self._compare(out, s["outputs"])
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
                r.notes.append(f"also wrong on {len(judged)} input sets the judge made")
        if len(runs) < len(plan):
            r.add("runs", FAIL, "the worker stopped before all runs finished.")
        r.add("runs", PASS)
        r.add("correctness", PASS)
        r.add("judge_inputs", PASS)
        r.add("stale_cache", PASS)
        r.add("repeatability", PASS)
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
