"""The side panel in a real JupyterLab and a real browser: labextension/ui-tests/ (Galata/Playwright,
Debian's Chromium) starts `jupyter lab` with the tiny model and presses "Tritonize this"."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
UI = ROOT / "labextension" / "ui-tests"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))


@pytest.mark.timeout(900)
def test_tritonize_this_in_jupyterlab():
    if not CHROMIUM.exists():
        pytest.skip(
            f"no Chromium at {CHROMIUM}: install it (apt-get install chromium; scripts/setup.sh "
            "does when run as root) to run the browser test"
        )
    npm = shutil.which("npm")
    assert npm, "npm is needed for the browser test (scripts/setup.sh checks for it)"
    if not (UI / "node_modules" / "@jupyterlab" / "galata").exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=UI, check=True, timeout=600)
    env = {**os.environ, "CHROMIUM": str(CHROMIUM), "CI": "1"}
    p = subprocess.run(
        ["npx", "--no-install", "playwright", "test"],
        cwd=UI,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-6000:]
    assert "1 passed" in out, out[-6000:]
