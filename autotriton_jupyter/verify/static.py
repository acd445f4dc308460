"""Static lint of a candidate's source, run before any of it executes: an allowlist.

A candidate may name only what honest kernel code needs (allowlist.py): a few modules
and their listed parts, value attributes by name, a few built-ins. Everything else is
refused by one of a few general rules, so a new escape route is closed without being
foreseen. Names are resolved through the candidate's own imports and aliases, and
`getattr(x, "literal")` is read as `x.literal`, so `import torch as T; T.os` and
`getattr(torch, "os")` are the same thing.

Host code (helpers, decorator arguments, config lists) may be written as people write
it; what runs at launch time outside the kernel (grid and heuristic lambdas) must be
pure arithmetic, and autotune/Config hooks are refused: they run where the judge's
audit cannot tell them from the launch.

Length: one lint; its general rules and the walker that applies them are read together
(the name tables are in allowlist.py).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field

from ..task import parse_source
from . import allowlist as allow

# Built-ins that are not on the allowlist and why, for a clearer message.
_BUILTIN_WHY = {
    "eval": "runs code the lint cannot see",
    "exec": "runs code the lint cannot see",
    "compile": "builds code the lint cannot see",
    "__import__": "imports code the lint cannot see",
    "globals": "reaches into module state",
    "locals": "reaches into the caller's frame",
    "vars": "reaches into any object's state",
    "dir": "lists what it was not given",
    "open": "reads or writes files",
    "breakpoint": "stops the process",
    "input": "waits for input",
    "setattr": "changes objects by computed name",
    "delattr": "changes objects by computed name",
    "type": "reaches classes and their internals",
    "id": "reads memory addresses",
    "memoryview": "reads raw memory",
}
_PRIVATE_OK = {"__init__", "__version__"}
# NamedTuple's public API, which is spelled with a leading underscore.
_NAMEDTUPLE = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})
_SIDE_STREAM = {"Stream", "stream", "set_stream", "ExternalStream", "StreamContext"}
_NAME_OK_IN = {"logging.getLogger"}  # where __name__ may appear (a logger's name)


@dataclass
class Problem:
    """One lint failure: the check it belongs to, the line, and a sentence for the user."""

    check: str
    line: int
    message: str


@dataclass
class LintResult:
    """Problems that fail the candidate, and notes that do not."""

    problems: list[Problem]
    notes: list[str]
    kernels: list[str]


def _dotted(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _literal_getattr(node: ast.expr) -> tuple[ast.expr, str] | None:
    """(object, name) for getattr/hasattr(obj, "name"[, default]) with a literal name."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
        and 2 <= len(node.args) <= 3
        and not node.keywords
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[0], node.args[1].value
    return None


@dataclass
class _Scope:
    """What the candidate's own code defines: names, attributes, classes, kernels, aliases."""

    aliases: dict[str, set[str]] = field(default_factory=dict)  # name -> module/attr paths
    defined: set[str] = field(default_factory=set)
    attrs: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    kernel_bodies: set[str] = field(default_factory=set)
    kernels: list[str] = field(default_factory=list)
    module_bound: dict[str, int] = field(default_factory=dict)  # module-level names -> line


def module_bindings(tree: ast.Module) -> dict[str, int]:
    """Names bound in the module's scope (where a kernel's global lookups land, before the
    builtins), with the line of their first binding: its definitions, imports and
    assignment targets at any depth of its statements (module-level if/for/with/try
    included), walrus targets in its comprehensions, and names a function declares
    `global` (its assignments to them bind the module's); not the locals of functions,
    classes, lambdas or comprehension variables."""
    out: dict[str, int] = {}

    def bind(name: str, node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        out[name] = min(out.get(name, line), line)

    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            if not isinstance(node, ast.Lambda):
                bind(node.name, node)
            for inner in ast.walk(node):  # `global x` anywhere inside binds the module's x
                if isinstance(inner, ast.Global):
                    for name in inner.names:
                        bind(name, inner)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            for a in node.names:
                bind((a.asname or a.name).split(".")[0], node)
            continue
        if isinstance(node, ast.comprehension):  # its target is the comprehension's own
            todo.extend([node.iter, *node.ifs])
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bind(node.id, node)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bind(node.name, node)
        todo.extend(ast.iter_child_nodes(node))
    return out


class _Paths:
    """Resolution of expressions to dotted paths rooted at an allowed module."""

    def __init__(self, scope: _Scope) -> None:
        self.scope = scope
        self.names = allow.module_names()

    def path(self, node: ast.expr) -> list[str] | None:
        """Every dotted path an expression may stand for, when rooted at an imported name."""
        got = _literal_getattr(node)
        if got is not None:
            inner = self.path(got[0])
            return [f"{p}.{got[1]}" for p in inner] if inner else None
        if isinstance(node, ast.Attribute):
            inner = self.path(node.value)
            return [f"{p}.{node.attr}" for p in inner] if inner else None
        if isinstance(node, ast.Name) and node.id in self.scope.aliases:
            return sorted(self.scope.aliases[node.id])
        return None

    def is_module(self, path: str) -> bool:
        return path in self.names or path in allow.IMPORTABLE

    def check(self, path: str) -> tuple[str, str] | None:
        """(check, reason) when a module-rooted path leaves the allowlist, else None."""
        parts = path.split(".")
        prefix = parts[0]
        i = 1
        while i < len(parts) and self.is_module(prefix):
            name = parts[i]
            allowed = self.names.get(prefix, frozenset())
            open_ns = prefix.startswith(allow.OPEN_NAMESPACES) and not name.startswith("_")
            if (
                open_ns
                and f"{prefix}.{name}" not in allow.DENIED_PATHS
                and not allow.opens_a_module(prefix, name)
            ):
                allowed = allowed | {name}
            if f"{prefix}.{name}" not in allow.IMPORTABLE and name not in allowed:
                if name.startswith("_") and name not in _PRIVATE_OK:
                    return "private_api", f"uses the private {prefix}.{name}"
                if name in _SIDE_STREAM:
                    return "side_stream", f"uses {prefix}.{name}: work on a side stream escapes the timer"
                return "not_allowed", (
                    f"uses {prefix}.{name}, which is not among the parts of {prefix} a "
                    "candidate may use"
                )
            prefix = f"{prefix}.{name}"
            i += 1
        for name in parts[i:]:
            why = _value_attr_problem(name, self.scope)
            if why:
                return why
        return None


# Tensor attributes that hold data, not behaviour: `self.weight.data = ...` is fine.
_DATA_ATTRS = frozenset({"data", "requires_grad", "grad", "training"})

# Dunder names a class body or the module may bind by assignment: plain data.
_DUNDER_VALUES = frozenset({"__all__", "__slots__", "__doc__", "__version__", "__constants__"})

# nn.Module methods that give a module an attribute named by a string.
_REGISTERS = frozenset({"register_buffer", "register_parameter", "register_module", "add_module"})
_OWN_OBJECTS = ("self", "cls", "ctx")  # a method's own object, and autograd's context


# Leaf names of torch's and triton's modules that reach their machinery.
_MACHINERY = frozenset(
    """
    jit runtime compiler driver backends library ops utils fx multiprocessing distributed
    hub package overrides testing interpreter autotuner knobs
    """.split()
)


@functools.lru_cache(maxsize=1)
def _module_names() -> frozenset[str]:
    """Names that, as a candidate's own attribute on another value, could name a module that
    value holds: the standard library's modules, every loaded package's top-level name,
    and torch's and triton's machinery. Fixed, not every name of every loaded module, so
    that the lint says the same in a notebook as on the command line, and a field named
    `activation` or `config` stays the candidate's."""
    import sys

    roots = {m.split(".")[0] for m in list(sys.modules)}
    return frozenset(sys.stdlib_module_names) | roots | _MACHINERY


@functools.lru_cache(maxsize=1)
def _module_attr_names() -> frozenset[str]:
    """Every attribute nn.Module's class has (the judge calls some of them on the model)."""
    import torch

    return frozenset(dir(torch.nn.Module))


@functools.lru_cache(maxsize=1)
def _tensor_names() -> frozenset[str]:
    """Every attribute a tensor has, or a CUDA stream or event: as a candidate's own
    attribute on another value, such a name would reach that object's own method (map2_,
    apply_, a stream's query() that tells calls in a row from synchronised ones ...), not
    the candidate's."""
    import torch

    return frozenset(dir(torch.Tensor)) | _STREAM_NAMES


# A stream's and an event's own names, written out: dir() of torch.cuda.Stream differs
# between CUDA and CPU builds, and the lint must say the same on both.
_STREAM_NAMES = frozenset(
    {
        "cuda_event", "cuda_stream", "device", "device_index", "device_type", "elapsed_time",
        "event_id", "from_ipc_handle", "ipc_handle", "is_capturing", "native_handle",
        "priority", "priority_range", "query", "record", "record_event", "stream_id",
        "synchronize", "wait", "wait_event", "wait_stream",
    }
)


def _in_function(node: ast.AST, fn: ast.AST) -> bool:
    """Whether node belongs to fn's own body (not to a function or class nested in it)."""
    parent = getattr(node, "_parent", None)
    while parent is not None and parent is not fn:
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            return False
        parent = getattr(parent, "_parent", None)
    return parent is fn


def _on_own_object(node: ast.expr) -> bool:
    """Whether node is self/cls/ctx as a method's own object: the name bound as the first
    parameter of a function defined directly in a class body (seen from it or from a
    function nested in it). The first parameter of any other function is a plain value."""
    if not (isinstance(node, ast.Name) and node.id in _OWN_OBJECTS):
        return False
    scope = getattr(node, "_parent", None)
    while scope is not None:
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            a = scope.args
            params = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
            params += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
            if node.id in params:
                first = (a.posonlyargs + a.args)[:1]
                in_class = isinstance(getattr(scope, "_parent", None), ast.ClassDef)
                return in_class and bool(first) and first[0].arg == node.id
        scope = getattr(scope, "_parent", None)
    return False


def _value_attr_problem(name: str, scope: _Scope, own: bool = False) -> tuple[str, str] | None:
    """Why `.name` may not be used (own: on self, cls or ctx), or None.

    The candidate's own attribute names are allowed, but on other values only when
    public and not a name of the judge's own objects (allowlist.judge_names).
    """
    if name.startswith("__") and name.endswith("__"):
        if name in _PRIVATE_OK:
            return None
        return "introspection", f"uses {name}, which can reach or change objects it was not given"
    if name in allow.HOST_METHODS:
        return "host_compute", f".{name}() moves data to the host; all compute must stay in the candidate's Triton kernels"
    if name in allow.NEVER_ATTRS:
        return "introspection", f"uses .{name}, which reaches frames, code or launch hooks"
    if name in allow.VALUE_ATTRS:
        return None
    if name in scope.attrs:
        if own or not (
            name.startswith("_")
            or name in allow.judge_names()
            or name in _module_names()
            or name in _tensor_names()
        ):
            return None
        return "not_allowed", (
            f"uses .{name} on something other than self, cls or ctx: the candidate defines "
            f".{name}, but .{name} is also private, a name of the judge's, of a module or of "
            "an attribute of a tensor, a CUDA stream or an event, which a candidate may use as "
            "its own only on self, cls or ctx"
        )
    if name in _NAMEDTUPLE:
        return None
    if name.startswith("_"):
        return "private_api", f"uses the private attribute .{name}"
    return "not_allowed", (
        f"uses .{name}, which is not among the attributes a candidate may use (tensor "
        "methods and metadata, containers, configs, its own attributes)"
    )


def _collect(tree: ast.Module) -> _Scope:
    scope = _Scope()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    scope.aliases[a.asname] = {a.name}
                else:
                    root = a.name.split(".")[0]
                    scope.aliases[root] = {root}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                scope.aliases[a.asname or a.name] = {f"{node.module}.{a.name}"}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            scope.defined.add(node.name)
            if isinstance(node, ast.ClassDef):
                scope.classes.add(node.name)
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                        scope.attrs.add(item.name)
                    elif isinstance(item, ast.Assign):
                        scope.attrs.update(t.id for t in item.targets if isinstance(t, ast.Name))
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        scope.attrs.add(item.target.id)
            args = node.args if not isinstance(node, ast.ClassDef) else None
            if args is not None:
                for a in args.posonlyargs + args.args + args.kwonlyargs:
                    scope.defined.add(a.arg)
                for a in (args.vararg, args.kwarg):
                    if a is not None:
                        scope.defined.add(a.arg)
        elif isinstance(node, ast.Lambda):
            for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
                scope.defined.add(a.arg)
            for a in (node.args.vararg, node.args.kwarg):
                if a is not None:
                    scope.defined.add(a.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            scope.defined.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if not (node.attr.startswith("__") and node.attr.endswith("__")):
                scope.attrs.add(node.attr)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            scope.defined.add(node.name)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
            # namedtuple("T", ["a", "b"]) / field names given as strings
            fn = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if fn in _REGISTERS and node.args and isinstance(node.args[0], ast.Constant):
                if isinstance(node.args[0].value, str):  # self.register_buffer("scale", ...)
                    scope.attrs.add(node.args[0].value)
            if fn == "namedtuple" and len(node.args) >= 2:
                fields = node.args[1]
                if isinstance(fields, ast.List | ast.Tuple):
                    scope.attrs.update(
                        e.value for e in fields.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
                    )
                elif isinstance(fields, ast.Constant) and isinstance(fields.value, str):
                    scope.attrs.update(fields.value.replace(",", " ").split())
    return scope


def _module_aliases(tree: ast.Module, scope: _Scope, paths: _Paths) -> None:
    """`lib = tl.extra.cuda.libdevice`: a name bound to an allowed module is an alias of it."""
    for _ in range(3):  # aliases of aliases
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                got = paths.path(node.value)
                if got and all(paths.is_module(p) for p in got):
                    scope.aliases.setdefault(node.targets[0].id, set()).update(got)


_TRITON_WRAPPERS = {"triton.jit", "triton.autotune", "triton.heuristics", "triton.runtime.jit",
                    "triton.runtime.autotune", "triton.runtime.heuristics"}


def _triton_wrapper(node: ast.expr, paths: _Paths) -> str | None:
    target = node.func if isinstance(node, ast.Call) else node
    for p in paths.path(target) or []:
        if p in _TRITON_WRAPPERS:
            return p.rsplit(".", 1)[-1]
    return None


def _kernels(tree: ast.Module, scope: _Scope, paths: _Paths) -> None:
    """Kernel bodies: @triton.jit functions, and functions wrapped in call form."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
            _triton_wrapper(d, paths) for d in node.decorator_list
        ):
            scope.kernel_bodies.add(node.name)
            scope.kernels.append(node.name)
    # f = triton.jit(g); f = triton.heuristics({...})(triton.jit(g)); f = triton.jit(fn=g)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        wrapper = _triton_wrapper(node.func, paths) if isinstance(node.func, ast.Call) else None
        direct = _triton_wrapper(node, paths) if not isinstance(node.func, ast.Call) else None
        if not (wrapper or direct == "jit"):
            continue
        args = list(node.args) + [k.value for k in node.keywords if k.arg == "fn"]
        for a in args:
            if isinstance(a, ast.Name) and a.id not in scope.kernel_bodies and a.id in scope.defined:
                scope.kernel_bodies.add(a.id)
                scope.kernels.append(a.id)


class _Linter(ast.NodeVisitor):
    def __init__(self, scope: _Scope, paths: _Paths) -> None:
        self.scope = scope
        self.paths = paths
        self.problems: list[Problem] = []
        self.notes: list[str] = []
        self.function_depth = 0
        self.top_level: set[int] = set()  # ids of the module's own statements
        self.in_kernel = False
        self.seen: set[tuple[int, str]] = set()

    def fail(self, check: str, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 0)
        if (line, message) in self.seen:
            return
        self.seen.add((line, message))
        self.problems.append(Problem(check, line, f"line {line}: {message}."))

    # imports -----------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self.visit_alias(a)
            if a.name not in allow.IMPORTABLE:
                self.fail(
                    "forbidden_import", node,
                    f"imports {a.name}; a candidate may import only torch, triton, their "
                    "listed parts and a few standard helpers (math, functools, logging ...)",
                )

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for a in node.names:
            self.visit_alias(a)
        if node.level or not node.module:
            self.fail("forbidden_import", node, "relative imports cannot be checked; import by full name")
            return
        if node.module not in allow.IMPORTABLE:
            self.fail(
                "forbidden_import", node,
                f"imports from {node.module}; a candidate may import only torch, triton, "
                "their listed parts and a few standard helpers",
            )
            return
        for a in node.names:
            full = f"{node.module}.{a.name}"
            if a.name == "*":
                self.fail("forbidden_import", node, f"`from {node.module} import *` hides which names are used")
                continue
            bad = self.paths.check(full)
            if bad:
                check, why = bad
                self.fail("forbidden_import" if check == "not_allowed" else check, node, f"imports {full}: {why}")

    # functions, classes and kernels ----------------------------------------------------
    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:  # decorator arguments are host code, not kernel code
            self.visit(d)
        if isinstance(node, ast.AsyncFunctionDef):
            self.fail(
                "introspection", node,
                f"async def {node.name}: a coroutine's cleanup runs whenever it is collected, "
                "outside the audit; kernels need no coroutines",
            )
        own = [n for n in ast.walk(node) if _in_function(n, node)]
        if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in own):
            for n in own:
                if isinstance(n, ast.Try | ast.TryStar | ast.AsyncWith) or (
                    isinstance(n, ast.With) and not all(self._torch_context(i) for i in n.items)
                ):
                    self.fail(
                        "introspection", n,
                        f"the generator {node.name} has a try block, or a with block over a "
                        "context manager of its own: that cleanup runs when the generator is "
                        "collected, at any time, outside the audit; a generator may only yield, "
                        "inside torch's own context managers (torch.cuda.device, torch.no_grad)",
                    )
        if node.name.startswith("__") and node.name.endswith("__") and node.name not in allow.DUNDER_DEFS:
            self.fail(
                "introspection", node,
                f"defines {node.name}, which hooks into Python or torch where the judge does not look",
            )
        was = self.in_kernel
        self.in_kernel = was or node.name in self.scope.kernel_bodies
        self.function_depth += 1
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)
        a = node.args  # annotations run when the def runs: they are host code too
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None and arg.annotation is not None:
                self.visit(arg.annotation)
        if node.returns is not None:
            self.visit(node.returns)
        if node.name == "__exit__":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and not (
                    sub.value is None
                    or isinstance(sub.value, ast.Constant) and sub.value.value in (None, False)
                ):
                    self.fail(
                        "try_except", sub,
                        "__exit__ may not return a value: one that is true swallows the "
                        "exception, a try/except by another name",
                    )
        for stmt in node.body:
            self.visit(stmt)
        self.function_depth -= 1
        self.in_kernel = was

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for b in node.bases:
            if isinstance(b, ast.Name) and b.id in self.scope.classes:
                continue
            got = self.paths.path(b) or []
            if not got or not all(p in allow.BASES for p in got):
                if node.name == "ModelNew":
                    continue  # _check_model_new says it better
                self.fail(
                    "not_allowed", node,
                    f"class {node.name} derives from {ast.unparse(b)}; a candidate's classes may "
                    "derive from nn.Module, torch.autograd.Function, object or its own classes",
                )
        for k in node.keywords:
            self.fail("introspection", node, f"class {node.name} takes {k.arg}=, which changes how Python builds it")
        for d in node.decorator_list:
            self.visit(d)
        for stmt in node.body:
            self.visit(stmt)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        """Grid, heuristic and key lambdas run at launch time: pure arithmetic only."""
        for sub in ast.walk(node.body):
            if isinstance(sub, ast.Call):
                if self._pure_call(sub):
                    continue
                self.fail(
                    "launch_hook", sub,
                    f"a lambda calls {ast.unparse(sub.func)}(); a lambda may only do arithmetic "
                    "on sizes and launch parameters (grids and heuristics run inside launches, "
                    "and the lint cannot tell where a lambda goes); write a def instead",
                )
            elif isinstance(sub, ast.Lambda | ast.NamedExpr | ast.Yield | ast.Await):
                self.fail("launch_hook", sub, "a lambda may only do arithmetic on sizes and launch parameters")
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)
        self.visit(node.body)

    def _pure_call(self, node: ast.Call) -> bool:
        f = node.func
        if isinstance(f, ast.Name) and f.id in allow.BUILTINS and f.id not in self.scope.defined:
            return f"{f.id}" in allow.PURE_CALLS
        got = self.paths.path(f)
        if got:
            return all(p in allow.PURE_CALLS or p.startswith("math.") for p in got)
        return isinstance(f, ast.Attribute) and f.attr in allow.PURE_METHODS

    def visit_Try(self, node: ast.Try) -> None:
        only_imports = all(isinstance(s, ast.Import | ast.ImportFrom) for s in node.body)
        # try/finally with no except hides nothing, unless its finally leaves the block.
        cleanup = not node.handlers and not node.orelse and not any(
            isinstance(sub, ast.Return | ast.Break | ast.Continue)
            for st in node.finalbody
            for sub in ast.walk(st)
        )
        if not cleanup and (self.function_depth or not only_imports):
            self.fail(
                "try_except", node,
                "try/except can hide a fallback to PyTorch when the kernel fails; remove it "
                "so failures are visible",
            )
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_Global(self, node: ast.Global) -> None:
        self.notes.append(
            f"line {node.lineno}: `global` state can carry results between calls; "
            "the stale-cache trial checks for that."
        )

    # names and attributes ----------------------------------------------------------------
    def _dunder_bound(self, name: str, node: ast.AST) -> None:
        """Binding a dunder name (`__exit__ = f` in a class, `for __del__ in ...`, `import x
        as __getattr__`) hooks into Python as a def would, without the def's checks."""
        if name.startswith("__") and name.endswith("__") and name not in _DUNDER_VALUES:
            self.fail(
                "introspection", node,
                f"binds {name}; a candidate may define only the dunder methods it is allowed, "
                "with def",
            )

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._dunder_bound(node.name, node)
        self.generic_visit(node)

    def visit_alias(self, node: ast.alias) -> None:
        if node.asname:
            self._dunder_bound(node.asname, node)

    def visit_If(self, node: ast.If) -> None:
        """`if __name__ == "__main__":` at the top level never runs in the judge (no name can
        be bound to __name__): its body, a self-test or benchmark, is not linted."""
        t = node.test
        if (
            self.function_depth == 0
            and isinstance(t, ast.Compare)
            and isinstance(t.left, ast.Name)
            and t.left.id == "__name__"
            and len(t.ops) == 1
            and isinstance(t.ops[0], ast.Eq)
            and isinstance(t.comparators[0], ast.Constant)
            and t.comparators[0].value == "__main__"
            and id(node) in self.top_level
        ):
            for stmt in node.orelse:
                self.visit(stmt)
            return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if not isinstance(node.ctx, ast.Load):
            self._dunder_bound(name, node)
            return
        if name == "__name__":
            if not self._name_allowed_here(node):
                self.fail(
                    "introspection", node,
                    "reads __name__, which tells the candidate how it is being run; use it only "
                    "to name a logger or in `if __name__ == \"__main__\":`",
                )
            return
        if name.startswith("__") and name.endswith("__"):
            self.fail("introspection", node, f"uses {name}, which can reach or change objects it was not given")
            return
        if name in self.scope.aliases:
            parent = getattr(node, "_parent", None)
            if not (isinstance(parent, ast.Attribute) and parent.value is node) and not self._getattr_base(node):
                for p in self.scope.aliases[name]:
                    if self.paths.is_module(p):
                        self.fail(
                            "module_alias", node,
                            f"the module {p} is stored or passed around; use it only as `module.name`",
                        )
                        return
                self._check_paths(node)
            if self.in_kernel:
                self._kernel_name(node)
            return
        if name in ("getattr", "hasattr") and name not in self.scope.defined:
            parent = getattr(node, "_parent", None)
            if not (isinstance(parent, ast.Call) and parent.func is node):
                self.fail(
                    "dynamic_access", node,
                    f"passes {name} around as a value; call it only as {name}(obj, \"literal\")",
                )
                return
        if name in self.scope.defined:
            return
        if name in allow.BUILTINS:
            return
        why = _BUILTIN_WHY.get(name, "is not among the built-ins a candidate may use")
        self.fail("forbidden_call", node, f"uses {name}, which {why}")

    def _getattr_base(self, node: ast.Name) -> bool:
        parent = getattr(node, "_parent", None)
        return isinstance(parent, ast.Call) and _literal_getattr(parent) is not None and parent.args[0] is node

    def _name_allowed_here(self, node: ast.Name) -> bool:
        parent = getattr(node, "_parent", None)
        if isinstance(parent, ast.Compare) and len(parent.comparators) == 1:
            other = parent.comparators[0] if parent.left is node else parent.left
            return isinstance(other, ast.Constant) and other.value == "__main__"
        if isinstance(parent, ast.Call) and node in parent.args:
            return any(p in _NAME_OK_IN for p in self.paths.path(parent.func) or [])
        return False

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in ("format", "format_map"):
            parent = getattr(node, "_parent", None)
            if not (isinstance(parent, ast.Call) and parent.func is node):
                self.fail(
                    "dynamic_access", node,
                    ".format is only called on a string literal, never taken as a value",
                )
        got = self.paths.path(node)
        if got is not None:
            parent = getattr(node, "_parent", None)
            if not (isinstance(parent, ast.Attribute) and parent.value is node):
                self._check_paths(node)
                if not self._getattr_base(node) and any(self.paths.is_module(p) for p in got):
                    self.fail(
                        "module_alias", node,
                        f"the module {got[0]} is stored or passed around; use it only as "
                        "`module.name`",
                    )
            if self.in_kernel:
                self._kernel_name(node)
            return
        if isinstance(node.ctx, ast.Load) or isinstance(node.ctx, ast.Del):
            why = _value_attr_problem(node.attr, self.scope, _on_own_object(node.value))
            if why:
                self.fail(why[0], node, why[1])
        elif node.attr.startswith("__") and node.attr.endswith("__"):
            self.fail("introspection", node, f"assigns {node.attr}, which changes how Python treats the object")
        self.visit(node.value)

    def _check_paths(self, node: ast.expr) -> None:
        for p in self.paths.path(node) or []:
            bad = self.paths.check(p)
            if bad:
                self.fail(bad[0], node, bad[1])
                return

    def _kernel_name(self, node: ast.expr) -> None:
        for p in self.paths.path(node) or []:
            if p.split(".")[0] == "torch":
                self.fail(
                    "kernel_uses_torch", node,
                    f"a @triton.jit function uses {p}; kernels must be written in triton.language only",
                )
                return

    # calls ---------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        lit = _literal_getattr(node)
        if isinstance(f, ast.Name) and f.id in ("getattr", "hasattr") and f.id not in self.scope.defined:
            if lit is None:
                self.fail(
                    "dynamic_access", node,
                    f"{f.id}() with a computed name can reach anything; write the attribute out",
                )
            else:
                obj, name = lit
                if self.paths.path(obj) is None:
                    why = _value_attr_problem(name, self.scope, _on_own_object(obj))
                    if why:
                        self.fail("dynamic_access" if why[0] == "introspection" else why[0], node, why[1])
                else:
                    self._check_paths(node)
        if isinstance(f, ast.Name) and f.id in ("setattr", "delattr") and node.args:
            if self.paths.path(node.args[0]):
                self.fail("monkeypatch", node, f"{f.id}() on {ast.unparse(node.args[0])} changes a module the judge relies on")
        self._code_arguments(node)
        if self.in_kernel:
            self._kernel_call(node)
        if isinstance(f, ast.Attribute) and f.attr == "to" and self._to_cpu(node):
            self.fail("host_compute", node, ".to('cpu') moves data to the host")
        self.generic_visit(node)

    def _code_arguments(self, node: ast.Call) -> None:
        """autotune(pre_hook=...), Config(pre_hook=...) and heuristics values run at launch."""
        for p in self.paths.path(node.func) or []:
            kind = p.rsplit(".", 1)[-1]
            if not p.startswith("triton."):
                continue
            for k in node.keywords:
                if k.arg in allow.CODE_ARGUMENTS.get(kind, ()) and not (
                    isinstance(k.value, ast.Constant) and k.value.value is None
                ):
                    self.fail(
                        "launch_hook", node,
                        f"triton.{kind}({k.arg}=...) runs code at launch time where the judge "
                        "cannot tell it from the kernel; pass data only",
                    )
            if kind == "heuristics" and node.args:
                spec = node.args[0]
                values = spec.values if isinstance(spec, ast.Dict) else []
                if not isinstance(spec, ast.Dict):
                    self.fail("launch_hook", node, "triton.heuristics takes a literal dict of lambdas")
                for v in values:
                    if not isinstance(v, ast.Lambda | ast.Constant):
                        self.fail(
                            "launch_hook", v,
                            "a heuristic must be a lambda of pure arithmetic on the arguments",
                        )

    def _kernel_call(self, node: ast.Call) -> None:
        """Inside @triton.jit code, only Triton, builtins and the candidate's own kernels."""
        f = node.func
        if isinstance(f, ast.Name):
            # A builtin the candidate rebinds at module level is its own Python, which
            # Triton would run while compiling the kernel.
            rebound = f.id in self.scope.module_bound
            if (f.id in allow.BUILTINS and not rebound) or f.id in self.scope.kernel_bodies:
                return
            if f.id in self.scope.defined and f.id not in self.scope.aliases:
                pass  # a host function called from a kernel: refused below
            else:
                got = self.paths.path(f) or []
                if got and all(p.split(".")[0] in ("triton", "math") for p in got):
                    return
        else:
            got = self.paths.path(f)
            if got and all(p.split(".")[0] in ("triton", "math") for p in got):
                return
            if got is None:
                return  # a method on a value, e.g. x.to(tl.float32)
        self.fail(
            "kernel_calls_python", node,
            f"a @triton.jit function calls {ast.unparse(f)}(), which is not Triton code; kernels "
            "may call only triton.language and other @triton.jit functions",
        )

    @staticmethod
    def _to_cpu(node: ast.Call) -> bool:
        vals = list(node.args) + [k.value for k in node.keywords if k.arg == "device"]
        for v in vals:
            if isinstance(v, ast.Constant) and v.value == "cpu":
                return True
            if isinstance(v, ast.Call) and v.args and isinstance(v.args[0], ast.Constant) and v.args[0].value == "cpu":
                return True
        return False

    # assignments into modules ------------------------------------------------------------
    def _target(self, t: ast.expr, node: ast.AST) -> None:
        if isinstance(t, ast.Attribute | ast.Subscript):
            base = self.paths.path(t.value)
            if base is not None:
                self.fail(
                    "monkeypatch", node,
                    f"assigns into {base[0]}; a candidate may not change torch, triton or any other module",
                )
            elif (
                isinstance(t, ast.Attribute)
                and not _on_own_object(t.value)
                and t.attr in _tensor_names() | _module_attr_names()
                and t.attr not in _DATA_ATTRS
            ):
                self.fail(
                    "monkeypatch", node,
                    f"sets .{t.attr} on {ast.unparse(t.value)}; .{t.attr} is a method or "
                    "attribute of tensors or modules, which the judge relies on: a candidate "
                    "may set such a name only on self, cls or ctx",
                )
            elif isinstance(t, ast.Attribute) and not self._own_root(t.value):
                self.fail(
                    "monkeypatch", node,
                    f"sets .{t.attr} on {ast.unparse(t.value)}; a candidate may set attributes "
                    "only on its own objects (self, cls, ctx, its own classes): an attribute "
                    "on a tensor or a class it did not make can stand in for a method the "
                    "judge calls",
                )
        elif isinstance(t, ast.Tuple | ast.List | ast.Starred):
            for e in t.elts if not isinstance(t, ast.Starred) else [t.value]:
                self._target(e, node)

    def _torch_context(self, item: ast.withitem) -> bool:
        """A with item whose context manager is torch's own (its exit runs torch's code)."""
        e = item.context_expr
        got = self.paths.path(e.func) if isinstance(e, ast.Call) else None
        return bool(got) and all(p.startswith("torch.") for p in got)

    def _own_root(self, value: ast.expr) -> bool:
        """Whether an attribute chain starts at self/cls/ctx or one of the candidate's classes."""
        while isinstance(value, ast.Attribute):
            value = value.value
        return isinstance(value, ast.Name) and (
            _on_own_object(value) or value.id in self.scope.classes
        )

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._target(t, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target, node)
        self.generic_visit(node)

    def visit_Match(self, node: ast.AST) -> None:
        self.fail(
            "not_allowed", node,
            "match statements bind names the lint cannot follow; use if/elif",
        )

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self._target(t, node)
        self.generic_visit(node)


def _check_model_new(tree: ast.Module, paths: _Paths, problems: list[Problem]) -> None:
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    cls = classes.get("ModelNew")
    if cls is None:
        problems.append(Problem("structure", 0, "The candidate defines no top-level class ModelNew."))
        return
    for b in cls.bases:
        got = paths.path(b) or []
        if not got or not all(p in ("torch.nn.Module", "torch.nn.modules.module.Module") for p in got):
            problems.append(
                Problem(
                    "inherits_reference", cls.lineno,
                    f"ModelNew inherits from {ast.unparse(b)}; it must subclass nn.Module directly so "
                    "that its own forward, not an inherited one, is what runs.",
                )
            )
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    if "forward" not in methods:
        problems.append(Problem("structure", cls.lineno, "ModelNew defines no forward method."))


# Names a candidate may not bind: Python's own functions that reach anything (binding one
# would make the lint take the name for the candidate's own), and the names of a method's
# own object, which the lint trusts on attributes.
_UNBINDABLE = frozenset(
    "eval exec compile open globals locals vars __import__ getattr setattr delattr hasattr "
    "breakpoint type dir memoryview super __builtins__ classmethod staticmethod property "
    "isinstance issubclass".split()
)


def _bindings(tree: ast.Module, linter: _Linter) -> None:
    """Refuse binding an _UNBINDABLE name, or self/cls/ctx anywhere but as the first
    parameter of a function (trusted as an own object only in a method: _on_own_object)."""
    methods_first: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = (node.args.posonlyargs + node.args.args)[:1]
            methods_first.update(id(a) for a in first)

    def bound(name: str, where: ast.AST, first_param: bool = False) -> None:
        if name in _UNBINDABLE:
            linter.fail(
                "not_allowed", where,
                f"binds the name {name}, which would hide Python's own {name} from the "
                "lint; pick another name",
            )
        elif name in _OWN_OBJECTS and not first_param:
            linter.fail(
                "not_allowed", where,
                f"binds the name {name} other than as a function's first parameter; the "
                f"lint trusts {name} to be a method's own object, so rename it",
            )

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound(node.id, node)
        elif isinstance(node, ast.arg):
            bound(node.arg, node, id(node) in methods_first)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound(node.name, node)
        elif isinstance(node, ast.alias):
            bound(node.asname or node.name.split(".")[0], node)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound(node.name, node)


def _format_strings(tree: ast.Module, linter: _Linter) -> None:
    """str.format on a literal whose fields are plain: "{0.__globals__}" walks attributes."""
    import string

    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("format", "format_map")
        ):
            continue
        fmt = node.func.value
        if not (isinstance(fmt, ast.Constant) and isinstance(fmt.value, str)):
            linter.fail(
                "dynamic_access", node,
                ".format() only on a string literal: a format string reaches attributes",
            )
            continue
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(fmt.value) if f]
        except ValueError:
            fields = ["?"]
        if node.func.attr == "format_map" or any("." in f or "[" in f for f in fields):
            linter.fail(
                "dynamic_access", node,
                "a format string that reads attributes or items ({x.attr}, {x[k]}) can reach "
                "anything; format plain values",
            )


def lint(source: str, filename: str = "<candidate>") -> LintResult:
    """Lint candidate source; a SyntaxError is reported as a problem, not raised."""
    try:
        tree = parse_source(source, filename)
    except SyntaxError as e:
        return LintResult(
            [Problem("syntax", e.lineno or 0, f"The candidate is not valid Python (line {e.lineno}: {e.msg}).")],
            [], [],
        )
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child._parent = node  # type: ignore[attr-defined]
    scope = _collect(tree)
    scope.module_bound = module_bindings(tree)
    paths = _Paths(scope)
    _module_aliases(tree, scope, paths)
    _kernels(tree, scope, paths)
    linter = _Linter(scope, paths)
    linter.top_level = {id(n) for n in tree.body}
    linter.visit(tree)
    _bindings(tree, linter)
    _format_strings(tree, linter)
    problems = linter.problems
    _check_model_new(tree, paths, problems)
    if not scope.kernels:
        problems.append(
            Problem(
                "no_kernel", 0,
                "The candidate defines no @triton.jit kernel, so nothing it runs is its own Triton code.",
            )
        )
    return LintResult(problems, linter.notes, scope.kernels)
