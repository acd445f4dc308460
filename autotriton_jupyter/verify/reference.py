"""The reference a task's candidates are judged against (a part of Verifier).

The reference runs once per task in a worker of its own: its parameters, the fresh input
sets drawn from get_inputs(), the sets the judge makes from them (VERIFY.md item 14), its
outputs on all of them, and its eager and torch.compile timings. The judge keeps the
MAX_REFERENCES most recent references, so a cell run again does not pay for it twice.
"""

from __future__ import annotations

import contextlib
import math
import random
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..task import Task, TaskError
from . import refcache, vary, wire
from .checks import null_control
from .report import full_stop
from .sandbox import Worker, WorkerFailure
from .shapes import ShapeError, describe, parse_shapes

if TYPE_CHECKING:
    from .options import VerifyOptions
    from .sandbox import Pool

MAX_REFERENCES = 4  # reference workers kept alive (one per recent task)
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
    # get_init_inputs() as the judge varied it (INIT_SETS), for the init sets kept: a
    # candidate builds a model for each, and an init set runs on model 1 + its index here.
    init_variants: list[list[Any]] = field(default_factory=list)
    null: str | None = None
    timing: dict[str, Any] | None = None
    machine: dict[str, Any] = field(default_factory=dict)  # GPU and versions, from the worker
    # The sets at the task's own shapes: timing refills one buffer with each in turn.
    own_shape: list[int] = field(default_factory=list)
    timed: list[int] = field(default_factory=list)
    vary_mode: str | None = None  # how timing varies the timed sets (vary.MODES), once probed
    # Candidates being judged against it: one dropped from the kept references meanwhile
    # (`retired`) keeps its worker until the last of them is done (released by `drop`).
    users: int = 0
    retired: bool = False
    timing_failure: str | None = None  # why it cannot be timed (then no candidate gets figures)
    # Its torch.compile is to be built before its timing (_compile_ahead), and how long that took.
    compile_wanted: bool = False
    compile_ahead_s: float | None = None
    build: threading.Thread | None = None  # the thread that asked for it
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Input sets encoded once into sealed memory files, by (first, end) set index: every
    # candidate's worker is handed the same files, which none of them can change.
    sealed: dict[tuple[int, int], wire.Sealed] = field(default_factory=dict)
    # Its own lock: sealing happens while the GPU is held shared, and `lock` is held while
    # waiting for it exclusively (the reference's timing); one lock for both would deadlock.
    sealed_lock: threading.Lock = field(default_factory=threading.Lock)
    # One lock a range while it is encoded: a range already made is never waited for.
    sealing: dict[tuple[int, int], threading.Lock] = field(default_factory=dict)
    # Where its preparation's time went (worker, load, draw, forward, messages), and when it ended
    # (time.perf_counter): a report that waited for it shows the breakdown.
    prep_seconds: dict[str, float] = field(default_factory=dict)
    prepared_at: float = 0.0

    def input_sets(self, first: int, end: int) -> wire.Sealed:
        """The command that gives a worker input sets first..end-1 (encoded once)."""
        key = (first, end)
        with self.sealed_lock:
            if key in self.sealed:
                return self.sealed[key]
            making = self.sealing.setdefault(key, threading.Lock())
        with making:
            with self.sealed_lock:
                if key in self.sealed:  # made by whoever held `making` before
                    return self.sealed[key]
            made = wire.Sealed({"op": "add_sets", "sets": [s["inputs"] for s in self.sets[first:end]]})
            with self.sealed_lock:
                self.sealed[key] = made
            return made

    @property
    def out_nbytes(self) -> list[int]:
        outs = self.sets[0]["outputs"]
        leaves = list(outs) if isinstance(outs, tuple | list) else [outs]
        return [t.numel() * t.element_size() for t in leaves]


@contextlib.contextmanager
def _still_running(
    on_event: Callable[[str], None], what: str, limit: float, every: float = 10.0
) -> Iterator[None]:
    """Says every `every` seconds that a step is still running, and when it will be stopped."""
    done = threading.Event()
    t0 = time.monotonic()

    def tell() -> None:
        while not done.wait(every):
            on_event(
                f"{what}: still running after {time.monotonic() - t0:.0f} s (it will be stopped "
                f"at {limit:g} s; --timeout or `timeout` under [verify] in the config changes that)"
            )

    thread = threading.Thread(target=tell, daemon=True, name="autotriton-still")
    thread.start()
    try:
        yield
    finally:
        done.set()


def _seconds(spent: dict[str, Any]) -> dict[str, float]:
    """A worker's reported seconds: finite numbers of at least 0 only (it is the reference's
    worker, but its reply is read as any worker's)."""
    return {
        k: float(v)
        for k, v in spent.items()
        if k in ("draw", "draw_task", "forward") and type(v) in (int, float) and 0 <= v < float("inf")
    }


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



def _out_of_memory(message: str) -> bool:
    text = message.lower()
    return "out of memory" in text or "outofmemoryerror" in text


def _resources(message: str) -> bool:
    """An error that memory someone else held can cause (the GPU's, the host's, a
    library's workspace), not one of the reference's own."""
    text = message.lower()
    return _out_of_memory(text) or "alloc" in text or "cudnn" in text or "cublas" in text


def _left_out(s: dict[str, Any], spec: dict[str, Any], first: dict[str, Any]) -> str | None:
    """Why an input set the reference ran is left out (a note), or None when it is kept;
    `first` is fresh-1's result."""
    label = s["label"]
    if "skipped" not in s and "init" in spec and _shapes(s["outputs"]) != _shapes(first["outputs"]):
        s = {"label": label, "skipped": "its outputs have other shapes"}
    if "skipped" in s and label in INIT_SETS:
        # Most often not the reference's fault: an int argument that is a size.
        why = s["skipped"]
        how = "integers one larger" if label == INIT_INT_SET else f"floats times {INIT_SCALE}"
        sizes = label == INIT_INT_SET and not why.startswith("building") and not _resources(why)
        return (
            f"the {label} variant (both models built again with get_init_inputs()'s {how}) was "
            f"left out: {why}{' (as when those integers are sizes)' if sizes else ''}"
        )
    if "skipped" in s:
        return f"the reference cannot take the {label} input variant ({s['skipped']}), so it was left out"
    if (
        (label in VARIANTS or label in INIT_SETS)
        and label not in NONFINITE_OK
        and not s["finite"]
        and first["finite"]
    ):
        return f"the {label} input variant makes the reference non-finite, so it was left out"
    return None


def _on(specs: list[dict]) -> str:
    """Where among these input sets a failure came, for its message: "on input set
    'fresh-1'", or "somewhere in input sets 'fresh-2' to 'zeros'" (run in one message)."""
    if len(specs) == 1:
        return f"on input set '{specs[0]['label']}'"
    return f"somewhere in input sets '{specs[0]['label']}' to '{specs[-1]['label']}'"


class ReferencePrep:
    """Verifier's reference steps: prepare a task's reference (kept per task) and time it."""

    options: VerifyOptions
    device: str
    pool: Pool
    on_event: Callable[[str], None]
    _refs: dict[str, Reference]
    _refs_lock: threading.Lock

    def _seal_ahead(self, ref: Reference) -> None:
        """Encode the input sets' messages ahead of the first candidate (judge.py does)."""

    def prepare(
        self, task: Task, hold: bool = False, first_set: Callable[[Reference], bool] | None = None
    ) -> Reference:
        """Run the reference once for this task: parameters, fresh input sets, outputs.

        hold=True: a candidate is judged against it until `drop(ref)`; its worker is not
        released meanwhile, even if other tasks push it out of the kept references (a
        reference lost that way would otherwise be charged to the candidate).

        first_set: called when this call runs the reference (not when it is kept) as soon as
        its first input set and its init sets have run, with the Reference as it is then: a
        candidate can start on that set while the reference draws the others (it returns
        whether one did). Its task,
        worker, seed, init_inputs, state, machine and init_variants are final then, and
        `sets` holds fresh-1 alone; nothing else of it may be read before prepare returns."""
        o = self.options
        key = f"{task.key}:{o.seed}:{o.trials}:{';'.join(o.shapes)}"
        with self._refs_lock:
            ref = self._refs.pop(key, None)
            if ref is not None and not ref.worker.proc.is_alive():
                if ref.users:
                    ref.retired = True  # its users fail on their own; the last one releases it
                else:
                    self.pool.release(ref.worker)  # lost with its fork server: run it again
                ref = None
            if ref is None:
                ref = self._prepare(task, first_set)
                self._seal_ahead(ref)
                ref.compile_wanted = self._compiles_ahead(ref)
            self._refs[key] = ref  # most recent last
            while len(self._refs) > MAX_REFERENCES:
                oldest = self._refs.pop(next(iter(self._refs)))
                if oldest.users:
                    oldest.retired = True
                else:
                    self.pool.release(oldest.worker)
            if hold:
                ref.users += 1
            return ref

    def drop(self, ref: Reference) -> None:
        """A candidate held by prepare(hold=True) is done with `ref`."""
        with self._refs_lock:
            ref.users -= 1
            if ref.retired and ref.users == 0:
                self.pool.release(ref.worker)

    def _prepare(self, task: Task, first_set: Callable[[Reference], bool] | None = None) -> Reference:
        o = self.options
        t_start = time.perf_counter()
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
        w = self.pool.acquire()  # a spare, or one started now; the spares are started behind it
        w.runs_kernels = False
        try:
            with self.pool.lock.shared():
                t_load = time.perf_counter()
                with _still_running(self.on_event, "reference: importing and building it", o.timeout):
                    loaded = w.call(
                        "load_reference", o.timeout, "it", source=task.source, seed=seed
                    )
                t_sets = time.perf_counter()
                ref = Reference(task, w, seed, loaded["init_inputs"], loaded["state"], [])
                ref.machine = dict(loaded.get("machine") or {})
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
                # Run first: fresh-1 and the init sets (which of them a candidate builds a
                # model for is known once they ran); ref.sets keeps the specs' order.
                inits = [i for i, spec in enumerate(specs) if "init" in spec]
                order = [0, *inits, *(i for i in range(1, len(specs)) if i not in inits)]
                beside: list[int] = []  # the sets run while a candidate ran beside them
                kept: list[int] = []  # the init sets kept: model 1 + its place here

                def ahead(done: list[dict[str, Any]]) -> None:
                    by_spec = dict(zip(order, done))
                    kept.extend(i for i in inits if _left_out(by_spec[i], specs[i], done[0]) is None)
                    ref.init_variants = [specs[i]["init"] for i in kept]
                    ref.sets = [done[0]]
                    if first_set is not None and first_set(ref):
                        beside.extend(order[len(done):])

                got = self._trials(w, [specs[i] for i in order], 1 + len(inits), ahead)
                t_done = time.perf_counter()
        except WorkerFailure as f:
            self.pool.release(w)
            detail = (
                f" Its output ended with:\n{f.log.strip()[-800:]}"
                if f.kind == "crash" and f.log
                else ""
            )
            if f.message.startswith(("Input set 'shape-", "on input set 'shape-")):
                raise TaskError(
                    f"--shapes does not fit {task.path or task.name}: {f.message}"
                ) from f
            message = f.placed()
            if f.kind == "crash" and f.where or f.kind == "error" and ", its forward raised " in message:
                message = full_stop(message) + (
                    " Every call of the task's Model must work on inputs like get_inputs()'s "
                    "(the judge also varies them: README, judge_inputs); run it a few times in "
                    "plain PyTorch to see the failure."
                )
            raise TaskError(
                f"The reference {task.path or task.name} cannot be run: {message}{detail}"
            ) from f
        by_spec = dict(zip(order, got["sets"]))
        worker_index = 0
        for i in order:  # the reference worker keeps every set it ran, in the order it ran them
            if "skipped" not in by_spec[i]:
                by_spec[i]["worker_index"] = worker_index
                worker_index += 1
        sets, notes = [], []
        for i, spec in enumerate(specs):
            s = by_spec[i]
            why = _left_out(s, spec, by_spec[0])
            if why is not None and i in beside and _resources(s.get("skipped", "")):
                # Beside a candidate, which may have taken the memory it needed: not a set
                # the reference cannot take. Run again alone (the judge does).
                self.pool.release(w)
                raise TaskError(
                    f"The reference {task.path or task.name} could not make its {s['label']} "
                    f"input set beside a candidate: {s['skipped']}"
                ) from WorkerFailure("memory", s["skipped"], op="trials")
            if why is not None:
                notes.append(why)
                continue
            if "init" in spec:
                s["init"] = spec["init"]
                s["model"] = 1 + kept.index(i)
            sets.append(s)
        ref.sets, ref.notes = sets, notes
        spent = got.get("seconds", {})
        ref.prep_seconds = {
            # a worker from the pool (started, if none was ready), and the GPU's shared lock
            "worker": t_load - t_start,
            "load": t_sets - t_load,
            "draw": spent.get("draw", 0.0),
            # of which the task's get_inputs() (the rest: the judge's variants, the device)
            "draw_task": spent.get("draw_task", 0.0),
            "forward": spent.get("forward", 0.0),
            # the rest of the sets' time: sending them and their outputs, reading them here
            "messages": max(0.0, t_done - t_sets - spent.get("draw", 0.0) - spent.get("forward", 0.0)),
        }
        ref.prepared_at = time.perf_counter()
        ref.own_shape = [i for i, s in enumerate(sets) if not s["label"].startswith("shape-")]
        # Timing refills its buffers with sets drawn from get_inputs() only: outputs kept
        # while timing are judged as those sets are, never as judge-made ones.
        ref.timed = [i for i in ref.own_shape if sets[i]["label"].startswith("fresh-")] or ref.own_shape
        ref.null = null_control(sets, o.atol, o.rtol)
        return ref

    def _trials(
        self, w: Worker, specs: list[dict], ahead: int, then: Callable[[list[dict[str, Any]]], None]
    ) -> dict[str, Any]:
        """The reference's input sets and outputs, in parts when they are large; `then` is
        given the first `ahead` of them as soon as they are there.

        The first set's size (inputs and outputs) sets how many go in one message.
        """
        o = self.options

        def run(part: list[dict]) -> dict[str, Any]:
            try:
                return w.call("trials", o.timeout, "it", sets=part)
            except WorkerFailure as f:
                if f.kind != "error":  # its own errors name their set
                    f.where = _on(part)
                raise

        got = run(specs[:1])
        sets = got["sets"]
        spent = dict(got.get("seconds") or {})
        each = max((_nbytes([s.get("inputs"), s.get("outputs")]) for s in sets), default=0)
        per = max(1, PART_BYTES // max(1, each))
        starts = [*range(1, ahead, per), *range(ahead, len(specs), per)]
        for k in starts:
            if k == ahead:
                then(sets)
            end = min(k + per, ahead if k < ahead else len(specs))
            if len(specs) > 1 + per:
                self.on_event(f"reference: input sets {k + 1}-{end} of {len(specs)}")
            part = run(specs[k:end])
            sets += part["sets"]
            for key, v in (part.get("seconds") or {}).items():
                spent[key] = spent.get(key, 0.0) + v
        if ahead >= len(specs):
            then(sets)
        return {"sets": sets, "seconds": _seconds(spent)}

    def _timing_key(self, ref: Reference, vary_mode: str | None) -> str:
        """The reference's timings' key in refcache (its inputs' shapes, machine, budget)."""
        return refcache.key(
            source=ref.task.source,
            inputs=[_shapes(ref.sets[i]["inputs"]) for i in ref.timed],
            machine=ref.machine,
            device=self.device,
            budget=self.options.timing_budget_s,
            vary=vary_mode,
            version=5,  # 2: back-to-back figures; 3: inputs varied per call; 4: outputs projected; 5: rows within a budget
        )

    def _compiles_ahead(self, ref: Reference) -> bool:
        """Whether the reference's torch.compile is built ahead of its timing: on a GPU
        with timing on, unless its timings are on disk already (whichever way its inputs
        will be varied: that is probed later)."""
        o = self.options
        if self.device != "cuda" or not o.timing or not ref.timed:
            return False
        if not (o.reference_cache and ref.machine):
            return True
        return not refcache.ReferenceTimings().has_any([self._timing_key(ref, m) for m in vary.MODES])

    def _compile_ahead(self, ref: Reference) -> None:
        """Have the reference's worker build its torch.compile now, on a thread, while the
        candidates are checked: its timing, under the GPU's exclusive hold, then finds
        most of that work done (the compile took 2-3 s there; worker.op_compile_reference
        says what is made again). Called once a candidate was right on a fresh input set
        (one wrong at once, as a failing one-shot verify's, costs nothing here), by a
        verifier that times on a GPU; started once, and only while nothing holds ref.lock.

        The thread holds ref.lock from here until the worker is done, so the vary probe
        and the reference's timing (which take it) wait for it, and no candidate's timing
        runs beside it. It holds the GPU shared while the worker works, as the candidates'
        checks do. A build that fails is no failure: the timing compiles it again, and
        reports what goes wrong there. One whose worker is lost (out of time, crashed)
        leaves no figures to make: its reference's candidates are told why."""
        if not (self.options.timing and self.device == "cuda"):
            return
        if not ref.compile_wanted or not ref.lock.acquire(blocking=False):
            return  # not wanted, started, or being timed (which compiles it) right now
        if not ref.compile_wanted or ref.timing is not None:
            ref.lock.release()
            return
        ref.compile_wanted = False

        def build() -> None:
            try:
                with self.pool.lock.shared():
                    got = ref.worker.call(
                        "compile_reference",
                        max(self.options.timeout, 300.0),
                        "Building the reference's torch.compile",
                        sets=[ref.sets[i]["worker_index"] for i in ref.timed],
                    )
                if not got.get("error"):
                    ref.compile_ahead_s = got.get("seconds")
            except WorkerFailure as f:
                if f.kind != "error":  # its worker is gone: nothing can time it now
                    ref.timing_failure = (
                        f"the reference's torch.compile could not be built ({f.kind}: {f.message[:200]})"
                    )
            except Exception:  # (the pool closed meanwhile, say): the timing finds out
                pass
            finally:
                ref.lock.release()

        ref.build = threading.Thread(target=build, name="autotriton-compile-ahead", daemon=True)
        try:
            ref.build.start()
        except BaseException:
            ref.build = None
            ref.lock.release()
            raise

    def _await_builds(self, timeout: float) -> None:
        """Wait (at most `timeout` seconds each) for the builds ahead that are still going:
        before a verify_many returns (its caller's next GPU work has the GPU to itself) and
        once the pool is closed (their workers gone, they end at once)."""
        with self._refs_lock:
            builds = [ref.build for ref in self._refs.values() if ref.build is not None]
        for t in builds:
            t.join(timeout)

    def _reference_timing(self, ref: Reference) -> dict[str, Any]:
        """Eager and torch.compile timings of the reference: once per reference, and kept
        on disk between runs (refcache.py) unless options.reference_cache is off.

        A reference that raises on the varied timed inputs (a draw its probe did not meet)
        is timed again with the next weaker variation (vary.MODES), which the candidates'
        timing then uses and their notes name: no candidate is failed for it."""
        with ref.lock:
            while ref.timing is None:
                o = self.options
                k = self._timing_key(ref, ref.vary_mode)
                cache = refcache.ReferenceTimings() if o.reference_cache else None
                ref.timing = cache.get(k) if cache else None
                if ref.timing is not None:
                    self.on_event("reference: eager and torch.compile timings from the cache")
                    return ref.timing
                self.on_event("reference: timing eager PyTorch and torch.compile")
                try:
                    with self.pool.lock.exclusive():
                        self.pool.settle()  # as for a candidate's timing (judge.py)
                        ref.timing = ref.worker.call(
                            "time_reference",
                            max(o.timeout, 300.0),
                            "Timing the reference",
                            sets=[ref.sets[i]["worker_index"] for i in ref.timed],
                            seed=ref.seed,
                            budget_s=o.timing_budget_s,
                            vary_mode=ref.vary_mode or "elements",
                        )
                except WorkerFailure as f:
                    mode = ref.vary_mode or "elements"
                    # Only the reference's own error on the varied inputs steps down: not a
                    # crash, a timeout, or memory that a candidate's worker may be holding
                    # (a candidate must not be able to weaken the variation for the others).
                    if f.kind != "error" or mode == "none" or _out_of_memory(f.message):
                        raise
                    ref.vary_mode = vary.weaker(mode)
                    self.on_event(
                        f"reference: it failed on inputs varied by {mode} ({f.message[:120]}); "
                        f"timing again with the inputs varied by {ref.vary_mode}"
                    )
                    continue
                if cache is not None and ref.machine:
                    cache.put(k, ref.timing)
            return ref.timing

