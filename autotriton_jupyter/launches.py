"""A verified kernel's source with cheaper launches: launch_cache.py's block appended, and
each kernel that the host code launches wrapped by it.

Only kernels that are safe to wrap are: a plain `@triton.jit` def at module level (not
autotuned, no other decorator), bound once, and named only where it is launched
(`name[grid](...)`) outside the kernels. A kernel that other kernels call, or that is
passed around or inspected, keeps Triton's own path. The kernels' code and launch
parameters are not touched, and the result is a new candidate: the tuning pass has the
verifier judge it in full, timing included, before it can be kept (tuning.py).

Length: the transform and the block's recognition, which must agree, side by side.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

from .task import parse_source

BEGIN = "# >>> autotriton: cached launches"
END = "# <<< autotriton: cached launches"
PREFIX = "_autotriton"  # every name the block binds starts with it
_WRAP = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*) = _autotriton_cached\(\1\)$")


@lru_cache(maxsize=1)
def block() -> str:
    """launch_cache.py's code, from its BEGIN marker to the line before its END marker."""
    text = (Path(__file__).with_name("launch_cache.py")).read_text(encoding="utf-8")
    start = text.index(BEGIN)
    return text[start : text.index(END, start)]


def _decorator_names(node: ast.FunctionDef) -> list[str]:
    out = []
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        out.append(ast.unparse(target))
    return out


def wrappable(source: str) -> list[str]:
    """The kernels of `source` whose launches can be cached, in the order they are defined."""
    tree = parse_source(source)
    _mark_launches(tree)
    kernels = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and _decorator_names(n) in (["triton.jit"], ["jit"])
    ]
    jit_bodies = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and "jit" in " ".join(_decorator_names(n))]
    inside = {id(x) for k in jit_bodies for x in ast.walk(k)}
    bound: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            bound[node.name] = bound.get(node.name, 0) + 1
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound[node.id] = bound.get(node.id, 0) + 1
        elif isinstance(node, ast.alias):
            name = (node.asname or node.name).split(".")[0]
            bound[name] = bound.get(name, 0) + 1
    launched: set[str] = set()
    elsewhere: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        parent = getattr(node, "_launch_parent", None)
        if id(node) not in inside and parent == "launch":
            launched.add(node.id)
        else:
            elsewhere.add(node.id)
    return [
        k.name
        for k in kernels
        if k.name in launched and k.name not in elsewhere and bound.get(k.name) == 1
    ]


def _mark_launches(tree: ast.Module) -> None:
    """Mark each Name that is launched: the `name` of `name[grid](...)`."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Subscript)
            and isinstance(node.func.value, ast.Name)
        ):
            node.func.value._launch_parent = "launch"  # type: ignore[attr-defined]


def cached(source: str) -> tuple[str, list[str]] | None:
    """`source` with its launches cached, and the kernels wrapped; None when there is no
    kernel to wrap, the source does not parse, or it has the block already (or names of
    its kind)."""
    if PREFIX in source:
        return None
    try:
        names = wrappable(source)
    except SyntaxError:
        return None
    if not names:
        return None
    wraps = "".join(f"{n} = _autotriton_cached({n})\n" for n in names)
    return source.rstrip() + "\n\n\n" + block() + wraps + END + "\n", names


def split(source: str) -> tuple[str, list[str]] | None:
    """The source above the block, and the kernels the block wraps, when `source` ends with
    the block exactly as `cached` writes it; else None. Only then may a checker take the block's code as autotriton's own."""
    at = source.find(BEGIN)
    if at < 0 or (at and source[at - 1] != "\n"):
        return None
    tail = source[at:]
    text = block()
    if not tail.startswith(text):
        return None
    lines = tail[len(text) :].split("\n")
    names: list[str] = []
    while lines and (m := _WRAP.match(lines[0])):
        names.append(m.group(1))
        lines.pop(0)
    if not names or not lines or lines[0] != END or any(x.strip() for x in lines[1:]):
        return None
    return source[:at], names
