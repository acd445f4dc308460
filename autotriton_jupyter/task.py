"""Task and Candidate: plain data describing what to verify (source text, never live objects)."""

from __future__ import annotations

import ast
import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

ENTRY_POINTS = ("Model", "get_inputs", "get_init_inputs")


_PARSE_LOCK = threading.Lock()


def parse_source(source: str, filename: str = "<source>") -> ast.Module:
    """ast.parse, one at a time: CPython 3.11 can corrupt its AST builder when threads parse at once."""
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename)


class TaskError(ValueError):
    """A task or candidate file that cannot be used; the message says what to do."""


def _read(path: str | Path, what: str) -> str:
    p = Path(path)
    if not p.exists():
        raise TaskError(f"{what} file {p} does not exist.")
    if p.is_dir():
        raise TaskError(f"{what} path {p} is a folder; give the .py file.")
    try:
        return p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise TaskError(f"{what} file {p} cannot be read ({e}).") from e


def top_level_names(tree: ast.Module) -> set[str]:
    """Names a module defines at its top level (classes, functions, assignments, imports)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


@dataclass(frozen=True)
class Task:
    """A reference module in the KernelBench convention: Model, get_inputs, get_init_inputs."""

    source: str
    name: str = "task"
    path: str | None = None

    @classmethod
    def from_file(cls, path: str | Path) -> Task:
        """Read and check a reference file; problems raise TaskError."""
        task = cls(_read(path, "Reference"), Path(path).stem, str(path))
        task.check()
        return task

    @classmethod
    def from_source(cls, source: str, name: str = "task") -> Task:
        """A task from source text; problems raise TaskError."""
        task = cls(source, name)
        task.check()
        return task

    def tree(self) -> ast.Module:
        try:
            return parse_source(self.source, self.path or self.name)
        except SyntaxError as e:
            raise TaskError(
                f"The reference {self.path or self.name} is not valid Python "
                f"(line {e.lineno}: {e.msg})."
            ) from e

    def check(self) -> None:
        """Raise TaskError unless the source parses and defines the three entry points."""
        names = top_level_names(self.tree())
        missing = [n for n in ENTRY_POINTS if n not in names]
        if missing:
            swapped = (
                " It defines ModelNew, as a candidate does: were the task and the candidate "
                "given the other way round (the task comes first)?"
                if "ModelNew" in names
                else ""
            )
            raise TaskError(
                f"The reference {self.path or self.name} does not define {', '.join(missing)}. "
                "A task needs class Model(nn.Module), get_inputs() and get_init_inputs() "
                f"(the KernelBench convention).{swapped}"
            )

    @classmethod
    def from_cell(
        cls,
        source: str,
        name: str = "cell",
        module: str | None = None,
        inputs: str | None = None,
        init: str | None = None,
    ) -> Task:
        """A task from a notebook cell: the KernelBench convention, or any module + inputs.

        With `module`, the cell's class of that name becomes the task's Model and
        `inputs` / `init` (Python expressions) become get_inputs / get_init_inputs.
        The task runs in a separate process, so every name the cell uses must be
        defined (or imported) in the cell itself.
        """
        if not source.strip():
            raise TaskError(
                "The cell is empty: write a module (class Model(nn.Module) with "
                "get_inputs() and get_init_inputs()) below %%autotriton."
            )
        tree = parse_source(source, name) if _parses(source) else None
        if tree is None:
            cls(source, name).tree()  # raises the SyntaxError as a TaskError
        assert tree is not None
        defined = top_level_names(tree)
        if module:
            if module not in defined:
                raise TaskError(
                    f"The cell defines no {module!r}; --module must name a class "
                    "defined in the cell."
                )
            if not inputs:
                raise TaskError(
                    "--module needs --inputs EXPR: a Python expression giving the "
                    "forward arguments, e.g. --inputs '[torch.randn(64, 128)]'."
                )
            source = (
                source.rstrip() + "\n\n\n# added by %%autotriton\n"
                f"Model = {module}\n\n\ndef get_inputs():\n    return list({inputs})\n\n\n"
                f"def get_init_inputs():\n    return list({init or '[]'})\n"
            )
            tree = parse_source(source, name)
        missing = free_names(tree)
        if missing:
            raise TaskError(
                f"The cell uses {', '.join(sorted(missing))} but does not define "
                f"{'it' if len(missing) == 1 else 'them'}. The kernel is built and checked in a "
                "separate process that sees only this cell: define or import them here."
            )
        task = cls(source, name)
        task.check()
        return task

    @property
    def key(self) -> str:
        """Content hash: the same source is the same task."""
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Candidate:
    """Source text of a proposed ModelNew, and where it came from."""

    source: str
    name: str = "candidate"
    path: str | None = None

    @classmethod
    def from_file(cls, path: str | Path) -> Candidate:
        """Read a candidate file (its content is judged later, not here)."""
        return cls(_read(path, "Candidate"), Path(path).stem, str(path))


def signature(tree: ast.Module, cls_name: str, method: str) -> list[str] | None:
    """Positional parameter names of cls.method (without self); None when unknown or *args."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == method:
                    if fn.args.vararg is not None:
                        return None
                    return [a.arg for a in fn.args.posonlyargs + fn.args.args][1:]
    return None


def arity(tree: ast.Module, cls_name: str, method: str) -> tuple[int, int] | None:
    """How many positional arguments cls.method needs and takes at most (without self);
    None when unknown or *args."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == method:
                    if fn.args.vararg is not None:
                        return None
                    most = len(fn.args.posonlyargs + fn.args.args) - 1
                    return most - len(fn.args.defaults), most
    return None


def _parses(source: str) -> bool:
    try:
        parse_source(source)
        return True
    except SyntaxError:
        return False


def free_names(tree: ast.Module) -> set[str]:
    """Names a module reads but never binds anywhere (and that are not builtins)."""
    import builtins

    bound: set[str] = set(top_level_names(tree))
    loaded: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return {n for n in loaded - bound if not hasattr(builtins, n) and n != "__file__"}
