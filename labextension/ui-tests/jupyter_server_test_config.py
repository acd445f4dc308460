"""The JupyterLab server of the browser test: galata's test settings, the tiny model, and a
fresh kernel library holding one accepted kernel (put there through the real Store API).

Never use this configuration elsewhere: it switches off the server's token and XSRF checks.
"""

import os
from pathlib import Path

from jupyterlab.galata import configure_jupyter_server

from autotriton_jupyter.store import Store

configure_jupyter_server(c)  # noqa: F821 (c is the config object jupyter passes in)
c.ServerApp.port = int(os.environ.get("AUTOTRITON_UI_PORT", "8765"))  # noqa: F821
c.ServerApp.allow_root = True  # noqa: F821 (CI runs as root)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
library = Path(os.environ["AUTOTRITON_LIBRARY"])
library.unlink(missing_ok=True)
with Store(library) as store:
    task = store.add_task("add_relu", (EXAMPLES / "tasks" / "add_relu.py").read_text())
    code = (EXAMPLES / "candidates" / "add_relu" / "pass_masked.py").read_text()
    store.accept("FastAddRelu", task, code)
