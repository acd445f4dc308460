"""bytecode.py: which packages lack their .pyc, and the command that compiles it."""

import importlib
import py_compile
import shlex
import subprocess
import sys

from autotriton_jupyter import bytecode


def _package(root, name, files):
    pkg = root / name
    for rel in files:
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text("X = 1\n")
    return pkg


def test_a_package_with_a_checked_module_lacking_its_pyc_is_found(tmp_path, monkeypatch):
    pkg = _package(tmp_path, "pkg_without_pyc", ["__init__.py", "deep/mod.py"])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(bytecode, "CHECKED", {"pkg_without_pyc": ("__init__.py", "deep/mod.py"), "no_such_pkg": ("__init__.py",)})
    # The judge's own bytecode may live elsewhere; the sandboxed processes look beside
    # the sources, and so does the check.
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "elsewhere"))
    importlib.invalidate_caches()
    assert bytecode.missing() == [str(pkg)]
    assert "pkg_without_pyc" not in sys.modules  # looked for, never imported
    # the package's own __init__ compiled (as the judge's import of torch would): the
    # module only the sandboxed processes import still has none
    init = pkg / "__init__.py"
    py_compile.compile(str(init), cfile=str(pkg / "__pycache__" / f"__init__.{sys.implementation.cache_tag}.pyc"), doraise=True)
    assert bytecode.missing() == [str(pkg)]
    # the hint's own command, run: nothing is missing afterwards
    command = shlex.split(bytecode.hint([str(pkg)]).rpartition(": ")[2])
    assert command[:2] == ["env", "-u"]  # the prefix would take the files elsewhere
    assert subprocess.run(command, capture_output=True).returncode == 0
    assert bytecode.missing() == []


def test_the_hint_names_the_packages_and_a_command_that_compiles_them(monkeypatch):
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    text = bytecode.hint(["/opt/site packages/torch", "/opt/site packages/sympy"])
    assert text.startswith("torch, sympy have no compiled bytecode")
    assert "who may write to those folders" in text
    assert text.endswith(
        f"{sys.executable} -m compileall -q -j 0 -x /testing/_internal/ "
        "'/opt/site packages/torch' '/opt/site packages/sympy'"
    )
    assert "torch has no compiled bytecode" in bytecode.hint(["/x/torch"])
