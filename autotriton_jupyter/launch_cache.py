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

# >>> autotriton: cached launches (v1)
# Added by autotriton after this kernel was verified: launches skip Triton's per-call
# host work once the same specialisation was compiled. The lines at its end wrap the
# kernels. Keep it as it is (the verifier knows it by its exact text), or delete it,
# down to the closing marker line, to launch as written. A wrapped kernel cannot be
# called from inside another kernel: delete its line here first.
from triton.runtime import driver as _autotriton_driver

try:
    from triton.runtime.jit import JITFunction as _AutotritonJIT
except ImportError:  # another Triton: kernels are launched as written
    _AutotritonJIT = None


class _AutotritonCachedLaunch:
    """A @triton.jit kernel, launched through the kernel Triton compiled for the same
    specialisation.

    The key holds all that Triton specialises a kernel on, and more: the current
    device; each tensor's dtype and 16-byte alignment; each int's being 1, its
    divisibility by 16 and its width; which other scalar each is; the exact value of
    every constexpr and launch option. Any change of them goes through Triton's own
    path, which compiles (or finds) the right kernel; so does any argument of another
    kind, a kernel with pre-run hooks, and a change of a global the kernel reads
    (Triton then raises, as it would). Triton's settings that it reads on each launch
    (`triton.knobs`, TRITON_DEBUG) are those of each specialisation's first one.
    """

    _EXACT = (int, float, bool, str, type(None))

    def __init__(self, kernel):
        self.kernel = kernel
        params = list(kernel.params)
        self.names = tuple(p.name for p in params)
        self.known = frozenset(self.names)
        self.constexpr = tuple(bool(p.is_constexpr) for p in params)
        signature = kernel.signature.parameters
        self.defaults = {}
        for name in self.names:
            if signature[name].default is not signature[name].empty:
                self.defaults[name] = signature[name].default
        self.hooks = getattr(kernel, "pre_run_hooks", ())  # Triton appends to it
        self.compiled = {}

    def __getattr__(self, name):  # the rest is the kernel's own (warmup, fn, ...)
        if name == "kernel":  # not made yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.kernel, name)

    def current_device(self):  # Triton's, found at the first launch (none at import)
        self.current_device = _autotriton_driver.active.get_current_device
        return self.current_device()

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            return self.launch(grid, args, kwargs)

        return launch

    def launch(self, grid, args, kwargs):
        values = args
        if kwargs or len(args) != len(self.names):
            values = self.bind(args, kwargs)
        key = None if values is None else self.key(values, kwargs)
        compiled = None if key is None else self.compiled.get(key)
        kernel = self.kernel
        stale = kernel.used_global_vals and self.globals_changed()
        if compiled is None or self.hooks or stale:
            compiled = kernel[grid](*args, **kwargs)  # Triton's own path
            if key is not None and hasattr(compiled, "__getitem__"):
                self.compiled[key] = compiled
            return compiled
        if callable(grid):
            grid = grid(dict(zip(self.names, values)))
        size = len(grid)
        grid = (grid[0], grid[1] if size > 1 else 1, grid[2] if size > 2 else 1)
        compiled[grid](*values)
        return compiled

    def bind(self, args, kwargs):
        """The arguments in the kernel's order, defaults filled in (None: to Triton)."""
        if len(args) > len(self.names):
            return None
        for name in self.names[: len(args)]:
            if name in kwargs:  # given twice: Triton says so
                return None
        values = list(args)
        for name in self.names[len(values) :]:
            if name in kwargs:
                values.append(kwargs[name])
            elif name in self.defaults:
                values.append(self.defaults[name])
            else:
                return None
        return values

    def key(self, values, kwargs):
        parts = [self.current_device()]
        for value, constexpr in zip(values, self.constexpr):
            kind = type(value)
            if constexpr:
                if kind not in self._EXACT:
                    return None
                parts.append((kind, value))
            elif kind is int:
                i32 = -(2**31) <= value < 2**31
                parts.append((value == 1, value % 16 == 0, i32, value < 2**63))
            elif hasattr(value, "data_ptr") and hasattr(value, "dtype"):
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
    needs = ("params", "signature", "used_global_vals")
    usable = (
        _AutotritonJIT is not None
        and isinstance(kernel, _AutotritonJIT)
        and all(hasattr(kernel, a) for a in needs)
    )
    return _AutotritonCachedLaunch(kernel) if usable else kernel


# <<< autotriton: cached launches
