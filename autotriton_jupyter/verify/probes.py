"""Instruments installed inside a candidate worker before the candidate's code is imported.

- LaunchProbe wraps `run` of every Triton KernelInterface class (JITFunction, the CPU
  interpreter's InterpretedFunction, Autotuner, Heuristics; found by walking
  subclasses, so Triton 3.6-3.9 all work) to count launches of the candidate's own
  kernels, to note the stream they go to, and to mark "inside a Triton launch" so
  the op audit does not blame the interpreter's own tensor work on the candidate.
- OpAudit is a TorchDispatchMode that records every ATen op forward runs.
- identity_snapshot / changed_identities catch monkeypatching of torch, triton,
  the clock and built-ins.

Length: four instruments that are installed together, in order, before any candidate
code runs.
"""

from __future__ import annotations

import ast
import builtins
import math
import os
import threading
import time
from collections import Counter
from typing import Any

import torch
from torch.autograd.function import FunctionCtx
from torch.utils._python_dispatch import TorchDispatchMode

# Ops that only allocate, view, copy or describe data. Everything else is compute.
NON_COMPUTE_OPS = frozenset(
    """
    empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros
    ones ones_like new_ones full full_like new_full scalar_tensor arange lift_fresh
    lift_fresh_copy fill fill_ zero zero_ resize_ set_
    view _unsafe_view reshape _reshape_alias as_strided permute transpose t expand expand_as
    squeeze unsqueeze slice select split split_with_sizes chunk unbind narrow alias detach
    detach_ view_as view_as_real view_as_complex diagonal movedim flatten unflatten unfold
    swapaxes swapdims mT
    clone copy_ _to_copy contiguous to _copy_from _copy_from_and_resize
    size stride numel dim is_contiguous sym_size sym_stride sym_numel sym_storage_offset
    _local_scalar_dense is_same_size _has_compatible_shallow_copy_type
    promote_types can_cast result_type
    """.split()
)


def op_name(func: Any) -> str:
    """Short name of an ATen overload: aten::addmm.default -> "addmm"."""
    schema = getattr(func, "_schema", None)
    if schema is None:
        return str(func)
    ns, _, name = schema.name.partition("::")
    return name if ns == "aten" else schema.name


class LaunchProbe:
    """Counts launches of Triton kernels, split into the candidate's own and foreign ones."""

    def __init__(self, own_file: str) -> None:
        self.own_file = os.path.realpath(own_file)
        self.own: Counter[str] = Counter()
        self.foreign: Counter[str] = Counter()
        self.streams: set[int] = set()
        self.touched: set[int] = set()  # storages passed to the candidate's launches
        self.depth = 0
        # Inside a leaf launch: the interpreter's own copies of the arguments, to the host and
        # back, are not the candidate's PyTorch copies.
        self.launching = 0
        self.recording = False
        # Off while timed: launches are only counted (what the timed calls' checks read),
        # not also traced to their storages and streams (what an observed call's checks
        # read), which would add microseconds of the judge's own to every timed launch.
        self.full = True
        self._owner: dict[int, bool] = {}

    def reset(self) -> None:
        self.own.clear()
        self.foreign.clear()
        self.streams.clear()
        self.touched.clear()

    def touch(self, args: tuple, kwargs: dict) -> None:
        if not self.full:
            return
        for a in (*args, *kwargs.values()):
            if isinstance(a, torch.Tensor):
                self.touched.add(_ptr(a))

    def install(self) -> None:
        # Import the modules that define launchers, so their classes exist to be wrapped.
        import triton.runtime.autotuner as autotuner
        import triton.runtime.interpreter  # noqa: F401
        from triton.runtime.jit import KernelInterface

        classes: list[type] = []
        todo = [KernelInterface]
        while todo:
            cls = todo.pop()
            classes.append(cls)
            todo.extend(cls.__subclasses__())
        for cls in classes:
            if "run" in cls.__dict__ and cls is not KernelInterface:
                self._wrap(cls, cls.__dict__["run"], KernelInterface)
        bench = autotuner.Autotuner.__dict__.get("_bench")
        if bench is not None:
            self._wrap_bench(autotuner.Autotuner, bench)
        try:
            from triton.compiler.compiler import CompiledKernel
        except ImportError:
            CompiledKernel = None
        if CompiledKernel is not None and "__getitem__" in CompiledKernel.__dict__:
            self._wrap_compiled(CompiledKernel, CompiledKernel.__dict__["__getitem__"])

    def _wrap(self, cls: type, original: Any, interface: type) -> None:
        """Count leaf launches (not the wrappers': Autotuner, Heuristics).

        The op audit stays on throughout: grid lambdas, heuristics, hooks and the
        interpreted kernel body all run candidate code, and the launch machinery itself
        runs no compute ops (the interpreter's copies are copies).
        """
        probe = self

        def run(kernel, *args, **kwargs):
            fn = getattr(kernel, "fn", None)
            leaf = fn is not None and not isinstance(fn, interface)
            if leaf and probe.recording and probe.depth == 0 and not kwargs.get("warmup", False):
                probe._count(fn, kwargs.get("grid"))
                probe.touch(args, kwargs)
            probe.launching += leaf
            try:
                return original(kernel, *args, **kwargs)
            finally:
                probe.launching -= leaf

        run.__wrapped__ = original
        cls.run = run

    def _wrap_compiled(self, cls: type, original: Any) -> None:
        """Launches through the compiled kernel that `warmup()` returns: `compiled[grid](...)`."""
        probe = self

        def __getitem__(compiled, grid):
            runner = original(compiled, grid)
            src = getattr(compiled, "src", None)
            fn = getattr(getattr(src, "fn", None), "fn", None)

            def counted(*args, **kwargs):
                if fn is not None and probe.recording and probe.depth == 0:
                    probe._count(fn, grid)
                    probe.touch(args, kwargs)
                return runner(*args, **kwargs)

            return counted

        __getitem__.__wrapped__ = original
        cls.__getitem__ = __getitem__

    def _wrap_bench(self, cls: type, original: Any) -> None:
        """Triton's own benchmarking of autotune configs (first call only) is not the candidate's."""
        probe = self

        def _bench(tuner, *args, **kwargs):
            probe.depth += 1
            try:
                return original(tuner, *args, **kwargs)
            finally:
                probe.depth -= 1

        _bench.__wrapped__ = original
        cls._bench = _bench

    def _count(self, fn: Any, grid: Any) -> None:
        if isinstance(grid, tuple | list) and any(int(g) <= 0 for g in grid if isinstance(g, int)):
            return  # an empty grid launches nothing
        name = getattr(fn, "__name__", "?")
        own = self._owner.get(id(fn))
        if own is None:
            code = getattr(fn, "__code__", None)
            own = code is not None and os.path.realpath(code.co_filename) == self.own_file
            self._owner[id(fn)] = own
        if own:
            self.own[name] += 1
        else:
            self.foreign[name] += 1
        if self.full and torch.cuda.is_available() and torch.cuda.is_initialized():
            self.streams.add(torch.cuda.current_stream().cuda_stream)


_COPY_OPS = frozenset(
    {"clone", "_to_copy", "copy_", "_copy_from", "_copy_from_and_resize", "lift_fresh_copy"}
)
# Ops that write a tensor's data into another when given a tensor value (`out[i].fill_(x[j])`).
_FILL_OPS = frozenset({"fill_", "fill"})


_TB = torch._C.TensorBase  # methods through the class: never an attribute a candidate set


def _ptr(t: torch.Tensor) -> int:
    return torch.UntypedStorage.data_ptr(_TB.untyped_storage(t))


def storage_range(t: torch.Tensor) -> tuple[int, int]:
    """The addresses of the whole storage under t (through torch's classes: never a
    method the candidate set on t or its storage)."""
    s = _TB.untyped_storage(t)
    lo = torch.UntypedStorage.data_ptr(s)
    return lo, lo + torch.UntypedStorage.nbytes(s)


def _storage_bytes(t: torch.Tensor) -> torch.Tensor:
    """The whole storage under t, as bytes."""
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(_TB.untyped_storage(t))


def _near(mine: torch.Tensor, snap: torch.Tensor, dtype: torch.dtype, atol: float, rtol: float) -> bool:
    """Whether two storages' bytes are equal, or (floating point) equal within the judge's
    tolerance read as `dtype`: a kernel that only nudged PyTorch's copy (one ulp, a factor
    of 1 + 2^-11) did not make it."""
    if mine.numel() != snap.numel() or mine.device != snap.device:
        return False
    if torch.equal(mine, snap):
        return True
    size = torch.empty(0, dtype=dtype).element_size()
    if not (dtype.is_floating_point and (atol or rtol) and mine.numel() % size == 0):
        return False
    a, b = mine.view(dtype).double(), snap.view(dtype).double()
    return bool(torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True).all())


class OpAudit(TorchDispatchMode):
    """Records the ATen ops forward runs (all of them but Triton's own autotune benchmarking).

    It also keeps a copy of what each PyTorch copy op wrote from data the candidate's
    kernels did not produce (storages no launch touched, forward's own inputs and
    parameters, or an earlier such copy no kernel changed): an output still equal to such
    a copy was made by PyTorch, however its kernels were launched around it.
    """

    def __init__(
        self,
        launches: LaunchProbe,
        device: str = "cpu",
        given: frozenset[int] = frozenset(),
        tolerance: tuple[float, float] = (0.0, 0.0),
        snapshots: bool = True,
    ) -> None:
        super().__init__()
        self.atol, self.rtol = tolerance
        # Whether PyTorch copies are kept for copied_outputs(). Off where only the op counts
        # are read (timing's audited calls): a copy is an allocation of the candidate's own
        # pool, which would tell an audited call from the others.
        self.snapshots = snapshots
        self.launches = launches
        self.device = device
        # Storages forward was given (inputs, parameters, buffers): a kernel may read them,
        # but a copy of them is still PyTorch's work, however many launches touched them.
        self.given = given
        self.compute: Counter[str] = Counter()
        self.host: Counter[str] = Counter()
        self.copies: dict[int, torch.Tensor] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = op_name(func)
        # Inside Triton's benchmarking of autotune configs the candidate's grid functions and
        # kernel bodies still run: their ops count. Triton's own bookkeeping there (times
        # summarised in CPU tensors) is left out on a GPU, where the work is on the device.
        watched = self.launches.depth == 0 or self.device == "cpu" or any(
            isinstance(a, torch.Tensor) and a.device.type != "cpu" for a in (*args, *kwargs.values())
        )
        if watched:
            if name not in NON_COMPUTE_OPS:
                self.compute[name] += 1
            elif _moves_to_host(name, args, kwargs):
                self.host[name] += 1
        out = func(*args, **kwargs)
        fill = name in _FILL_OPS and len(args) > 1 and isinstance(args[1], torch.Tensor)
        if (
            self.snapshots
            and self.launches.depth == 0
            and not self.launches.launching
            and (name in _COPY_OPS or fill)
        ):
            sources = args[1:2] if name == "copy_" or fill else args[:1]
            dest = args[0] if name in ("copy_", "fill_") else out
            if (
                isinstance(dest, torch.Tensor)
                and all(isinstance(a, torch.Tensor) for a in sources)
                and all(self._pytorch_data(a) for a in sources)
            ):
                self.copies[_ptr(dest)] = _storage_bytes(dest).clone()
        return out

    def _pytorch_data(self, t: torch.Tensor) -> bool:
        """Whether t holds data no kernel of the candidate made: forward's inputs and
        parameters, storages no launch touched, or a PyTorch copy of such data that no
        kernel changed since (a kernel that only read the copy did not make it)."""
        ptr = _ptr(t)
        if ptr in self.given or ptr not in self.launches.touched:
            return True
        snap = self.copies.get(ptr)
        return snap is not None and _near(_storage_bytes(t), snap, t.dtype, self.atol, self.rtol)

    def copied_outputs(self, outputs: list[torch.Tensor]) -> int:
        """How many outputs are, byte for byte, what a PyTorch copy of untouched data wrote:
        in their own storage, or in any storage of the same size (a kernel that only moved
        PyTorch's copy into the output did not make it)."""
        n = 0
        for o in outputs:
            mine = _storage_bytes(o)
            snap = self.copies.get(_ptr(o))
            if snap is not None and _near(mine, snap, o.dtype, self.atol, self.rtol):
                n += 1
            elif mine.numel() and any(
                _near(mine, s, o.dtype, self.atol, self.rtol) for s in self.copies.values()
            ):
                n += 1
        return n


def _moves_to_host(name: str, args: tuple, kwargs: dict) -> bool:
    def on_gpu(x: Any) -> bool:
        return isinstance(x, torch.Tensor) and x.device.type != "cpu"

    if name == "_local_scalar_dense":
        return True  # .item(): a value read on the host, on any device
    if name == "_to_copy":
        dev = kwargs.get("device")
        return (
            bool(args) and on_gpu(args[0]) and dev is not None and torch.device(dev).type == "cpu"
        )
    if name in ("copy_", "_copy_from"):
        dst, src = (args[0], args[1]) if name == "copy_" else (args[1], args[0])
        return isinstance(dst, torch.Tensor) and dst.device.type == "cpu" and on_gpu(src)
    return False


def _watched() -> dict[str, Any]:
    import sys

    import triton
    import triton.language as tl
    import triton.testing
    from triton.runtime import jit

    own = {
        name: mod
        for name, mod in list(sys.modules.items())
        if name.startswith("autotriton_jupyter.verify") and mod is not None
    }
    own_classes = {
        f"{name}.{k}": v
        for name, mod in own.items()
        for k, v in list(vars(mod).items())
        if isinstance(v, type) and v.__module__ == name
    }
    return {
        **own,
        **own_classes,
        "torch": torch,
        "torch.Tensor": torch.Tensor,
        "torch._C.TensorBase": torch._C.TensorBase,
        "torch.nn.Module": torch.nn.Module,
        "torch.nn.functional": torch.nn.functional,
        "torch.cuda": torch.cuda,
        "torch.testing": torch.testing,
        "torch.random": torch.random,
        "triton": triton,
        "triton.language": tl,
        "triton.testing": triton.testing,
        "triton.runtime.jit": jit,
        "JITFunction": jit.JITFunction,
        "time": time,
        "math": math,
        "builtins": builtins,
        "threading": threading,
        "os": os,
    }


def _fingerprint(value: Any) -> int | None:
    """A content fingerprint of a data table (a set, dict, list ...), or None for other values."""
    if isinstance(value, frozenset | set):
        return hash(frozenset(map(repr, value)))
    if isinstance(value, dict | list | tuple):
        try:
            return hash(repr(value))
        except Exception:  # a value whose repr fails cannot be fingerprinted
            return None
    return None


def identity_snapshot() -> dict[str, int]:
    """Identity of every callable, class and module reachable from the watched namespaces,
    and the content of the judge's own data tables (the allowed-op list and the like)."""
    snap: dict[str, int] = {}
    for label, obj in _watched().items():
        own = label.startswith("autotriton_jupyter.verify") and "." not in label[len("autotriton_jupyter.verify") + 1 :]
        for key, value in list(vars(obj).items()):
            if callable(value) or isinstance(value, type(os)):
                snap[f"{label}.{key}"] = id(value)
            elif own and not key.startswith("__"):
                snap[f"{label}.{key}"] = id(value)
                fp = _fingerprint(value)
                if fp is not None:
                    snap[f"{label}.{key}[content]"] = fp
    return snap


def changed_identities(before: dict[str, int]) -> list[str]:
    """Names from `before` that now point at a different object or are gone, and callables
    added to a watched namespace (a method shadowing an inherited one)."""
    after = identity_snapshot()
    changed = {k for k, v in before.items() if after.get(k) != v}
    # New names count on watched classes only (a module gains names as its submodules load).
    classes = tuple(f"{label}." for label, obj in _watched().items() if isinstance(obj, type))
    return sorted(changed | {k for k in after.keys() - before.keys() if k.startswith(classes)})


_vars = vars  # bound before any candidate code runs
_CLASSES = (torch.Tensor, torch._C.TensorBase, torch.nn.Module)


def class_methods() -> dict[str, int]:
    """Identity of every name in the classes whose methods the judge calls right after
    forward (tensors and modules): compared before the judge calls any of them."""
    return {
        f"{cls.__qualname__}.{k}": id(v) for cls in _CLASSES for k, v in list(_vars(cls).items())
    }


def changed_methods(before: dict[str, int]) -> list[str]:
    after = class_methods()
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


GUARD_NAME = "__autotriton_own_object__"
_OWN_NAMES = ("self", "cls", "ctx")  # the names the lint trusts (static._OWN_OBJECTS)


def _check_own(obj: Any, qualname: str, method: str, param: str) -> None:
    """The check every method of a candidate's class starts with (guard_source puts it
    there): its `self` is one of its class's, an autograd staticmethod's `ctx` autograd's."""
    cls = _check_own.classes.get(qualname)  # type: ignore[attr-defined]
    if cls is None:
        raise TypeError(
            f"{qualname}.{method} was called before its class was made (from the class body); "
            "a method may run only on an object of its class"
        )
    if param == "cls":  # a classmethod's (or a raw copy's): the class or a subclass of it
        ok = isinstance(obj, type) and issubclass(obj, cls)
    elif param == "ctx" and issubclass(cls, torch.autograd.Function):
        ok = isinstance(obj, FunctionCtx)
    else:
        ok = isinstance(obj, cls)
    if not ok:
        raise TypeError(
            f"{qualname}.{method} was called with a {type(obj).__name__} as its {param}; a "
            "method's own object must be one of its class's (calling a method through its "
            "class, or a copy of it, with another object is not allowed)"
        )


# The candidate's classes by qualified name, as made (kept on the function: the judge's
# data tables are fingerprinted for tampering, and this one grows).
_check_own.classes = {}  # type: ignore[attr-defined]


def guard_source(tree: ast.Module) -> ast.Module:
    """Every function defined directly in a class body whose first parameter is `self`,
    `cls` or `ctx` gets, as its first statement, a call that checks that object (_check_own).

    The lint trusts those names with the candidate's own attributes; without this,
    `Own.method(obj)`, or a raw copy of the function kept in a tuple or by a decorator,
    would make any object `self`. The check is part of the function's own code, so every
    copy of it checks. Line numbers are kept (the call takes the first statement's)."""
    for node in ast.walk(tree):
        if GUARD_NAME in _names_in(node):
            raise ValueError(f"the candidate uses the name {GUARD_NAME}, which is the judge's")
    _guard_classes(tree, [])
    return ast.fix_missing_locations(tree)


def _names_in(node: ast.AST) -> tuple[str | None, ...]:
    """The names a node reads or binds (a candidate may not shadow the check's name)."""
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.arg):
        return (node.arg,)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return (node.name,)
    if isinstance(node, ast.alias):  # import x as name
        return (node.name, node.asname)
    if isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
        return (node.name,)
    if isinstance(node, ast.MatchMapping):
        return (node.rest,)
    if isinstance(node, ast.Global | ast.Nonlocal):
        return tuple(node.names)
    return ()


def _guard_classes(node: ast.AST, path: list[str]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            qual = [*path, child.name]
            for item in child.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    first = (item.args.posonlyargs + item.args.args)[:1]
                    if first and first[0].arg in _OWN_NAMES:
                        _prepend_check(item, ".".join(qual), first[0].arg)
            _guard_classes(child, qual)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            _guard_classes(child, [*path, child.name, "<locals>"])
        else:
            _guard_classes(child, path)


def _prepend_check(fn: ast.FunctionDef | ast.AsyncFunctionDef, qual: str, param: str) -> None:
    body = fn.body
    at = 1 if _starts_with_docstring(body) else 0  # the docstring stays the function's own
    anchor = body[min(at, len(body) - 1)]
    call = ast.Expr(
        ast.Call(
            ast.Name(GUARD_NAME, ast.Load()),
            [ast.Name(param, ast.Load()), ast.Constant(qual), ast.Constant(fn.name), ast.Constant(param)],
            [],
        )
    )
    for n in ast.walk(call):
        ast.copy_location(n, anchor)
        n.end_lineno, n.end_col_offset = anchor.lineno, anchor.col_offset  # type: ignore[attr-defined]
    body.insert(at, call)


def _starts_with_docstring(body: list[ast.stmt]) -> bool:
    first = body[0] if body else None
    return (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )


def register_classes(module_name: str) -> None:
    """From now on, every class the module `module_name` makes is known to _check_own by its
    qualified name (as soon as its body has run); the check is reachable as a builtin."""
    setattr(builtins, GUARD_NAME, _check_own)
    build = builtins.__build_class__
    if getattr(build, "_registers", None) == module_name:
        return

    def build_class(func: Any, name: str, *bases: Any, **kw: Any) -> Any:
        cls = build(func, name, *bases, **kw)
        if isinstance(cls, type) and _vars(cls).get("__module__") == module_name:
            _check_own.classes[cls.__qualname__] = cls  # type: ignore[attr-defined]
        return cls

    build_class._registers = module_name  # type: ignore[attr-defined]
    builtins.__build_class__ = build_class


def scrub_tensors(*trees: Any) -> list[str]:
    """Attributes a candidate set on the tensors of `trees` (inputs, outputs), removed.

    The judge calls tensor methods on inputs and outputs after forward (copies, checks,
    serialising): an instance attribute named like one of them (`out.detach = f`) would
    run the candidate's code there, outside the audit. None may stay."""
    found: list[str] = []
    todo = list(trees)
    while todo:
        x = todo.pop()
        if isinstance(x, torch.Tensor):
            d = _vars(x)
            if d:
                found.extend(sorted(d))
                d.clear()
            # Its storage's Python object lives as long as the tensor: no attributes there either.
            st = torch.Tensor.untyped_storage(x)
            d = getattr(st, "__dict__", None)
            if d:
                found.extend(f"storage.{k}" for k in sorted(d))
                d.clear()
        elif type(x) in (list, tuple):
            todo.extend(x)
    return found


def thread_ids() -> tuple[frozenset[int], frozenset[int]]:
    """The OS thread ids of this process: its Python threads', and all of them (Python and
    native). Compared as sets, not counts: a thread that ends during a call (the reply's
    spare, say) cannot hide one the call started."""
    py = frozenset(t.native_id for t in threading.enumerate() if t.native_id is not None)
    try:
        every = frozenset(int(x) for x in os.listdir("/proc/self/task"))
    except OSError:
        every = py
    return py, every


def new_threads(before: tuple[frozenset[int], frozenset[int]]) -> tuple[int, int]:
    """How many Python threads, and how many threads in all, started since `before`."""
    py, every = thread_ids()
    return len(py - before[0]), len(every - before[1])
