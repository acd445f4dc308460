"""bytecode.py: which packages lack their .pyc, and the command that compiles it."""

import importlib
import py_compile
import sys

from autotriton_jupyter import bytecode


def test_a_package_without_its_pyc_is_found_and_one_with_it_is_not(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg_without_pyc"
    pkg.mkdir()
    init = pkg / "__init__.py"
    init.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    importlib.invalidate_caches()
    assert bytecode.missing(("pkg_without_pyc", "no_such_package_here")) == [str(pkg)]
    assert "pkg_without_pyc" not in sys.modules  # looked for, never imported
    py_compile.compile(str(init), cfile=importlib.util.cache_from_source(str(init)), doraise=True)
    assert bytecode.missing(("pkg_without_pyc",)) == []


def test_the_hint_names_the_packages_and_a_command_that_compiles_them():
    text = bytecode.hint(["/opt/site packages/torch", "/opt/site packages/sympy"])
    assert text.startswith("torch, sympy have no compiled bytecode")
    assert "-m compileall -q -j 0 '/opt/site packages/torch' '/opt/site packages/sympy'" in text
    assert "torch has no compiled bytecode" in bytecode.hint(["/x/torch"])
