"""The code that runs inside an isolated worker process.

A worker is forked from a warm server that has already imported torch and triton,
initialises its device, says it is ready, then obeys one command at a time from the
judge. It is used for one role (the reference, or one candidate) and then killed,
so nothing a candidate did can reach the next one. Everything it sends back goes
through `wire` (no pickle), and the judge compares outputs itself.

Length: the worker's whole command set (reference, candidate, timing), next to the
checks each command needs; the fork server preloads this one module.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import torch
import triton  # noqa: F401  (imported here so the fork server preloads it)

from . import checks, fingerprint, probes, timing, vary, wire
from .shapes import ShapeError, reshape_inputs

CANDIDATE_MODULE = "autotriton_candidate"
_LATE_MIN = 48  # late calls made whatever the time they take (up to 4 budgets)
_SPARE_BYTES = 64 << 20  # a reply this large has its memory file allocated while it is made
REFERENCE_MODULE = "autotriton_reference"


class WorkerError(Exception):
    """A failure to report to the judge with a plain message."""


class DeviceLost(WorkerError):
    """The task's own code broke this worker's device (a device-side assert): no set can
    be drawn or run after it, whichever set it was."""


def _describe(e: BaseException) -> str:
    try:
        text = str(e)
    except Exception:  # a candidate's exception may not even print
        text = "<unprintable>"
    text = text.strip().splitlines()[0] if text.strip() else ""
    return f"{type(e).__name__}: {text[:400]}" if text else type(e).__name__


def _alone(e: BaseException) -> str:
    """For a module not found: that a file is judged alone (what it can import, and not)."""
    if type(e) is not ModuleNotFoundError:
        return ""
    return (
        ". A task or candidate is judged as one file, copied alone into the verifier's "
        "sandbox: a module beside it cannot be imported. Put what it needs into the file "
        "itself (installed packages, such as torch and triton, import as usual)."
    )


def _from_their_code(e: BaseException, path: str) -> str:
    """e's traceback from the first frame in the file at `path` on (the judge's frames
    before it are of no use to the candidate's author), or whole if none is there."""
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(e), e, tb or e.__traceback__))


class _OtherParameters(Exception):
    """An init variant's model whose parameters differ from the reference's in name or shape."""


def _import_file(path: Path, name: str, guard: bool = False) -> Any:
    """Import a file as module `name`; guard: with every method checking its own object
    (probes.guard_source), compiled from the file's syntax tree (its lines kept)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if not guard:
        spec.loader.exec_module(module)
        return module
    import ast

    tree = probes.guard_source(ast.parse(path.read_text(), str(path)))
    exec(compile(tree, str(path), "exec"), module.__dict__)
    return module


def _triton_steps(since: float) -> dict[str, float]:
    """When the first call's Triton work ended, in seconds after the call began, read off
    the files it left in this worker's own cache: the driver's helper module and the
    launchers (each built by the C compiler), the kernels' binaries. For the figures only."""
    marks: dict[str, float] = {}
    root = os.environ.get("TRITON_CACHE_DIR")
    if not root:
        return marks
    for folder, _, files in os.walk(root):
        for name in files:
            kind = (
                "driver" if name.startswith("cuda_utils")
                else "launcher" if name.startswith("__triton_launcher")
                else "kernel" if name.endswith(".cubin")
                else None
            )
            try:
                at = os.stat(os.path.join(folder, name)).st_mtime - since
            except OSError:
                continue
            if kind and at >= 0:
                marks[kind] = max(marks.get(kind, 0.0), at)
    return marks


def _tensors(tree: Any) -> list[torch.Tensor]:
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, tuple | list):
        return [t for x in tree for t in _tensors(x)]
    return []


def _copies(tree: Any) -> Any:
    """A copy of every tensor in a tree of lists and tuples (what a forward that may change
    its inputs in place is given, so the set kept here stays as it was drawn)."""
    if isinstance(tree, torch.Tensor):
        return tree.clone()
    if isinstance(tree, tuple | list):
        return type(tree)(_copies(x) for x in tree)
    return tree


def _to_device(tree: Any, device: str) -> Any:
    if isinstance(tree, torch.Tensor):
        return tree.to(device)
    if isinstance(tree, tuple | list):
        return type(tree)(_to_device(x, device) for x in tree)
    return tree


def _bool_variant(x: torch.Tensor, variant: str, gen: torch.Generator) -> torch.Tensor:
    """A boolean input for a judge-made set: random flips, or whole rows of one value."""
    x = x.clone(memory_format=torch.contiguous_format)
    if variant == "none":  # the task's own set (drawn wherever the worker drew it)
        return x
    if variant == "signed":
        return x ^ (torch.rand(x.shape, generator=gen, device=x.device) < 0.5)
    rows = x.reshape(-1, x.shape[-1]) if x.dim() else x.reshape(1, 1)
    pick = torch.rand(rows.shape[0], generator=gen, device=x.device)
    if variant in ("scaled", "zeros"):
        rows[pick < 0.25] = False
    if variant in ("extreme", "zeros"):
        rows[pick > 0.75] = True
    return x


def _lines(shape: torch.Size, r: int, device: torch.device | str = "cpu") -> torch.Tensor | None:
    """A mask holding whole lines along every dim of a tensor of at least two dims: the
    elements where all but at most one index is r modulo 8 (modulo the dim's size when it
    is smaller). A reduction over any dim then meets lines the mask covers end to end."""
    dims = [d for d, n in enumerate(shape) if n > 1]
    if len(dims) < 2:
        return None
    count = torch.zeros(shape, dtype=torch.int8, device=device)
    for d in dims:
        n = shape[d]
        hit = (torch.arange(n, device=device) % 8 == r % min(n, 8)).to(torch.int8)
        count += hit.view([n if k == d else 1 for k in range(len(shape))])
    return count >= len(dims) - 1


def _made(inputs: list[Any], variant: str, gen: torch.Generator, dev: torch.device) -> list[Any]:
    """The judge-made `variant` of a set of inputs (see WorkerState._draw), on `dev`."""
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            x = x.detach().to(dev)
            if variant == "signed":
                sign = torch.randint(0, 2, x.shape, generator=gen, device=dev).to(x.dtype) * 2 - 1
                x = x * sign
            elif variant == "scaled":
                x = x * 4.0 - x.mean() if x.numel() > 1 else x * 4.0
            elif variant == "extreme":
                x = (x * 64.0).clamp(torch.finfo(x.dtype).min, torch.finfo(x.dtype).max)
            elif variant == "offset" and x.numel():
                shift = 256.0 * max(float(x.abs().max()), 1e-3)
                x = (x.double() + shift).clamp(max=torch.finfo(x.dtype).max).to(x.dtype)
            elif variant == "tiny":
                x = x * 2.0**-10
        elif (
            isinstance(x, torch.Tensor)
            and variant == "signed"
            and x.dtype in (torch.int8, torch.int16, torch.int32, torch.int64)
        ):
            x = x.detach().to(dev)
            sign = torch.randint(0, 2, x.shape, generator=gen, device=dev).to(x.dtype) * 2 - 1
            x = x * sign
        elif (
            isinstance(x, torch.Tensor)
            and variant == "extreme"
            and x.dtype in (torch.int8, torch.uint8, torch.int16)
        ):
            # Small integers over their whole range: high bits, sums that overflow.
            info = torch.iinfo(x.dtype)
            x = torch.randint(
                info.min, info.max + 1, x.shape, generator=gen, dtype=torch.int64, device=dev
            ).to(x.dtype)
        elif isinstance(x, torch.Tensor) and variant == "extreme" and x.dtype == torch.int32:
            # Half the whole range: sums of a few overflow 32 bits (a narrow accumulator).
            x = torch.randint(
                -(2**30), 2**30, x.shape, generator=gen, dtype=torch.int64, device=dev
            ).to(x.dtype)
        elif isinstance(x, torch.Tensor) and variant == "extreme" and x.dtype == torch.int64:
            info = torch.iinfo(x.dtype)
            x = (x.detach().to(dev, torch.int64) * 4096).clamp(info.min, info.max).to(x.dtype)
        elif isinstance(x, float) and variant in ("scaled", "extreme"):
            x = x * (2.5 if variant == "scaled" else -3.0)  # scalars the kernel may hard-code
        if isinstance(x, torch.Tensor) and x.dtype == torch.bool and x.numel():
            x = _bool_variant(x.detach().to(dev), variant, gen)
        if variant == "zeros" and isinstance(x, torch.Tensor) and x.numel() and x.dtype != torch.bool:
            x = x.detach().to(dev).clone()
            if x.is_floating_point():
                x = (x * 2).round() / 2  # many equal values: ties for argmax, sort, max
            x[torch.rand(x.shape, generator=gen, device=dev) < 0.125] = 0  # exact zeros: guards, divisors
            lines = _lines(x.shape, 1, dev)
            if lines is not None:
                x[lines] = 0  # whole rows and columns of zeros, along every dim (a norm of 0)
        if variant == "signed" and isinstance(x, torch.Tensor) and x.is_floating_point():
            neg, same = _lines(x.shape, 3, dev), _lines(x.shape, 5, dev)
            if neg is not None and same is not None:
                x = x.clone()
                # Lines along every dim all negative (a max padded with 0, over any dim)
                x[neg] = -x[neg].abs() - 0.5
                # And all one value (a variance of 0, ties): a negative one, so that where
                # the two kinds of lines cross, the negative lines stay negative.
                x[same] = -x[same][:1].abs() - 0.5
        out.append(x)
    return out


def _graph_cache_hits() -> int:
    """How many compiled graphs Inductor has found in its cache so far in this process."""
    try:
        from torch._dynamo.utils import counters

        return int(counters["inductor"]["fxgraph_cache_hit"])
    except Exception:
        return 0


def _no_kept_autotuning() -> None:
    """Inductor keeps no autotuning choice on disk in this worker: a choice made while the
    GPU is shared (op_compile_reference) is never read back by the timing's compile."""
    import torch._inductor.config as inductor

    if hasattr(inductor, "autotune_local_cache"):
        inductor.autotune_local_cache = False


class WorkerState:
    """State of one worker: its device and whatever the commands built."""

    task_draw_s = 0.0  # seconds in the task's get_inputs() (op_trials' breakdown)
    set_bytes = 0  # the largest input set and its outputs the reference drew, in bytes

    def reply_bytes(self, msg: dict) -> int:
        """About how large this command's reply will be (0 when small or not known)."""
        out = sum(self.out_nbytes)
        op = msg.get("op")
        try:
            if op == "run":
                return out * len(msg["runs"])
            if op == "time_candidate":
                return out * (int(msg["keep"]) + 2)  # the kept calls, one back to back, the call after
            if op == "trials":
                return self.set_bytes * len(msg["sets"])
        except (KeyError, TypeError, ValueError):
            pass
        return 0

    def __init__(self, device: str, workdir: str, gpu_fraction: float) -> None:
        self.device = device
        self.workdir = Path(workdir)
        self.gpu_fraction = gpu_fraction
        self.model: Any = None
        self.models: list[Any] = []  # the candidate's: as get_init_inputs() builds it, and varied
        self.seed = 0
        self.tolerance: tuple[float, float] = (0.0, 0.0)  # the judge's atol, rtol
        self.given_state: frozenset[int] = frozenset()  # storages of ModelNew's parameters
        self.module: Any = None
        self.sets: list[list[Any]] = []
        self.slots: dict[int, list[Any]] = {}
        self.out_nbytes: list[int] = []
        self.probe: probes.LaunchProbe | None = None
        self.candidate_file = ""
        self.snapshot: dict[str, int] = {}
        self.methods: dict[str, int] = {}  # torch's classes' methods, before the candidate
        self.tensor_attrs: list[str] = []  # attributes a candidate set on tensors (removed)
        self.poison_turn = 0
        self.rng = random.Random(os.urandom(16))
        self.warming: threading.Thread | None = None  # warm_up's thread, until awaited
        self.warm_s: float | None = None  # how long Triton's warm-up took, when it did
        self._compile_s: float | None = None  # how long the reference's build ahead took
        self.observed = False  # no call of the candidate's yet

    def warm_up(self) -> None:
        """On a thread, while the worker waits for its first command: import torch._dynamo
        (unless the fork server did), and on a GPU make Triton's first launch ready
        (tritonwarm.py).

        A GPU pool's fork server imports torch._dynamo only after its first spare (the first
        reference's) is forked, so that worker, and any forked by a server that did not
        (the service's, one restarted), imports it here; it rebinds torch.manual_seed on
        import. A candidate's worker waits for this thread before the judge's snapshot of
        torch (so that import is never mistaken for tampering) and before any candidate
        code runs; the reference's before timing torch.compile (which compiles with Triton).
        """
        dynamo = "torch._dynamo" not in sys.modules
        gpu = self.device == "cuda"
        if not (dynamo or gpu):
            return

        def work() -> None:
            if dynamo:
                try:
                    importlib.import_module("torch._dynamo")
                except BaseException:  # raised again where it is needed (_await_warm_up)
                    pass
            if gpu:
                t0 = time.perf_counter()
                try:
                    from . import tritonwarm

                    tritonwarm.warm_up()
                    self.warm_s = time.perf_counter() - t0
                except Exception as e:  # the candidate's first launch pays for it, as before
                    print(f"autotriton: Triton's warm-up failed: {_describe(e)}", flush=True)

        thread = threading.Thread(target=work, name="autotriton-warm-up", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: the import happens when it is needed
            return
        self.warming = thread

    def _await_warm_up(self) -> None:
        if self.warming is not None:
            self.warming.join()
            self.warming = None
        importlib.import_module("torch._dynamo")  # if the thread's import failed: raise it here

    # start-up -----------------------------------------------------------------
    def init_device(self) -> None:
        if self.device == "cuda":
            torch.cuda.init()
            torch.empty(1, device="cuda")
            if 0 < self.gpu_fraction < 1:
                torch.cuda.set_per_process_memory_fraction(self.gpu_fraction)
        # Start torch's intra-op thread pool now, so thread counts around forward are stable.
        torch.ones(256, 256) @ torch.ones(256, 256)

    def _write_source(self, source: str, stem: str) -> Path:
        path = self.workdir / f"{stem}_{os.getpid()}.py"
        path.write_text(source)
        return path

    # reference ------------------------------------------------------------------
    def op_load_reference(self, msg: dict) -> dict:
        path = self._write_source(msg["source"], "reference")
        try:
            mod = _import_file(path, REFERENCE_MODULE)
        except BaseException as e:
            raise WorkerError(f"Importing the reference raised {_describe(e)}{_alone(e)}") from e
        self.module = mod
        for name in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(mod, name):
                raise WorkerError(f"The reference defines no {name}.")
        self.seed = msg["seed"]
        torch.manual_seed(msg["seed"])
        try:
            init = list(mod.get_init_inputs())
        except BaseException as e:
            raise WorkerError(f"get_init_inputs() raised {_describe(e)}") from e
        torch.manual_seed(msg["seed"])
        try:
            self.model = mod.Model(*init).to(self.device)
        except BaseException as e:
            raise WorkerError(f"Model(*get_init_inputs()) raised {_describe(e)}") from e
        state = {k: v.detach().cpu() for k, v in self.model.state_dict().items()}
        return {"init_inputs": init, "state": state, "machine": self._machine()}

    def _machine(self) -> dict[str, Any]:
        """What the reference's timings depend on besides the task (their cache key)."""
        about: dict[str, Any] = {"torch": torch.__version__, "triton": triton.__version__}
        if self.device == "cuda":
            p = torch.cuda.get_device_properties(torch.cuda.current_device())
            about.update(gpu=p.name, memory=p.total_memory, cuda=torch.version.cuda,
                         driver=torch.cuda.driver_version() if hasattr(torch.cuda, "driver_version") else None)
        return about

    def _draw(self, seed: int, variant: str, shapes: list | None = None) -> list[Any]:
        """The task's own inputs for a seed, or a variant the judge makes of them.

        - signed: every element's sign flipped at random (signed integers too), and lines
          along every dim of a float tensor all negative, others all one value;
        - scaled: x * 4 - mean, so values leave the range get_inputs() draws from;
        - extreme: magnitudes 64 times the task's, far past any range a kernel might
          have been fitted to (a dropped clamp, a softmax without its max pass);
        - zeros: an eighth of every tensor's elements set to exactly zero (a dropped guard
          on a divisor), and lines along every dim all zeros (a norm of zero);
        - offset: every value shifted by 256 times the tensor's largest magnitude (a
          one-pass variance, a sum that cancels);
        - tiny: magnitudes 1024 times smaller, exactly (an epsilon bigger than the
          reference's, a threshold fitted to the task's range);
        - boolean tensors: flipped at random (signed), all False (scaled) or all True
          (extreme) along whole rows, and both kinds of rows (zeros): a kernel that assumes
          every row has a True, or a False, shows itself;
        float arguments are scaled in the scaled and extreme sets too (a hard-coded one).
        """
        t0 = time.perf_counter()
        inputs = self._task_inputs(seed)
        self.task_draw_s += time.perf_counter() - t0  # the task's own code, for the breakdown
        gen = torch.Generator().manual_seed(seed + 1)
        if shapes is not None:
            inputs = reshape_inputs(inputs, [tuple(s) for s in shapes], gen)
        if self.device == "cpu" or variant == "none":  # the task's own set: where it was drawn
            return _made(inputs, variant, gen, torch.device(self.device))
        # Made on the worker's device: on the CPU, the variants of a large set take seconds
        # (elementwise passes and random draws over every element), on a GPU milliseconds.
        dev = torch.device(self.device)
        try:
            return _made(inputs, variant, torch.Generator(device=dev).manual_seed(seed + 1), dev)
        except Exception:  # out of its memory, say: made on the CPU, as before
            pass
        if dev.type == "cuda":
            torch.cuda.empty_cache()  # the failed attempt's blocks (its traceback is gone now)
        return _made(inputs, variant, gen, torch.device("cpu"))

    def _task_inputs(self, seed: int) -> list[Any]:
        """get_inputs() for a seed. A GPU worker draws them on its GPU (torch's default device
        set to it while the task's code runs): 9 sets of 8192x4096 normal floats take 2-3 s
        on one CPU thread, milliseconds there. Its tensors are copied, as the move to the
        device copied a CPU draw, so a get_inputs() that refills one buffer of its own
        gives each set its own values. A get_inputs() that cannot draw there (a numpy
        array, a CPU generator, .numpy(), too little GPU memory) is run again on the CPU
        from the same seed; one that broke the device (a device-side assert) is not."""
        torch.manual_seed(seed)
        random.seed(seed)
        if self.device == "cpu":
            return list(self.module.get_inputs())
        failed: Exception | None = None
        try:
            with torch.device(self.device):
                return _copies(list(self.module.get_inputs()))
        except Exception as e:
            failed = e
        if self.device == "cuda":
            try:
                torch.cuda.synchronize()
            except Exception:  # the device's context is gone: no draw can follow
                raise DeviceLost(f"get_inputs() raised {_describe(failed)}") from None
            failed = None  # (its traceback held the attempt's blocks)
            torch.cuda.empty_cache()
        torch.manual_seed(seed)
        random.seed(seed)
        return list(self.module.get_inputs())

    def op_trials(self, msg: dict) -> dict:
        results = []
        spent = {"draw": 0.0, "forward": 0.0}  # seconds, for the report's breakdown
        self.task_draw_s = 0.0  # of the draw: in the task's get_inputs()
        for spec in msg["sets"]:
            t0 = time.perf_counter()
            try:
                inputs = self._draw(spec["seed"], spec["variant"], spec.get("shapes"))
            except ShapeError as e:
                raise WorkerError(f"Input set '{spec['label']}': {e}") from e
            except DeviceLost:
                raise
            except Exception as e:
                if spec["variant"] != "none":  # a variant its inputs' dtypes do not allow: left out
                    results.append({"label": spec["label"], "skipped": _describe(e)})
                    continue
                raise WorkerError(f"get_inputs() raised {_describe(e)}") from e
            except BaseException as e:
                raise WorkerError(f"get_inputs() raised {_describe(e)}") from e
            t1 = time.perf_counter()
            spent["draw"] += t1 - t0
            if self.device == "cuda" and spec["variant"] in ("signed", "extreme") and any(
                isinstance(x, torch.Tensor) and not x.is_floating_point() for x in inputs
            ):
                # Negative indices the reference rejects would trip a device-side assert
                # that ends this worker's CUDA context: try the set on the CPU first.
                why = self._fails_on_cpu(inputs)
                if why:
                    results.append({"label": spec["label"], "skipped": why})
                    continue
            dev = _to_device(inputs, self.device)
            # The judge's copy. On a GPU the kept set itself, copied from the device straight
            # into the reply (nothing changes it: the forward gets copies); on the CPU, copies.
            sent = dev if self.device == "cuda" else _copies(list(inputs))
            model = self.model
            if "init" in spec:
                try:
                    model = self._init_variant(spec["init"])
                except _OtherParameters as e:
                    results.append({"label": spec["label"], "skipped": str(e)})
                    continue
                except BaseException as e:
                    results.append({"label": spec["label"], "skipped": f"building it raised {_describe(e)}"})
                    continue
            try:
                with torch.no_grad():
                    # On a copy: a reference that changes its inputs in place must not change
                    # the set kept here, which timing's checks run the reference on again.
                    out = model(*_copies(dev))
                if self.device == "cuda":
                    torch.cuda.synchronize()
            except BaseException as e:
                if spec["variant"] != "none" or "init" in spec:  # a variant it does not take: left out
                    why = _describe(e)
                    results.append(
                        {"label": spec["label"], "skipped": f"its forward raised {why}" if "init" in spec else why}
                    )
                    continue
                raise WorkerError(f"on input set '{spec['label']}', its forward raised {_describe(e)}") from e
            leaves = _tensors(out)
            if not leaves or not (
                isinstance(out, torch.Tensor) or all(isinstance(o, torch.Tensor) for o in out)
            ):
                got = f"a {type(out).__name__}"
                if isinstance(out, (tuple, list)):
                    held = sorted({type(o).__name__ for o in out if not isinstance(o, torch.Tensor)})
                    got += f" holding {' and '.join(held)} values" if held else " holding nothing"
                raise WorkerError(
                    f"its forward returned {got}: a task's forward must return a tensor or a "
                    "tuple of tensors."
                )
            finite = all(bool(torch.isfinite(t).all()) for t in leaves if t.is_floating_point())
            spent["forward"] += time.perf_counter() - t1
            self.sets.append(dev)
            results.append(
                {"label": spec["label"], "inputs": sent, "outputs": out, "finite": finite}
            )
        if self.device == "cuda":
            torch.cuda.empty_cache()  # the variants' temporaries: this worker lives on
        for r in results:
            if "inputs" in r:
                leaves = _tensors([r["inputs"], r["outputs"]])
                self.set_bytes = max(self.set_bytes, sum(t.numel() * t.element_size() for t in leaves))
        spent["draw_task"] = self.task_draw_s
        return {"sets": results, "seconds": spent}

    def _init_variant(self, init: list[Any]) -> Any:
        """The reference built from other init arguments, holding the same parameters."""
        assert self.module is not None and self.model is not None
        torch.manual_seed(self.seed)
        model = self.module.Model(*init).to(self.device)
        try:
            model.load_state_dict(self.model.state_dict())
        except RuntimeError as e:  # torch's own rule of what loads: the set is left out
            if "Error(s) in loading state_dict" not in str(e):
                raise
            raise _OtherParameters("its parameters have other names or shapes") from e
        return model

    def _fails_on_cpu(self, inputs: list[Any]) -> str | None:
        """Why the reference cannot take these inputs, run on a CPU copy of it, or None."""
        import copy

        if getattr(self, "_cpu_model", None) is None:
            self._cpu_model = copy.deepcopy(self.model).cpu()
        try:
            with torch.no_grad():
                # Copies: a reference that changes its inputs must not change the kept set.
                self._cpu_model(
                    *[x.to("cpu", copy=True) if isinstance(x, torch.Tensor) else x for x in inputs]
                )
        except BaseException as e:
            return _describe(e)
        return None

    def op_compile_reference(self, msg: dict) -> dict:
        """torch.compile of the reference, built before its timing: its first call, on a
        copy of the first timed set (as op_time_reference's buffers are), under no_grad,
        compiles it. The judge asks for it while the candidates are checked (the GPU
        shared), so that its timing, under the exclusive hold, finds the work done.

        What that first call also does is choose each kernel's launch configuration by
        timing them (Inductor's autotuning): beside the candidates' work, which may load
        the GPU on purpose. So no choice made here is kept (_no_kept_autotuning), and the
        timing compiles once more from Inductor's and Triton's caches (cheap), its
        kernels' choices made again under the exclusive hold (_compiled_reference)."""
        self._await_warm_up()
        _no_kept_autotuning()
        t0 = time.perf_counter()
        sets = [self.sets[i] for i in msg["sets"]]
        buffers = [x.clone() if isinstance(x, torch.Tensor) else x for x in sets[0]]
        self._compile_s = None
        try:
            compiled = torch.compile(self.model)
            with torch.no_grad():
                compiled(*buffers)
            if self.device == "cuda":
                torch.cuda.synchronize()
        except BaseException as e:
            return {"seconds": time.perf_counter() - t0, "error": _describe(e)}
        finally:
            del buffers
            if self.device == "cuda":
                torch.cuda.empty_cache()  # its peak is not held through the candidates' runs
        self._compile_s = time.perf_counter() - t0
        return {"seconds": self._compile_s}

    def _compiled_reference(self) -> tuple[Any, float | None]:
        """A new torch.compile of the reference, and how long its build ahead took (None:
        none was made, and its first call compiles it all). After a build ahead, Dynamo's
        compiled code is dropped, so that its first call compiles again, mostly from the
        caches, and its kernels' autotuning runs again, where it is called from: under the
        GPU's exclusive hold."""
        _no_kept_autotuning()
        if self._compile_s is not None:
            torch._dynamo.reset()
        return torch.compile(self.model), self._compile_s

    def op_time_reference(self, msg: dict) -> dict:
        self._await_warm_up()
        idx = msg["sets"]
        sets = [self.sets[i] for i in idx]
        buffers = [x.clone() if isinstance(x, torch.Tensor) else x for x in sets[0]]
        rng = random.Random(msg["seed"])
        # Varied like a candidate's inputs (the same work between calls), from any seed.
        variation = vary.Variation(rng.randrange(1 << 62), sets, msg.get("vary_mode", "elements"))
        # And every output projected, as a candidate's are: in a row of calls that work sits
        # between them on the stream, and must weigh on both figures alike.
        projection = fingerprint.Projection(rng.randrange(1 << 62))
        prints: list[Any] = []

        def check(_call: int, _position: int, out: Any) -> None:
            prints.append(projection.take(out))

        result: dict[str, Any] = {}
        with torch.no_grad():
            eager = timing.bench(
                self.model, buffers, sets, budget_s=msg["budget_s"], rng=rng, back_to_back=True,
                vary=variation, check=check,
            )
            prints.clear()
            result["eager_ms"] = eager["median_ms"]
            result["eager_b2b_ms"] = eager["b2b_ms"]
            result["eager_reps"] = eager["reps"]
            try:
                compiled, ahead_s = self._compiled_reference()
                hits = _graph_cache_hits()
                c = timing.bench(
                    compiled, buffers, sets, budget_s=msg["budget_s"], rng=rng, back_to_back=True,
                    vary=variation, check=check,
                )
                if ahead_s is not None:  # (figures only: how much of its build it found made)
                    result["compiled_ahead_s"] = ahead_s
                    result["compile_cache_hits"] = _graph_cache_hits() - hits
                prints.clear()
                result["compile_ms"] = c["median_ms"]
                result["compile_b2b_ms"] = c["b2b_ms"]
            except BaseException as e:
                result["compile_ms"] = None
                result["compile_error"] = _describe(e)
        return result

    def op_probe_vary(self, msg: dict) -> dict:
        """How the timed calls' inputs can be varied for this task (vary.probe_modes)."""
        sets = [self.sets[i] for i in msg["sets"]]
        with torch.no_grad():
            bases = [self.model(*_copies(v)) for v in sets]
        return {"mode": vary.probe_modes(self.model, sets, bases, msg["seed"])}

    def op_varied_outputs(self, msg: dict) -> dict:
        """The reference on the inputs numbered timed calls of a candidate saw (each an
        input set of `sets`, by position, varied for its call's number): how the
        candidate's outputs of `calls` (`candidate`, one each) compare with its own
        (checks.kept_call, made here where the reference's outputs are: only the verdicts
        travel), and its projections (fingerprint.py) of `checks`."""
        sets = [self.sets[i] for i in msg["sets"]]
        variation = vary.Variation(msg["seed"], sets, msg.get("vary_mode", "elements"))
        projection = fingerprint.Projection(msg.get("projection_seed", 0))
        theirs = msg["candidate"]
        if len(theirs) != len(msg["calls"]):
            raise WorkerError("the candidate's outputs do not match the calls")
        device = self.device if self.device != "cpu" else None
        kept, prints = [], []
        explain = True  # the judge reports the first wrong call it judges: up to a finite one
        with torch.no_grad():
            for out, (position, call) in zip(theirs, msg["calls"]):
                want = self.model(*vary.varied_copy(sets[position], variation, position, call))
                base = self.model(*_copies(sets[position]))  # unvaried: is `want` stale?
                got = checks.kept_call(out, want, base, msg["atol"], msg["rtol"], device, explain)
                explain = explain and (got["ok"] or not got["finite"])
                kept.append(got)
                del want, base, out  # one call's outputs on the device at a time
            for position, call in msg.get("checks", []):
                inputs = vary.varied_copy(sets[position], variation, position, call)
                prints.append(projection.reference(self.model(*inputs), msg["atol"], msg["rtol"]))
        if self.device == "cuda":
            torch.cuda.synchronize()
        return {"kept": kept, "prints": prints}

    # candidate ------------------------------------------------------------------
    def op_load_candidate(self, msg: dict) -> dict:
        self._await_warm_up()  # before the snapshot of torch's functions
        path = self._write_source(msg["source"], "candidate")
        self.out_nbytes = list(msg.get("out_nbytes", []))
        self.tolerance = tuple(msg.get("tolerance", (0.0, 0.0)))
        self.candidate_file = str(path)  # its code's frames name it
        self.probe = probes.LaunchProbe(str(path))
        self.probe.install()
        probes.register_classes(CANDIDATE_MODULE)
        self.snapshot = probes.identity_snapshot()
        self.methods = probes.class_methods()
        try:
            mod = _import_file(path, CANDIDATE_MODULE, guard=True)
        except BaseException as e:
            raise WorkerError(f"Importing the candidate raised {_describe(e)}{_alone(e)}") from e
        cls = getattr(mod, "ModelNew", None)
        if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
            raise WorkerError("ModelNew is not an nn.Module class.")
        torch.manual_seed(msg["seed"])
        try:
            model = cls(*msg["init_inputs"]).to(self.device)
        except BaseException as e:
            raise WorkerError(f"ModelNew(*get_init_inputs()) raised {_describe(e)}") from e
        copied, mode, unmatched = self._copy_state(model, msg["state"])
        self.models = [model]
        for init in msg.get("init_variants", []):
            # Built now, like the first: a candidate cannot tell which one a call goes to.
            try:
                torch.manual_seed(msg["seed"])
                other = cls(*init).to(self.device)
                self._copy_state(other, msg["state"])
                self.models.append(other)
            except BaseException as e:
                self.models.append(
                    WorkerError(
                        f"ModelNew(*{init!r})(get_init_inputs() varied by the judge) raised "
                        f"{_describe(e)}, and Model took those arguments"
                    )
                )
        fwd = getattr(type(model), "forward", None)
        for _ in range(8):  # through decorators such as @torch.no_grad() to the function itself
            inner = getattr(fwd, "__wrapped__", None)
            if inner is None:
                break
            fwd = inner
        code = getattr(fwd, "__code__", None)
        own_forward = bool(code) and os.path.realpath(code.co_filename) == os.path.realpath(path)
        self.model = model
        nn = torch.nn.Module  # the base class's own walk, whatever ModelNew overrides
        self.given_state = frozenset(
            t.untyped_storage().data_ptr()
            for m in self.models
            if isinstance(m, torch.nn.Module)
            for t in [*nn.parameters(m), *nn.buffers(m)]
        )
        return {
            "copied": copied,
            "copy_mode": mode,
            "unmatched": unmatched,
            "own_forward": own_forward,
            "tampered": probes.changed_identities(self.snapshot),
            "triton_warm_up_s": self.warm_s,  # figures only
        }

    @staticmethod
    def _copy_state(
        model: torch.nn.Module, ref: dict[str, torch.Tensor]
    ) -> tuple[int, str, list[str]]:
        """Give the candidate the reference's parameters: by name, else by position and shape."""
        # nn.Module's own walk, and only plain tensors: not a candidate's state_dict() or copy_.
        own = {
            k: v
            for k, v in torch.nn.Module.state_dict(model).items()
            if type(v) in (torch.Tensor, torch.nn.Parameter)
        }
        by_name = [k for k, v in own.items() if k in ref and ref[k].shape == v.shape]
        mode = "name"
        pairs = [(k, k) for k in by_name]
        if (
            not by_name
            and own
            and len(own) == len(ref)
            and all(a.shape == b.shape for a, b in zip(own.values(), ref.values()))
        ):
            pairs = list(zip(own.keys(), ref.keys()))
            mode = "position"
        with torch.no_grad():
            for mine, theirs in pairs:
                torch.Tensor.copy_(own[mine], ref[theirs])
        unmatched = [k for k in ref if k not in {t for _, t in pairs}]
        return len(pairs), mode, unmatched

    def _poison(self) -> None:
        """Fill recently freed device memory so unwritten output elements show up as garbage."""
        if self.device != "cuda" or not self.out_nbytes:
            return
        byte = (0xFF, 0x7F)[self.poison_turn % 2]  # NaN, then a huge finite value
        self.poison_turn += 1
        blocks = [
            torch.full((max(n, 1),), byte, dtype=torch.uint8, device="cuda")
            for n in self.out_nbytes
            for _ in range(2)
        ]
        del blocks

    def _slot(self, run: dict) -> list[Any]:
        values = self.sets[run["set"]]
        slot = run["slot"]
        if slot not in self.slots:
            self.slots[slot] = [x.clone() if isinstance(x, torch.Tensor) else x for x in values]
        else:
            for b, v in zip(self.slots[slot], values):
                if isinstance(b, torch.Tensor):
                    torch.Tensor.copy_(b, v)
        return self.slots[slot]

    def _observe(self, inputs: list[Any], which: int = 0) -> tuple[dict, Any]:
        """One audited forward call: its output and everything the judge needs to know about it."""
        assert self.probe is not None
        model = self.models[which]
        if isinstance(model, WorkerError):
            raise model
        self._scrub(inputs, None)
        self._poison()
        before = [x.clone() if isinstance(x, torch.Tensor) else None for x in inputs]
        threads = probes.thread_ids()
        stream = torch.cuda.current_stream().cuda_stream if self.device == "cuda" else None
        self.probe.reset()
        given = self.given_state | {t.untyped_storage().data_ptr() for t in _tensors(inputs)}
        audit = probes.OpAudit(self.probe, self.device, given, self.tolerance)
        obs: dict[str, Any] = {}
        first = not self.observed
        self.observed = True
        wall0 = time.time()
        t0 = time.perf_counter()
        self.probe.recording = True
        try:
            # Gradient mode varies at random from call to call, as it does between a user's
            # inference and training: a candidate that behaves only under no_grad (how a
            # judge would call it) shows itself.
            with torch.set_grad_enabled(self.rng.random() < 0.5), audit:
                out = model(*inputs)
            if self.device == "cuda":
                torch.cuda.synchronize()
        finally:
            self.probe.recording = False
        obs["seconds"] = time.perf_counter() - t0
        # Before the judge calls any method of a tensor or a module: are they still torch's?
        patched = probes.changed_methods(self.methods)
        if patched:
            raise WorkerError(
                f"forward changed methods of torch's classes ({', '.join(patched[:5])}), which "
                "the judge calls after it: tampering"
            )
        set_attrs = self._scrub(inputs, out)
        obs["launches"] = dict(self.probe.own)
        obs["foreign_launches"] = dict(self.probe.foreign)
        obs["compute_ops"] = dict(audit.compute)
        obs["host_ops"] = dict(audit.host)
        obs["py_threads"], obs["native_threads"] = probes.new_threads(threads)
        obs["streams"] = sorted(s for s in self.probe.streams if s != stream)
        obs["output_problem"] = self._output_problem(out)
        if set_attrs:
            obs["output_problem"] = (
                f"forward set attributes on tensors it was given or returned "
                f"({', '.join('.' + a for a in set_attrs)}): the judge calls tensor methods "
                "after forward, and a candidate may not stand in for them"
            )
        # The judge decides what this means: on inputs the judge made (all positive, say)
        # an honest kernel can be an identity, equal to a copy of its input.
        obs["pytorch_copy"] = obs["output_problem"] is None and bool(
            audit.copied_outputs(_tensors(out))
        )
        in_ranges = [probes.storage_range(x) for x in inputs if isinstance(x, torch.Tensor)]
        obs["aliased"] = any(
            lo < hi2 and lo2 < hi
            for o in _tensors(out)
            if o.untyped_storage().nbytes()
            for lo, hi in [probes.storage_range(o)]
            for lo2, hi2 in in_ranges
        )
        obs["mutated"] = [
            i
            for i, (x, b) in enumerate(zip(inputs, before))
            if b is not None
            and not torch.equal(
                x.reshape(-1).view(torch.uint8)
                if x.is_contiguous()
                else x.contiguous().reshape(-1).view(torch.uint8),
                b.reshape(-1).view(torch.uint8),
            )
        ]
        if first and self.device == "cuda":  # last: after every check of the call's own
            obs["triton_steps"] = _triton_steps(wall0)
        return obs, (out if obs["output_problem"] is None else None)

    def _scrub(self, inputs: Any, out: Any) -> list[str]:
        """Attributes set on the call's tensors, removed and remembered as tampering; and
        (after a timed call) methods of torch's classes that changed, remembered too."""
        found = probes.scrub_tensors(inputs, out)
        self.tensor_attrs.extend(a for a in found if a not in self.tensor_attrs)
        for name in probes.changed_methods(self.methods) if self.methods else ():
            if f"method {name}" not in self.tensor_attrs:
                self.tensor_attrs.append(f"method {name}")
        return found

    def _tampered(self) -> list[str]:
        return probes.changed_identities(self.snapshot) + [
            f"torch's {a[7:]}" if a.startswith("method ") else f"an attribute .{a} set on a tensor"
            for a in self.tensor_attrs
        ]

    def _output_problem(self, out: Any) -> str | None:
        def leaf(x: Any) -> str | None:
            if type(x) is not torch.Tensor:
                return f"an output is a {type(x).__module__}.{type(x).__name__}, not a plain torch.Tensor"
            if wire.dtype_name(x.dtype) not in wire.DTYPE_NAMES:
                return f"an output has dtype {x.dtype}, which the verifier cannot compare yet"
            if x.layout != torch.strided or x.is_meta or x.device.type != self.device:
                return f"an output is not a real {self.device} tensor ({x.device}, {x.layout})"
            if x.numel() and torch.UntypedStorage.nbytes(torch.Tensor.untyped_storage(x)) == 0:
                return "an output has no storage"
            return None

        if isinstance(out, tuple | list):
            if type(out) not in (tuple, list):
                return f"forward returned a {type(out).__name__}, not a tuple"
            for o in out:
                p = leaf(o)
                if p:
                    return p
            return None
        return leaf(out)

    def op_add_sets(self, msg: dict) -> dict:
        """Input sets for the runs to come, in the order the reference drew them."""
        for values in msg["sets"]:
            self.sets.append(_to_device(values, self.device))
        return {"sets": len(self.sets)}

    def op_run(self, msg: dict) -> dict:
        started = time.perf_counter()
        runs = []
        budget = float(msg.get("extra_budget_s", 1e9))
        for run in msg["runs"]:
            bufs = self._slot(run)
            try:
                # Extra calls are audited like the final one (a candidate cannot tell them
                # apart); only the final call's output is sent back. They stop early at the
                # time budget, so their number depends on the clock too.
                extra = []
                t0 = time.perf_counter()
                which = int(run.get("model", 0))
                for i in range(run.get("extra_calls", 0)):
                    extra.append(self._observe(bufs, which)[0])
                    spent = time.perf_counter() - t0
                    if (spent > budget and i + 1 >= _LATE_MIN) or spent > 4 * budget:
                        break
                obs, out = self._observe(bufs, which)
            except BaseException as e:
                runs.append(
                    {
                        "set": run["set"],
                        "error": _describe(e),
                        "traceback": _from_their_code(e, self.candidate_file)[-3000:],
                    }
                )
                break
            runs.append({"set": run["set"], "obs": _merge([*extra, obs]), "outputs": out})
        return {"runs": runs, "tampered": self._tampered(), "op_s": time.perf_counter() - started}

    def op_time_candidate(self, msg: dict) -> dict:
        assert self.probe is not None
        probe = self.probe
        rng = random.Random(msg["seed"])
        sets = [self.sets[i] for i in msg["sets"]]
        buffers = self.slots[0]
        audits: list[probes.OpAudit] = []
        launchless = {"calls": 0, "without": 0}
        last_total = [0]

        def audit() -> probes.OpAudit:
            # Counts only: it allocates nothing, so the candidate's pool cannot tell it apart.
            audits.append(probes.OpAudit(probe, self.device, snapshots=False))
            return audits[-1]

        def between() -> None:  # outside the timed window: did that call launch its own kernels?
            total = sum(probe.own.values())
            launchless["calls"] += 1
            launchless["without"] += total == last_total[0]
            last_total[0] = total

        # Every timed call sees inputs no other call saw, varied from the judge's secret
        # seed (vary.py), so a cache of outputs keyed by the inputs' values never hits.
        variation = (
            vary.Variation(msg["vary_seed"], sets, msg.get("vary_mode", "elements"))
            if "vary_seed" in msg
            else None
        )
        # And every timed call's output is projected (fingerprint.py) for the judge to check
        # calls of its choosing against the reference afterwards.
        projection = fingerprint.Projection(msg["projection_seed"]) if "projection_seed" in msg else None
        prints: list[tuple[int, int, list[torch.Tensor]]] = []

        def check(call: int, position: int, out: Any) -> None:
            if projection is not None:
                prints.append((call, position, projection.take(out)))

        probe.reset()
        probe.recording, probe.full = True, False  # audited calls too: they must look alike
        try:
            with torch.no_grad():
                r = timing.bench(
                    self.model,
                    buffers,
                    sets,
                    budget_s=msg["budget_s"],
                    keep=msg.get("keep", 3),
                    rng=rng,
                    audit=audit,
                    audited=msg.get("audited", 3),
                    between=between,
                    after=self._scrub,
                    back_to_back=True,
                    vary=variation,
                    check=check,
                )
        finally:
            probe.recording, probe.full = False, True
        t0 = time.perf_counter()
        r["prints"] = [[call, position, [p.tolist() for p in pairs]] for call, position, pairs in prints]
        r["seconds"]["prints"] = time.perf_counter() - t0
        kept = [
            {"set": msg["sets"][k], "position": k, "call": call, "outputs": out}
            for k, call, out in r.pop("kept")
        ]
        r["varied"] = bool(variation and variation.varies_anything)
        compute: dict[str, int] = {}
        host: dict[str, int] = {}
        for a in audits:
            for k, v in a.compute.items():
                compute[k] = compute.get(k, 0) + v
            for k, v in a.host.items():
                host[k] = host.get(k, 0) + v
        r["calls"] = launchless["calls"]
        r["calls_without_launch"] = launchless["without"]
        r["audited_compute_ops"] = compute
        r["audited_host_ops"] = host
        # One more audited call after many: a candidate that counts calls shows itself here.
        last = msg["sets"][rng.randrange(len(msg["sets"]))]
        t0 = time.perf_counter()
        obs, out = self._observe(self._slot({"set": last, "slot": 0}))
        r["seconds"]["after"] = time.perf_counter() - t0
        return {
            "timing": r,
            "kept": kept,
            "after": {"set": last, "obs": obs, "outputs": out},
            "tampered": self._tampered(),
        }


def _merge(observations: list[dict]) -> dict:
    """One observation standing for several calls: the last call's facts, everyone's ops."""
    merged = dict(observations[-1])
    for key in ("compute_ops", "host_ops"):
        total: dict[str, int] = {}
        for o in observations:
            for k, v in o[key].items():
                total[k] = total.get(k, 0) + v
        merged[key] = total
    merged["calls"] = len(observations)
    merged["calls_without_launch"] = sum(1 for o in observations if not o["launches"])
    merged["py_threads"] = max(o["py_threads"] for o in observations)
    merged["native_threads"] = max(o["native_threads"] for o in observations)
    merged["streams"] = sorted({x for o in observations for x in o["streams"]})
    merged["aliased"] = any(o["aliased"] for o in observations)
    merged["pytorch_copy"] = any(o.get("pytorch_copy") for o in observations)
    merged["mutated"] = sorted({i for o in observations for i in o["mutated"]})
    merged["output_problem"] = next(
        (o["output_problem"] for o in observations if o["output_problem"]), None
    )
    return merged


def _cpu_benchmarker(kernel_call: Any, quantiles: Any = None, **_: Any) -> list[float]:
    """What multi-config autotune measures configs with on the CPU interpreter: wall time."""
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        kernel_call()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return [times[1], times[0], times[2]] if quantiles else times[1]


def _use_cpu_benchmarker() -> None:
    """Let Autotuner pick among configs on the CPU, where Triton has no benchmarker."""
    import triton.runtime.autotuner as autotuner

    if "do_bench" not in autotuner.Autotuner.__dict__:
        return  # a Triton whose Autotuner benchmarks some other way

    def do_bench(tuner: Any) -> Any:
        own = getattr(tuner, "_do_bench", None)
        return own if own is not None else _cpu_benchmarker

    autotuner.Autotuner.do_bench = property(do_bench)


def _use_triton_interpreter() -> None:
    """Switch this worker's Triton to its CPU interpreter.

    The fork server imported Triton in compiled mode, and Triton decides at import
    time whether its own `tl.*` helpers (tl.sum, tl.max, tl.zeros ...) are compiled
    or interpreted. Re-importing its pure-Python modules with TRITON_INTERPRET=1 set
    makes them interpreted (about 0.05 s); the C extension is reused as it is.
    """
    os.environ["TRITON_INTERPRET"] = "1"
    for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
        if not name.startswith("triton._C"):
            del sys.modules[name]
    importlib.import_module("triton.language")
    _use_cpu_benchmarker()


def _redirect_output(log_fd: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)


def serve(conn: wire.Channel, device: str, workdir: str, log_fd: int, gpu_fraction: float) -> None:
    """Worker main loop: init, say ready, then answer commands until told to exit."""
    _redirect_output(log_fd)
    if device == "cpu":
        _use_triton_interpreter()
    t0 = time.perf_counter()
    w = WorkerState(device, workdir, gpu_fraction)
    try:
        w.init_device()
        conn.send_bytes(
            wire.encode(
                {
                    "ok": True,
                    "pid": os.getpid(),
                    "init_s": time.perf_counter() - t0,
                    "dynamo_preloaded": "torch._dynamo" in sys.modules,
                    # files its fork server's seed put in its Triton cache (tritonwarm.plant)
                    "triton_seeded": sum(
                        len(names) for _, _, names in os.walk(os.environ.get("TRITON_CACHE_DIR") or "/nonexistent")
                    ),
                }
            )
        )
        w.warm_up()
    except BaseException as e:
        conn.send_bytes(wire.encode({"ok": False, "error": f"device start failed: {_describe(e)}"}))
        return
    while True:
        try:
            msg = wire.recv(conn)
        except (EOFError, OSError):
            return
        op = msg.get("op")
        handler = getattr(w, f"op_{op}", None)
        # A large reply's memory file is allocated while the command runs; on a GPU it is
        # page-locked too, but never while a candidate is timed (the driver's work would
        # share the host with the timed calls).
        size = w.reply_bytes(msg)
        pin = w.device == "cuda" and op in ("run", "trials")
        spare = wire.Spare(size, pin) if size >= _SPARE_BYTES else None
        try:
            if handler is None:
                raise WorkerError(f"unknown command {op!r}")
            reply = {"ok": True, **handler(msg)}
        except BaseException as e:
            reply = {
                "ok": False,
                "error": str(e) if isinstance(e, WorkerError) else _describe(e),
                "traceback": traceback.format_exc()[-3000:],
            }
        try:
            wire.send(conn, reply, spare)
        except wire.WireError as e:
            wire.send(conn, {"ok": False, "error": f"the result could not be sent: {_describe(e)}"})
        # Candidate objects the reply held die now, not during the next command.
        del reply, msg
