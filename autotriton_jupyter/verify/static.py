"""Static lint of a candidate's source, run before any of it executes.

Each rule is a general mechanism against a family of cheats (see VERIFY.md): names
are resolved through the candidate's own imports, so `import torch as T; T.compile`
is caught the same as `torch.compile`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..task import parse_source

# Modules whose only use in a kernel file is to escape the judge, hide work or
# compute on the host.
BANNED_MODULES = {
    "ctypes": "loads native code",
    "cffi": "loads native code",
    "subprocess": "starts processes",
    "multiprocessing": "starts processes",
    "torch.multiprocessing": "starts processes",
    "threading": "runs work on background threads",
    "_thread": "runs work on background threads",
    "concurrent": "runs work on background threads",
    "asyncio": "runs work in the background",
    "signal": "interferes with the judge's process control",
    "gc": "can reach objects it was not given",
    "inspect": "can reach objects it was not given",
    "importlib": "imports code the lint cannot see",
    "builtins": "can replace Python built-ins",
    "pickle": "can run hidden code",
    "marshal": "can run hidden code",
    "socket": "talks to the network",
    "numpy": "computes on the host",
    "numba": "generates kernels that are not Triton",
    "cupy": "generates kernels that are not Triton",
    "pycuda": "generates kernels that are not Triton",
    "torch.utils.cpp_extension": "compiles C++/CUDA kernels that are not Triton",
    "torch._inductor": "uses torch.compile's generated kernels",
    "torch._dynamo": "uses torch.compile",
    "torch.jit": "uses TorchScript",
    "torch.cuda.graphs": "uses CUDA graphs",
}

# Only these modules (and their public submodules listed here) may be imported: anything
# else is a way around the judge that a blacklist would have to foresee.
ALLOWED_MODULES = (
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.init",
    "triton",
    "triton.language",
    "triton.language.extra",
    "triton.runtime.driver",
    "math",
    "typing",
    "functools",
    "itertools",
    "operator",
    "dataclasses",
    "enum",
    "collections",
    "__future__",
)
# Module paths that name modules (not classes or functions) when imported with `from`.
MODULE_PATHS = set(ALLOWED_MODULES) | {"triton.runtime", "torch.cuda"}
PYTHON_BUILTINS_IN_KERNELS = {
    "range",
    "min",
    "max",
    "abs",
    "int",
    "float",
    "bool",
    "len",
    "print",
    "isinstance",
    "tuple",
    "list",
    "zip",
    "enumerate",
}

# Attribute paths (after alias resolution) that may not be referenced at all.
BANNED_NAMES = {
    "torch.compile": "torch.compile generates kernels that are not the candidate's own",
    "torch.jit": "TorchScript is not a Triton kernel",
    "torch.cuda.graph": "CUDA graphs replay work the timer cannot attribute",
    "torch.cuda.CUDAGraph": "CUDA graphs replay work the timer cannot attribute",
    "torch.cuda.make_graphed_callables": "CUDA graphs replay work the timer cannot attribute",
    "torch.cuda.Stream": "work on a side stream escapes the timer",
    "torch.cuda.stream": "work on a side stream escapes the timer",
    "torch.cuda.set_stream": "work on a side stream escapes the timer",
    "torch.cuda.ExternalStream": "work on a side stream escapes the timer",
    "torch.Stream": "work on a side stream escapes the timer",
    "torch.cuda.Event": "the candidate must not time itself",
    "torch.cuda.set_per_process_memory_fraction": "changes the memory limit the judge set",
    "torch.cuda.memory": "changes the memory limit the judge set",
    "sys.modules": "reaches into other modules",
    "sys._getframe": "reaches into the judge's frames",
    "sys.settrace": "interferes with the judge",
    "sys.setprofile": "interferes with the judge",
    "os.system": "starts processes",
    "os.popen": "starts processes",
    "os.fork": "starts processes",
    "os.kill": "interferes with the judge's process control",
    "os._exit": "ends the process under the judge",
    "os.environ": "changes the environment the judge relies on",
    "time": "the candidate must not read or change clocks",
}
BANNED_NAME_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn")
BANNED_BUILTINS = {
    "eval": "runs code the lint cannot see",
    "exec": "runs code the lint cannot see",
    "compile": "builds code the lint cannot see",
    "__import__": "imports code the lint cannot see",
    "globals": "reaches into module state",
    "open": "reads or writes files",
    "breakpoint": "stops the process",
    "input": "waits for input",
}
INTROSPECTION_ATTRS = {
    "__class__",
    "__bases__",
    "__subclasses__",
    "__globals__",
    "__code__",
    "__dict__",
    "__builtins__",
    "__closure__",
    "__mro__",
    "f_back",
    "f_globals",
    "f_locals",
    "__setattr__",
    "__getattribute__",
    "__delattr__",
    "__spec__",
    "__loader__",
    "__file__",
}
HOST_METHODS = {"cpu", "numpy", "tolist", "item"}
DYNAMIC_BUILTINS = {"getattr", "setattr", "delattr", "hasattr", "vars", "dir", "locals"}


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


def _is_triton_decorator(dec: ast.expr, names: dict[str, str]) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    full = _resolve(target, names)
    return (
        full is not None
        and full.split(".")[0] == "triton"
        and full.rsplit(".", 1)[-1] in ("jit", "autotune", "heuristics")
    )


def _dotted(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _resolve(node: ast.expr, names: dict[str, str]) -> str | None:
    """The full dotted path of an expression rooted at an imported name, else None."""
    parts = _dotted(node)
    if not parts or parts[0] not in names:
        return None
    return ".".join([names[parts[0]], *parts[1:]])


def _imports(tree: ast.Module) -> dict[str, str]:
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    names[a.asname] = a.name
                else:
                    root = a.name.split(".")[0]
                    names[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _is_plain_import(tree: ast.Module, alias: str) -> bool:
    """True when `alias` was bound by `import x` / `import x as alias` (so it is a module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if (a.asname or a.name.split(".")[0]) == alias:
                    return True
    return False


def _banned_module(full: str) -> str | None:
    for mod, why in BANNED_MODULES.items():
        if full == mod or full.startswith(mod + "."):
            return why
    return None


def _import_allowed(module: str) -> bool:
    return any(
        module == m or module.startswith(m + ".") and m != "torch" and m != "triton"
        for m in ALLOWED_MODULES
    )


def _private_part(full: str) -> str | None:
    """The first private segment (`_x`, not dunder) of a module-rooted path, if any."""
    for part in full.split(".")[1:]:
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return part
    return None


def _banned_name(full: str) -> str | None:
    for name, why in BANNED_NAMES.items():
        if full == name or full.startswith(name + "."):
            return why
    if full.startswith(BANNED_NAME_PREFIXES):
        return "starts processes"
    return None


class _Linter(ast.NodeVisitor):
    def __init__(self, names: dict[str, str], modules: set[str], jit_names: set[str]) -> None:
        self.names = names
        self.modules = modules
        self.jit_names = jit_names
        self.problems: list[Problem] = []
        self.notes: list[str] = []
        self.kernels: list[str] = []
        self.function_depth = 0
        self.in_kernel = False
        self.seen_names: set[tuple[int, str]] = set()

    def fail(self, check: str, node: ast.AST, message: str) -> None:
        self.problems.append(Problem(check, getattr(node, "lineno", 0), message))

    # imports -------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            why = _banned_module(a.name)
            if why:
                self.fail(
                    "forbidden_import", node, f"line {node.lineno}: imports {a.name}, which {why}."
                )
            elif not _import_allowed(a.name):
                self.fail(
                    "forbidden_import",
                    node,
                    f"line {node.lineno}: imports {a.name}; a "
                    "candidate may import only torch, torch.nn, triton, triton.language and "
                    "a few standard helpers (math, typing, functools ...).",
                )

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            self.fail(
                "forbidden_import",
                node,
                f"line {node.lineno}: relative imports cannot be checked; import by full name.",
            )
            return
        for a in node.names:
            full = f"{node.module}.{a.name}"
            why = _banned_module(full) or _banned_name(full)
            if why:
                self.fail(
                    "forbidden_import", node, f"line {node.lineno}: imports {full}, which {why}."
                )
            elif not (
                _import_allowed(node.module)
                or _import_allowed(full)
                or node.module in ("torch", "triton")
            ):
                self.fail(
                    "forbidden_import",
                    node,
                    f"line {node.lineno}: imports from "
                    f"{node.module}; a candidate may import only torch, triton and a few "
                    "standard helpers.",
                )
            elif _private_part(full) or a.name.startswith("_"):
                self.fail("private_api", node, f"line {node.lineno}: imports the private {full}.")

    # functions and kernels --------------------------------------------------
    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        is_kernel = any(_is_triton_decorator(d, self.names) for d in node.decorator_list)
        if is_kernel:
            self.kernels.append(node.name)
        was = self.in_kernel
        self.in_kernel = was or is_kernel
        self.function_depth += 1
        self.generic_visit(node)
        self.function_depth -= 1
        self.in_kernel = was

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Try(self, node: ast.Try) -> None:
        only_imports = all(isinstance(s, ast.Import | ast.ImportFrom) for s in node.body)
        if self.function_depth or not only_imports:
            self.fail(
                "try_except",
                node,
                f"line {node.lineno}: try/except can hide a fallback to PyTorch when the "
                "kernel fails; remove it so failures are visible.",
            )
        self.generic_visit(node)

    visit_TryStar = visit_Try

    # names, attributes and calls ------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        parent = getattr(node, "_parent", None)
        if node.id in self.modules and not (
            isinstance(parent, ast.Attribute) and parent.value is node
        ):
            self.fail(
                "module_alias",
                node,
                f"line {node.lineno}: the module {node.id} is stored or "
                "passed around; use it only as `module.name`.",
            )
        if node.id in ("__builtins__",):
            self.fail("introspection", node, f"line {node.lineno}: touches __builtins__.")
        if self.in_kernel and node.id in self.names:
            root = self.names[node.id].split(".")[0]
            if root in ("torch", "numpy"):
                self.fail(
                    "kernel_uses_torch",
                    node,
                    f"line {node.lineno}: a @triton.jit function uses {self.names[node.id]}; "
                    "kernels must be written in triton.language only.",
                )
        self._check_path(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in INTROSPECTION_ATTRS:
            self.fail(
                "introspection",
                node,
                f"line {node.lineno}: uses {node.attr}, which can reach or change objects "
                "the candidate was not given.",
            )
        if self._check_path(node):
            return
        self.generic_visit(node)

    def _check_path(self, node: ast.expr) -> bool:
        full = _resolve(node, self.names)
        if full is None:
            return False
        key = (getattr(node, "lineno", 0), full)
        private = _private_part(full)
        if private and key not in self.seen_names:
            self.seen_names.add(key)
            self.fail(
                "private_api",
                node,
                f"line {node.lineno}: uses {full}; private parts of "
                "torch and triton can switch off or fool the judge's checks.",
            )
            return True
        why = _banned_name(full) or _banned_module(full)
        if why and key not in self.seen_names:
            self.seen_names.add(key)
            check = "forbidden_call"
            if "stream" in why:
                check = "side_stream"
            elif "host" in why:
                check = "host_compute"
            self.fail(check, node, f"line {node.lineno}: uses {full}: {why}.")
        return why is not None

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if isinstance(f, ast.Name) and f.id in DYNAMIC_BUILTINS and f.id not in self.names:
            self._dynamic(f.id, node)
        if self.in_kernel:
            self._kernel_call(node)
        if isinstance(f, ast.Name) and f.id in BANNED_BUILTINS and f.id not in self.names:
            self.fail(
                "forbidden_call",
                node,
                f"line {node.lineno}: calls {f.id}(), which {BANNED_BUILTINS[f.id]}.",
            )
        if isinstance(f, ast.Name) and f.id in ("setattr", "delattr") and node.args:
            target = _resolve(node.args[0], self.names)
            if target is not None:
                self.fail(
                    "monkeypatch",
                    node,
                    f"line {node.lineno}: {f.id}() on {target} changes a module the judge relies on.",
                )
        if isinstance(f, ast.Attribute):
            if f.attr in HOST_METHODS:
                self.fail(
                    "host_compute",
                    node,
                    f"line {node.lineno}: .{f.attr}() moves data to the host; all compute "
                    "must stay in the candidate's Triton kernels.",
                )
            elif f.attr == "to" and self._to_cpu(node):
                self.fail(
                    "host_compute", node, f"line {node.lineno}: .to('cpu') moves data to the host."
                )
            elif f.attr == "item":
                self.notes.append(
                    f"line {node.lineno}: .item() reads a value back to the host (a "
                    "device sync); the op audit fails it on a GPU."
                )
        self.generic_visit(node)

    def _dynamic(self, fn: str, node: ast.Call) -> None:
        """getattr & co: only on self or with a plain public literal name."""
        target, name = (node.args + [None, None])[:2]
        literal = (
            isinstance(name, ast.Constant)
            and isinstance(name.value, str)
            and not name.value.startswith("_")
        )
        on_self = isinstance(target, ast.Name) and target.id == "self"
        if fn in ("vars", "dir", "locals") or not (literal or (on_self and fn != "delattr")):
            self.fail(
                "dynamic_access",
                node,
                f"line {node.lineno}: {fn}() with a computed or "
                "private name can reach anything; write the attribute out.",
            )

    def _kernel_call(self, node: ast.Call) -> None:
        """Inside @triton.jit code, only Triton, builtins and the candidate's own kernels."""
        f = node.func
        if isinstance(f, ast.Name):
            if f.id in PYTHON_BUILTINS_IN_KERNELS or f.id in self.jit_names:
                return
            full = self.names.get(f.id)
            if full and full.split(".")[0] in ("triton", "math"):
                return
        else:
            full = _resolve(f, self.names)
            if full and full.split(".")[0] in ("triton", "math"):
                return
            if isinstance(f, ast.Attribute) and not isinstance(f.value, ast.Name | ast.Attribute):
                return  # a method on a value, e.g. x.to(tl.float32)
            if isinstance(f, ast.Attribute) and _dotted(f) and _dotted(f)[0] not in self.names:
                return  # a method on a local tensor, e.g. acc.to(...)
        shown = ast.unparse(f)
        self.fail(
            "kernel_calls_python",
            node,
            f"line {node.lineno}: a @triton.jit function calls "
            f"{shown}(), which is not Triton code; kernels may call only triton.language and "
            "other @triton.jit functions.",
        )

    @staticmethod
    def _to_cpu(node: ast.Call) -> bool:
        vals = list(node.args) + [k.value for k in node.keywords if k.arg == "device"]
        for v in vals:
            if isinstance(v, ast.Constant) and v.value == "cpu":
                return True
            if (
                isinstance(v, ast.Call)
                and v.args
                and isinstance(v.args[0], ast.Constant)
                and v.args[0].value == "cpu"
            ):
                return True
        return False

    # assignments into other modules ----------------------------------------
    def _target(self, t: ast.expr, node: ast.AST) -> None:
        if isinstance(t, ast.Attribute | ast.Subscript):
            base = t.value
            full = _resolve(base, self.names)
            if full is not None:
                self.fail(
                    "monkeypatch",
                    node,
                    f"line {node.lineno}: assigns into {full}; a candidate may not change "
                    "torch, triton or any other module.",
                )
        elif isinstance(t, ast.Tuple | ast.List):
            for e in t.elts:
                self._target(e, node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._target(t, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self._target(t, node)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.notes.append(
            f"line {node.lineno}: `global` state can carry results between calls; "
            "the stale-cache trial checks for that."
        )


def _check_model_new(tree: ast.Module, names: dict[str, str], problems: list[Problem]) -> None:
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    cls = classes.get("ModelNew")
    if cls is None:
        problems.append(
            Problem("structure", 0, "The candidate defines no top-level class ModelNew.")
        )
        return
    for b in cls.bases:
        full = _resolve(b, names)
        if full not in ("torch.nn.Module", "torch.nn.modules.module.Module"):
            shown = ast.unparse(b)
            problems.append(
                Problem(
                    "inherits_reference",
                    cls.lineno,
                    f"ModelNew inherits from {shown}; it must subclass nn.Module directly so that its "
                    "own forward, not an inherited one, is what runs.",
                )
            )
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    if "forward" not in methods:
        problems.append(Problem("structure", cls.lineno, "ModelNew defines no forward method."))


def lint(source: str, filename: str = "<candidate>") -> LintResult:
    """Lint candidate source; a SyntaxError is reported as a problem, not raised."""
    try:
        tree = parse_source(source, filename)
    except SyntaxError as e:
        return LintResult(
            [
                Problem(
                    "syntax",
                    e.lineno or 0,
                    f"The candidate is not valid Python (line {e.lineno}: {e.msg}).",
                )
            ],
            [],
            [],
        )
    names = _imports(tree)
    modules = {
        alias
        for alias, full in names.items()
        if full in MODULE_PATHS or _is_plain_import(tree, alias)
    }
    jit_names = {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(_is_triton_decorator(d, names) for d in n.decorator_list)
    }
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child._parent = node  # type: ignore[attr-defined]
    linter = _Linter(names, modules, jit_names)
    linter.visit(tree)
    problems = linter.problems
    _check_model_new(tree, names, problems)
    if not linter.kernels:
        problems.append(
            Problem(
                "no_kernel",
                0,
                "The candidate defines no @triton.jit kernel, so nothing it runs is "
                "its own Triton code.",
            )
        )
    return LintResult(problems, linter.notes, linter.kernels)
