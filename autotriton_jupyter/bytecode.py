"""Whether the large packages this tool imports have their compiled bytecode (.pyc).

Without a kept .pyc, Python compiles a module's source every time a process imports it:
a package installed with `pip install --no-compile`, or an image built with
PYTHONDONTWRITEBYTECODE=1, pays it in every process. torch, sympy and triton are about
3,800 modules. On an H100 host of ours (docs/benchmarks.md), importing torch took 3.8-3.9 s
without their bytecode and 1.4 s with it, torch._dynamo after it 4.0-4.6 s and 0.9 s. A
one-shot verify imports torch twice (the command, and its fork server), and each worker
imports more after its fork.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import sys

# A few modules of each package that the verifier's processes import: the judge imports
# torch; the fork server and its workers also torch._dynamo (sympy with it) and Triton's
# compiler. One of them without its .pyc means the package was left without bytecode
# (the judge's own import of torch may have written the first file since).
CHECKED = {
    "torch": ("__init__.py", "_dynamo/convert_frame.py", "_inductor/compile_fx.py"),
    "sympy": ("__init__.py", "core/basic.py"),
    "triton": ("__init__.py", "compiler/compiler.py"),
}
# Tests of the packages that an older Python cannot compile (torch ships a few): left out
# of the command, so that it ends without an error.
SKIP = "/testing/_internal/"


def missing() -> list[str]:
    """The folders of CHECKED's packages with a module that has no .pyc beside it, where
    the sandboxed fork server and workers look (they do not get PYTHONPYCACHEPREFIX).
    Nothing is imported."""
    tag = sys.implementation.cache_tag
    if tag is None:  # an interpreter that keeps no bytecode at all
        return []
    out = []
    for name, files in CHECKED.items():
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.origin or not spec.submodule_search_locations:
            continue
        folder = os.path.dirname(spec.origin)
        for rel in files:
            source = os.path.join(folder, rel)
            head, tail = os.path.split(source)
            pyc = os.path.join(head, "__pycache__", f"{tail[:-3]}.{tag}.pyc")
            if os.path.isfile(source) and not os.path.exists(pyc):
                out.append(folder)
                break
    return out


def hint(folders: list[str]) -> str:
    """What to tell a user whose packages lack their bytecode, and the one command that
    compiles it beside their sources (it needs write access to those folders)."""
    names = ", ".join(os.path.basename(f) for f in folders)
    command = [sys.executable, "-m", "compileall", "-q", "-j", "0", "-x", SKIP, *folders]
    unset = "env -u PYTHONPYCACHEPREFIX " if os.environ.get("PYTHONPYCACHEPREFIX") else ""
    return (
        f"{names} {'has' if len(folders) == 1 else 'have'} no compiled bytecode here, so every "
        "process of the verifier compiles their source again (seconds per verify); compile it "
        "once, as a user who may write to those folders (their owner, or in your image's "
        f"build): {unset}{shlex.join(command)}"
    )
