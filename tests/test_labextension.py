"""The JupyterLab panel ships: built, installed where JupyterLab looks, inside a wheel; its
logic passes its Jest tests."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import autotriton_jupyter

ROOT = Path(__file__).parent.parent
PACKAGE = Path(autotriton_jupyter.__file__).parent
BIN = Path(sys.executable).parent
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _jupyter(*args: str) -> str:
    p = subprocess.run(
        [str(BIN / "jupyter"), *args], capture_output=True, text=True, timeout=120, check=True
    )
    return ANSI.sub("", p.stdout + p.stderr)


def _remote_entry(folder: Path) -> str:
    entries = sorted(p.name for p in (folder / "static").glob("remoteEntry.*.js"))
    assert len(entries) == 1, f"{folder}/static holds {entries}"
    return entries[0]


def test_jupyterlab_lists_the_panel_as_enabled():
    out = _jupyter("labextension", "list")
    assert re.search(r"autotriton-jupyter v\S+ enabled\s+OK", out), out


def test_the_installed_panel_is_the_built_one():
    paths = autotriton_jupyter._jupyter_labextension_paths()
    assert paths == [{"src": "labextension", "dest": "autotriton-jupyter"}]
    built = PACKAGE / paths[0]["src"]
    installed = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "autotriton-jupyter"
    meta = json.loads((installed / "package.json").read_text())
    assert meta["name"] == "autotriton-jupyter"
    assert meta["jupyterlab"]["_build"]["load"].startswith("static/remoteEntry.")
    # Same content hash: JupyterLab serves the current build, not an older copy.
    assert _remote_entry(installed) == _remote_entry(built)


def test_the_server_extension_is_enabled():
    out = _jupyter("server", "extension", "list")
    assert re.search(r"autotriton_jupyter\s+enabled", out), out
    assert re.search(r"autotriton_jupyter \S+ OK", out), out


def test_the_panel_logic_passes_its_jest_tests():
    folder = ROOT / "labextension"
    if not (folder / "node_modules" / ".bin" / "jest").exists():
        pytest.fail("labextension/node_modules is missing: run bash scripts/setup.sh")
    p = subprocess.run(
        ["npx", "--no-install", "jest", "--ci"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    match = re.search(r"Tests:\s+(\d+) passed, (\d+) total", out)
    assert match and match.group(1) == match.group(2) and int(match.group(1)) >= 20, out


def test_a_wheel_carries_the_panel_and_the_server_config(tmp_path):
    # skip-if-exists: the wheel reuses the JavaScript that setup already built.
    src = tmp_path / "src"
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "node_modules", "autotriton-out", "autotriton-eval", "*.sqlite"
        ),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(src)],
        check=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("autotriton_jupyter-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    data = next(n.split("/")[0] for n in names if ".data/" in n)
    lab = f"{data}/data/share/jupyter/labextensions/autotriton-jupyter"
    assert f"{lab}/package.json" in names
    assert f"{lab}/install.json" in names
    assert f"{lab}/static/style.js" in names
    assert any(re.fullmatch(rf"{re.escape(lab)}/static/remoteEntry\.\w+\.js", n) for n in names)
    assert f"{data}/data/etc/jupyter/jupyter_server_config.d/autotriton_jupyter.json" in names
    assert "autotriton_jupyter/server/__init__.py" in names
