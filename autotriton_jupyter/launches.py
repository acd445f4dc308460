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
import hashlib
import re
from functools import lru_cache
from pathlib import Path

from .task import parse_source

BEGIN = "# >>> autotriton: cached launches"  # the block's first line starts so; its version follows
END = "# <<< autotriton: cached launches"
PREFIX = "_autotriton"  # every name the block binds starts with it
OWN_CLASS = "_AutotritonCachedLaunch"  # the block's class
_WRAP = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*) = _autotriton_cached\(\1\)$")
_FIRST = re.compile(r"(?m)^# >>> autotriton: cached launches")
# Every version of the block ever written into kept kernels, by the sha256 of its text (its
# first line to the line before its first wrapping line), so that a kernel kept by an older
# autotriton is still recognised. A change to launch_cache.py's block is a new version, added
# here; none is ever removed (tests/test_launch_cache.py pins the current one).
KNOWN = {
    "v1": "7aa1b31a355e100c07805509200a780a90c3ad69504c8516629503d521e21e5e",
}


@lru_cache(maxsize=1)
def block() -> str:
    """launch_cache.py's code, from its first marker line to the line before its closing one."""
    text = (Path(__file__).with_name("launch_cache.py")).read_text(encoding="utf-8")
    start = text.index(BEGIN)
    return text[start : text.index(END, start)]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
    if _FIRST.search(source):
        return None
    from .verify.static import module_bindings

    try:
        tree = parse_source(source)
        if prefixed(tree) or set(module_bindings(tree)) & block_builtins():
            return None
        names = wrappable(source)
    except SyntaxError:
        return None
    if not names:
        return None
    wraps = "".join(f"{n} = _autotriton_cached({n})\n" for n in names)
    return source.rstrip() + "\n\n\n" + block() + wraps + END + "\n", names


def prefixed(tree: ast.AST) -> list[tuple[str, int]]:
    """The names in `tree` (bound, read, attributes, parameters, imports, keywords) that
    start like the block's, in any case, with their lines."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.alias):
            names = [*node.name.split("."), node.asname or ""]
        elif isinstance(node, ast.keyword):
            names = [node.arg or ""]
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names = list(node.names)
        elif isinstance(node, ast.ExceptHandler):
            names = [node.name or ""]
        else:
            continue
        out.extend((n, getattr(node, "lineno", 0)) for n in names if n.lower().startswith(PREFIX))
    return out


@lru_cache(maxsize=1)
def block_builtins() -> frozenset[str]:
    """The built-in names the block reads: code above it must not rebind them."""
    import builtins

    tree = parse_source(block())
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return frozenset(n for n in read - bound if hasattr(builtins, n))


def start(source: str) -> int | None:
    """Where the block's first line is (a line that starts like it), or None."""
    found = _FIRST.search(source)
    return None if found is None else found.start()


def split(source: str) -> tuple[str, list[str]] | str | None:
    """For a source that ends with the block as some version of `cached` wrote it: the
    source above the block, and the kernels the block wraps. For one that has a block
    line otherwise: what is wrong with it, in a sentence. None: no block at all. Only in
    the first case may a checker take the block's code as autotriton's own."""
    at = start(source)
    if at is None:
        return None
    first = source[: at].count("\n") + 1  # the block's first line in the file
    lines = source[at:].split("\n")
    wraps = next((i for i, line in enumerate(lines) if _WRAP.match(line)), len(lines))
    text = "\n".join(lines[:wraps]) + "\n"
    if digest(text) not in KNOWN.values():
        return _differs(lines[:wraps], first)
    names: list[str] = []
    i = wraps
    while i < len(lines) and (m := _WRAP.match(lines[i])):
        names.append(m.group(1))
        i += 1
    if not names:
        return f"the cached-launch block (line {first}) wraps no kernel"
    if i >= len(lines) or lines[i] != END:
        return f"line {first + i} should be the cached-launch block's closing line ({END})"
    if any(x.strip(" \t\r\f") for x in lines[i + 1 :]):
        return f"the source goes on after the cached-launch block's closing line (line {first + i})"
    return source[:at], names


def _differs(lines: list[str], first: int) -> str:
    """Where a block's text parts from the current block's (or that its version is unknown)."""
    ours = block().split("\n")
    version = lines[0][len(BEGIN) :].strip(" ()\r")
    if lines[0].rstrip("\r") != ours[0] and version and version not in KNOWN:
        return (
            f"the cached-launch block (line {first}) is of a version this autotriton does not "
            f"know ({version})"
        )
    for k, (theirs, mine) in enumerate(zip(lines, ours)):
        if theirs != mine:
            return (
                f"line {first + k} of the cached-launch block differs from autotriton's "
                f"(it reads {theirs.strip()[:60]!r}, autotriton's {mine.strip()[:60]!r}): it "
                "is recognised only as autotriton wrote it, a formatter's changes included"
            )
    return (
        f"the cached-launch block (line {first}) is {'shorter' if len(lines) < len(ours) else 'longer'} "
        "than autotriton's, or its wrapping lines are not `kernel = _autotriton_cached(kernel)`"
    )
