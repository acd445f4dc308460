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
        missing = [n for n in ENTRY_POINTS if n not in top_level_names(self.tree())]
        if missing:
            raise TaskError(
                f"The reference {self.path or self.name} does not define {', '.join(missing)}. "
                "A task needs class Model(nn.Module), get_inputs() and get_init_inputs() "
                "(the KernelBench convention)."
            )

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
