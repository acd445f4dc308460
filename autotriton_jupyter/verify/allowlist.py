"""What a candidate's source may name: the allowlist the lint (static.py) checks against.

A candidate runs with full Python in its worker, and anything the verdict relies on
that Python can walk to could be rewritten by it. So instead of banning known escape
routes one by one, the lint lets through only what honest kernel code needs:

- imports of a few modules, and of them only the named parts listed here (torch's
  public functions, classes and dtypes; triton's launch API; triton.language);
- attributes of values (tensors, containers, loggers, configs ...) by name, from the
  list below, plus any attribute the candidate's own code defines;
- a few built-ins; no dunder access and no computed getattr.

Torch's public names are read from the installed torch, less those that reach the
process, the compiler or global state.
"""

from __future__ import annotations

import functools
import types

IMPORTABLE = frozenset(
    """
    torch torch.nn torch.nn.functional torch.nn.init torch.autograd torch.autograd.function
    torch.amp torch.cuda torch.cuda.amp
    triton triton.language triton.language.extra triton.language.extra.libdevice
    triton.language.extra.cuda triton.language.extra.cuda.libdevice
    triton.language.extra.hip triton.language.extra.hip.libdevice triton.language.math
    triton.runtime triton.runtime.driver
    math typing functools itertools operator dataclasses enum collections __future__
    logging contextlib warnings abc numbers
    """.split()
)

# torch.__all__ names that reach the process, the compiler, files or global state.
_TORCH_DENIED = frozenset(
    """
    compile load save manual_seed seed initial_seed set_rng_state get_rng_state
    set_default_device set_default_dtype set_default_tensor_type use_deterministic_algorithms
    set_deterministic_debug_mode set_float32_matmul_precision set_flush_denormal
    set_num_threads set_num_interop_threads set_warn_always set_printoptions from_numpy
    from_file export cpp default_generator Generator Stream Event StreamObj vmap cond
    while_loop library overrides jit fx sym_int sym_float sym_max sym_min sym_not sym_ite
    sym_sum sym_fresh_size SymInt SymFloat SymBool typename autocast
    UntypedStorage TypedStorage ByteStorage set_autocast_enabled get_device_module
    ExcludeDispatchKeyGuard DispatchKeySet DispatchKey DisableTorchFunction
    DisableTorchFunctionSubclass import_ir_module import_ir_module_from_buffer
    set_grad_enabled set_anomaly_enabled is_anomaly_enabled set_vital
    """.split()
)
# Substrings of torch.__all__ names that switch dispatch, modes or guards (a new torch's
# names of that kind are refused without a list).
_TORCH_DENIED_PARTS = (
    "Dispatch", "Guard", "Disable", "_ir", "Mode", "Hook", "hook", "File", "CompilationUnit",
    "Benchmark", "StaticModule", "ScriptModule", "ScriptFunction", "set_", "parse_",
)
_TORCH_DENIED_EXTRA = frozenset({"fork", "wait", "jit", "classes", "ops", "library"})

# Modules (and names inside them) a candidate may use, beyond torch's own public names.
_EXTRA = {
    "torch": "nn cuda version autograd amp backends Tensor Size dtype device finfo iinfo __version__ "
    "float32 float16 bfloat16 float64 int8 int16 int32 int64 uint8 bool "
    "channels_last channels_last_3d contiguous_format preserve_format strided",
    "torch.nn": "functional init Module Parameter ModuleList ModuleDict Sequential Identity",
    "torch.cuda": "is_available current_device device device_count get_device_properties "
    "get_device_capability get_device_name is_initialized synchronize current_stream amp",
    "torch.cuda.amp": "custom_fwd custom_bwd",
    "torch.amp": "custom_fwd custom_bwd",
    "torch.version": "cuda hip git_version debug",
    # Read to choose a kernel's precision as torch would; assigning them is refused as a patch.
    "torch.backends": "cuda cudnn",
    "torch.backends.cuda": "matmul is_built",
    "torch.backends.cuda.matmul": "allow_tf32 allow_fp16_reduced_precision_reduction "
    "allow_bf16_reduced_precision_reduction",
    "torch.backends.cudnn": "allow_tf32 enabled",
    "torch.autograd": "Function function",
    "torch.autograd.function": "Function once_differentiable FunctionCtx",
    "triton": "jit autotune heuristics Config cdiv next_power_of_2 language runtime __version__",
    "triton.runtime": "driver autotune heuristics Config",
    "triton.runtime.driver": "active",
    "triton.runtime.driver.active": "get_current_device get_current_target "
    "get_active_torch_device utils",
    "triton.runtime.driver.active.utils": "get_device_properties",
    "triton.language.extra": "libdevice cuda hip",
    "functools": "lru_cache cache partial reduce wraps cached_property total_ordering",
    "itertools": "product chain accumulate combinations permutations repeat count islice "
    "starmap zip_longest groupby pairwise",
    "operator": "mul add sub truediv floordiv mod neg pos and_ or_ xor lt le eq ne gt ge "
    "index itemgetter",
    "dataclasses": "dataclass field replace fields",
    "enum": "Enum IntEnum auto",
    "collections": "namedtuple OrderedDict defaultdict deque Counter",
    "logging": "getLogger Logger NullHandler DEBUG INFO WARNING ERROR CRITICAL",
    "contextlib": "contextmanager nullcontext AbstractContextManager",
    "warnings": "warn",
    "abc": "ABC abstractmethod",
    "numbers": "Number Integral Real",
}
# Modules whose every public name is pure computation or description.
_ALL_PUBLIC = (
    "triton.language",
    "triton.language.math",
    "triton.language.extra.libdevice",
    "triton.language.extra.cuda",
    "triton.language.extra.cuda.libdevice",
    "triton.language.extra.hip",
    "triton.language.extra.hip.libdevice",
    "math",
    "typing",
    "torch.nn.functional",
    "torch.nn.init",
)
# Triton's language is a DSL whose names come and go between versions (tl.advance left in
# 3.9): any public name under these is allowed, present here or not, except the internals.
OPEN_NAMESPACES = ("triton.language",)
# Submodules of allowed modules that are still out: internals, hooks, other compilers.
DENIED_PATHS = frozenset(
    """
    triton.language.core triton.language.semantic triton.language.standard
    torch.nn.utils torch.nn.modules torch.nn.parallel torch.nn.attention torch.nn.parameter
    """.split()
)


@functools.lru_cache(maxsize=1)
def module_names() -> dict[str, frozenset[str]]:
    """For each allowed module path, the names under it a candidate may use."""
    import importlib

    names: dict[str, set[str]] = {k: set(v.split()) for k, v in _EXTRA.items()}
    import torch

    names["torch"] |= {
        n
        for n in getattr(torch, "__all__", ())
        if not n.startswith("_")
        and n not in _TORCH_DENIED
        and not any(part in n for part in _TORCH_DENIED_PARTS)
        and n not in _TORCH_DENIED_EXTRA
    }
    nn_public = {
        n
        for n in dir(torch.nn)
        if not n.startswith("_") and isinstance(getattr(torch.nn, n, None), type)
    }
    names["torch.nn"] |= nn_public
    for path in _ALL_PUBLIC:
        try:
            mod = importlib.import_module(path)
        except ImportError:
            continue
        names.setdefault(path, set()).update(
            n for n in dir(mod) if not n.startswith("_") and f"{path}.{n}" not in DENIED_PATHS
        )
    names["triton.language"] -= {"core", "semantic", "standard"}
    # A name that is a module (typing.sys, torch.nn.functional.np, tl.math.core) opens
    # everything that module imported: only modules allowed in their own right stay.
    for path, members in names.items():
        try:
            mod = importlib.import_module(path)
        except ImportError:
            continue
        listed = set(_EXTRA.get(path, "").split())  # named here on purpose: modules only

        def out(n: str, mod: types.ModuleType = mod, listed: set[str] = listed, path: str = path) -> bool:
            value = vars(mod).get(n)
            if n in listed:
                full = f"{path}.{n}"
                return isinstance(value, types.ModuleType) and full not in IMPORTABLE and full not in names
            return _carries_modules(path, n, value, names)

        members -= {n for n in members if out(n)}
    names["typing"] -= _TYPING_EVAL
    return {k: frozenset(v) for k, v in names.items()}


# typing's names that evaluate strings as code (annotations) are out.
_TYPING_EVAL = frozenset({"get_type_hints", "ForwardRef", "evaluate_forward_ref"})
_PLAIN = (int, float, str, bool, bytes, type(None))


def _carries_modules(path: str, name: str, value: object, names: dict) -> bool:
    """Whether a module's name leads outside the allowlist: a module not allowed in its
    own right, a container (sys.modules imported under another name), or a function,
    class or object from outside torch, triton and the standard modules allowed."""
    full = f"{path}.{name}"
    if isinstance(value, types.ModuleType):
        return full not in IMPORTABLE and full not in names
    if value is None or isinstance(value, _PLAIN):
        return False
    if isinstance(value, dict | list | tuple | set | frozenset):
        return True
    owner = getattr(value, "__module__", None) or getattr(type(value), "__module__", "") or ""
    if not isinstance(owner, str):
        return True
    root = owner.split(".")[0]
    return root not in _VALUE_ROOTS or owner.startswith(_FOREIGN_INSIDE)


# Where a name's value may come from (functions, classes, objects) ...
_VALUE_ROOTS = frozenset(
    "torch triton math typing functools itertools operator dataclasses enum collections "
    "logging contextlib warnings abc numbers builtins _operator _functools _collections "
    "_collections_abc".split()
)
# ... except these corners of them, which reach importers, the dispatcher or the process.
_FOREIGN_INSIDE = ("torch._C._dispatch", "torch.utils._python_dispatch", "torch._dynamo",
                   "torch._ops", "torch.overrides", "triton.runtime.jit", "triton.knobs")


@functools.lru_cache(maxsize=4096)
def opens_a_module(prefix: str, name: str) -> bool:
    """Whether prefix.name (in an open namespace) leads outside the allowlist (see
    _carries_modules): `triton.language.extra.modules` is sys.modules, for one."""
    import importlib

    path = f"{prefix}.{name}"
    if path in IMPORTABLE or path in module_names():
        return False
    try:
        value = vars(importlib.import_module(prefix)).get(name)
    except ImportError:
        return False
    return _carries_modules(prefix, name, value, module_names())


# The modules whose objects hold the judge's state inside a worker.
_JUDGE_MODULES = ("probes", "worker", "timing", "wire", "forkserver", "confine")


@functools.lru_cache(maxsize=1)
def judge_names() -> frozenset[str]:
    """Names of the judge's own attributes, methods and globals in a worker.

    A candidate's own attributes are allowed by name on any value, but never these on
    anything but `self`: a candidate that got hold of a judge object (an op audit, a
    launch counter) could otherwise read or rewrite it just by defining an attribute of
    the same name in its own class.
    """
    import ast
    from pathlib import Path

    here = Path(__file__).parent
    out: set[str] = set()
    for stem in _JUDGE_MODULES:
        tree = ast.parse((here / f"{stem}.py").read_text())
        bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        for body in bodies:  # globals, and class-level names
            for node in body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    out.add(node.name)
                for t in ast.walk(node) if isinstance(node, ast.Assign | ast.AnnAssign) else ():
                    if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store):
                        out.add(t.id)
        for node in ast.walk(tree):  # attributes set on objects (self.x = ...)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                out.add(node.attr)
    return frozenset(n for n in out if n not in VALUE_ATTRS and not n.startswith("__"))


# Attributes any value may have used by name: tensor metadata, views and methods (compute
# methods are allowed here and judged at run time by the op audit), containers, strings,
# loggers, configs, devices, dtypes, device properties, nn layers, autograd contexts, and
# what Triton's own objects expose to ordinary code.
VALUE_ATTRS = frozenset(
    """
    shape size stride numel dim ndim ndimension dtype device is_cuda is_cpu is_contiguous
    is_floating_point is_complex is_signed element_size itemsize nbytes data_ptr storage_offset
    requires_grad grad T mT layout is_leaf
    contiguous view view_as reshape reshape_as flatten unflatten unsqueeze squeeze permute
    transpose t expand expand_as narrow select unbind split chunk movedim swapaxes
    new_empty new_zeros new_ones new_full new_tensor to type float half bfloat16 double int
    long bool short byte char cuda clone detach copy_ fill_ zero_ requires_grad_ masked_fill_
    sum mean max min amax amin argmax argmin exp exp2 log log2 log1p expm1 sqrt rsqrt abs neg
    pow clamp clamp_ clip add sub mul div matmul mm bmm softmax log_softmax sigmoid tanh relu
    cumsum cumprod cos sin outer repeat repeat_interleave masked_fill where index_select gather
    scatter scatter_add sort topk all any eq ne lt le gt ge isnan isinf isfinite sign floor ceil
    round triu tril norm var std prod flip roll erf reciprocal square fmod remainder
    append extend insert pop remove index count copy keys values items get setdefault update
    join strip lstrip rstrip startswith endswith lower upper replace format isdigit partition
    debug info warning warn error critical exception setLevel isEnabledFor addHandler
    data uniform_ normal_ get_device type_as tiny bits resolution smallest_normal
    kwargs num_warps num_stages num_ctas maxnreg all_kwargs best_config
    n_regs n_spills metadata shared name major minor total_memory multi_processor_count
    L2_cache_size warp_size regs_per_multiprocessor max_threads_per_multi_processor
    shared_memory_per_block_optin shared_memory_per_multiprocessor
    index backend arch
    weight bias in_features out_features eps normalized_shape elementwise_affine
    kernel_size padding dilation groups num_embeddings embedding_dim padding_idx
    negative_slope inplace training approximate p
    register_buffer register_parameter parameters named_parameters buffers named_buffers
    modules children eval train forward
    save_for_backward saved_tensors mark_non_differentiable needs_input_grad
    set_materialize_grads apply
    warmup
    real imag
    element_ty primitive_bitwidth scalar value is_floating is_int is_int_signed is_fp16
    is_bf16 is_fp32 is_fp64 is_ptr is_block trans
    """.split()
)

# Attributes no candidate may use, even if its own code defines an attribute of that name:
# frames, code and tracebacks (they reach the judge's state), and Triton's launch hooks.
NEVER_ATTRS = frozenset(
    """
    gi_frame gi_code gi_yieldfrom gi_running cr_frame cr_code cr_await ag_frame ag_code
    f_back f_globals f_locals f_builtins f_code f_trace f_lineno tb_frame tb_next tb_lasti
    co_code co_consts co_names co_varnames func_globals func_code
    _do_bench do_bench pre_hook post_hook early_config_prune perf_model pre_run_hooks
    add_pre_run_hook launch_enter_hook launch_exit_hook knobs
    apply_ map_ map2_ findCaller manager loggerDict makeRecord callHandlers currentframe
    """.split()
)

# Tensor methods that bring device data to the host: named in their own check.
HOST_METHODS = frozenset({"cpu", "numpy", "tolist", "item"})

BUILTINS = frozenset(
    """
    range len min max abs int float bool str tuple list dict set frozenset zip enumerate
    isinstance issubclass sum any all sorted reversed round divmod pow print super property
    staticmethod classmethod getattr hasattr callable map filter iter next slice repr format
    hash object NotImplemented Ellipsis None True False
    Exception ValueError TypeError RuntimeError NotImplementedError AssertionError KeyError
    IndexError ArithmeticError ZeroDivisionError OverflowError AttributeError ImportError
    ModuleNotFoundError Warning UserWarning RuntimeWarning DeprecationWarning
    """.split()
)

# Dunder methods a candidate's own class may define (others hook into Python or torch).
DUNDER_DEFS = frozenset(
    """
    __init__ __call__ __repr__ __str__ __len__ __getitem__ __iter__ __next__ __enter__
    __exit__ __post_init__ __eq__ __hash__ __lt__
    """.split()
)

# Base classes a candidate's class may have (besides its own classes).
BASES = frozenset(
    """
    torch.nn.Module torch.nn.modules.module.Module torch.autograd.Function
    torch.autograd.function.Function object typing.NamedTuple enum.Enum enum.IntEnum abc.ABC
    """.split()
)

# Calls a lambda may make: pure arithmetic on launch metadata and sizes.
PURE_CALLS = frozenset(
    """
    triton.cdiv triton.next_power_of_2 min max int float abs len bool round tuple
    """.split()
)
PURE_METHODS = frozenset({"size", "stride", "numel", "dim", "element_size", "is_contiguous", "get"})

# Arguments of triton.autotune / triton.Config / triton.heuristics that run code at launch.
CODE_ARGUMENTS = {
    # prune_configs_by runs in Autotuner.run, under the op audit; these run inside Triton's
    # own benchmarking of configs, where the audit must be off.
    "autotune": frozenset({"pre_hook", "post_hook", "do_bench"}),
    "Config": frozenset({"pre_hook"}),
}
