"""Cheaper launches for a kept kernel (issue 17), as the code that goes into it.

Everything between the two marker lines below is copied, as it is, to the end of an
accepted kernel's source by launches.py, followed by one line per kernel that wraps it
(`add_kernel = _autotriton_cached(add_kernel)`). So this text must stand alone: it
imports torch and triton only, never autotriton, and the kept code runs where autotriton
is not installed. The verifier recognises the block by its exact text (static.py) and
judges the kernel with it, timing included, before its time counts.

What it saves: Triton's `kernel[grid](...)` binds the arguments, works out their
specialisation, builds a cache key and parses the launch options on every call, a few
microseconds of host time that a launch-bound kernel pays on each launch. Once an
argument set's specialisation has been compiled, the wrapper launches the compiled
kernel Triton returned for it, directly.

Length: the block is one class and one function; the rest of this file is this note.
"""

# >>> autotriton: cached launches
# Added by autotriton after this kernel was verified: launches skip Triton's per-call host
# work once the same specialisation was compiled. Delete this block to launch as written.
import torch as _autotriton_torch

try:
    from triton.runtime.jit import JITFunction as _AutotritonJIT
except ImportError:  # another Triton: kernels are launched as written
    _AutotritonJIT = None


class _AutotritonCachedLaunch:
    """A @triton.jit kernel, launched through the kernel Triton compiled for the same
    specialisation. The key below holds all that Triton specialises a kernel on, and
    more: the current device; each tensor's dtype and 16-byte alignment; each int's
    being 1, its divisibility by 16 and its width; which other scalar each is; the
    exact value of every constexpr and launch option. Any change of them goes through
    Triton's own path, which compiles (or finds) the right kernel; so does any argument
    of another kind, a kernel with pre-run hooks, and a change of a global the kernel
    reads (Triton then raises, as it would). Settings Triton reads from the environment
    are those of each specialisation's first launch."""

    _INT32 = (-(2**31), 2**31)
    _EXACT = (int, float, bool, str, type(None))

    def __init__(self, kernel):
        self.kernel = kernel
        params = list(kernel.params)
        self.names = tuple(p.name for p in params)
        self.known = frozenset(self.names)
        self.constexpr = tuple(bool(p.is_constexpr) for p in params)
        signature = kernel.signature.parameters
        self.defaults = {n: signature[n].default for n in self.names if signature[n].default is not signature[n].empty}
        self.hooks = getattr(kernel, "pre_run_hooks", ())  # Triton appends to this list
        self.compiled = {}

    def __getattr__(self, name):  # the rest is the kernel's own (warmup, fn, ...)
        return getattr(self.kernel, name)

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            return self.launch(grid, args, kwargs)

        return launch

    def launch(self, grid, args, kwargs):
        values = args if not kwargs and len(args) == len(self.names) else self.bind(args, kwargs)
        key = None if values is None else self.key(values, kwargs)
        compiled = None if key is None else self.compiled.get(key)
        kernel = self.kernel
        if compiled is None or self.hooks or (kernel.used_global_vals and self.globals_changed()):
            compiled = kernel[grid](*args, **kwargs)  # Triton's own path
            if key is not None and hasattr(compiled, "__getitem__"):
                self.compiled[key] = compiled
            return compiled
        if callable(grid):
            grid = grid(dict(zip(self.names, values)))
        size = len(grid)
        compiled[(grid[0], grid[1] if size > 1 else 1, grid[2] if size > 2 else 1)](*values)
        return compiled

    def bind(self, args, kwargs):
        """The arguments in the kernel's order, defaults filled in (None: left to Triton)."""
        if len(args) > len(self.names):
            return None
        values = list(args)
        for name in self.names[len(args):]:
            if name in kwargs:
                values.append(kwargs[name])
            elif name in self.defaults:
                values.append(self.defaults[name])
            else:
                return None
        return values

    def key(self, values, kwargs):
        parts = [_autotriton_torch.cuda.current_device()]
        for value, constexpr in zip(values, self.constexpr):
            kind = type(value)
            if constexpr:
                if kind not in self._EXACT:
                    return None
                parts.append((kind, value))
            elif kind is int:
                lo, hi = self._INT32
                parts.append((value == 1, value % 16 == 0, lo <= value < hi, value < 2**63))
            elif isinstance(value, _autotriton_torch.Tensor):
                parts.append((value.dtype, value.data_ptr() % 16 == 0))
            elif kind is float or value is None:
                parts.append(kind)
            elif kind is bool:
                parts.append((kind, value))
            else:
                return None
        if kwargs:
            options = []
            for name, value in kwargs.items():
                if name not in self.known:
                    if type(value) not in self._EXACT:
                        return None
                    options.append((name, type(value), value))
            parts.append(tuple(sorted(options)))
        return tuple(parts)

    def globals_changed(self):
        missing = object()
        for (name, _), (value, scope) in self.kernel.used_global_vals.items():
            if scope.get(name, missing) != value:
                return True
        return False


def _autotriton_cached(kernel):
    """The kernel, its launches cached where this Triton allows it (else as it is)."""
    usable = (
        _AutotritonJIT is not None
        and isinstance(kernel, _AutotritonJIT)
        and all(hasattr(kernel, a) for a in ("params", "signature", "used_global_vals"))
    )
    return _AutotritonCachedLaunch(kernel) if usable else kernel


# <<< autotriton: cached launches
