"""Whether the large packages this tool imports have their compiled bytecode (.pyc).

Without a kept .pyc, Python compiles a module's source every time a process imports it:
a package installed with `pip install --no-compile`, or an image built with
PYTHONDONTWRITEBYTECODE=1, pays it in every process. torch, sympy and triton are about
3,800 modules. On an H100 host of ours (docs/benchmarks.md), importing torch took 3.8-3.9 s
without their bytecode and 1.4 s with it, torch._dynamo after it 4.0-4.6 s and 0.9 s; a
one-shot verify starts three processes that import torch.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import sys

PACKAGES = ("torch", "sympy", "triton")


def missing(packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """The folders of those packages whose __init__ has no .pyc where this Python looks
    for one (beside it, or under PYTHONPYCACHEPREFIX). Nothing is imported."""
    out = []
    for name in packages:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        origin = getattr(spec, "origin", None) if spec is not None else None
        if not origin or not origin.endswith(".py"):
            continue
        try:
            cached = importlib.util.cache_from_source(origin)
        except NotImplementedError:  # an interpreter that keeps no bytecode at all
            return []
        if not os.path.exists(cached):
            out.append(os.path.dirname(origin))
    return out


def hint(folders: list[str]) -> str:
    """What to tell a user whose packages lack their bytecode, and the one command that
    compiles it (it needs write access to those folders)."""
    names = ", ".join(os.path.basename(f) for f in folders)
    command = " ".join(
        [shlex.quote(sys.executable), "-m", "compileall", "-q", "-j", "0", *map(shlex.quote, folders)]
    )
    return (
        f"{names} {'has' if len(folders) == 1 else 'have'} no compiled bytecode here, so every "
        "process compiles their source again (seconds per verify); compile it once with: "
        f"{command}"
    )
