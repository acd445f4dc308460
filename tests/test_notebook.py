"""examples/quickstart.ipynb runs headless on a fresh clone, and its saved outputs show the result."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).parent.parent / "examples" / "quickstart.ipynb"


def test_quickstart_executes_and_keeps_a_static_view(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTRITON_LIBRARY", str(tmp_path / "lib.sqlite"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    saved = tmp_path / "quickstart.out.ipynb"
    nbformat.write(nb, saved)
    nb = nbformat.read(saved, as_version=4)
    magic_cells = [
        c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%autotriton")
    ]
    assert len(magic_cells) == 2
    for cell in magic_cells:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, errors
        views = [
            o
            for o in cell.outputs
            if "text/html" in o.get("data", {}) and "round/sample" in o["data"]["text/html"]
        ]
        assert views, [o.get("data", {}).keys() for o in cell.outputs]
        html = views[-1]["data"]["text/html"]
        assert "autotriton:" in html and "completion (reasoning and answer)" in html
        assert "application/vnd.jupyter.widget-view+json" in views[-1]["data"]
    status = nb.cells[1].outputs
    assert any("library:" in o.get("text", "") for o in status)
