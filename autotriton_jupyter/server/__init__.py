"""The jupyter_server extension behind the JupyterLab side panel: REST under /autotriton/.

Endpoints (all GET, all need the server's token, all answer JSON):
    /autotriton/kernels?q=TEXT   accepted kernels, newest first
    /autotriton/kernels/<name>   one kernel with its code and a snippet using it
    /autotriton/settings         model, adapters, the magic's defaults, the library path
    /autotriton/jobs             %%autotriton runs in progress or finished within the hour

The library shown is $AUTOTRITON_LIBRARY (else the user data directory), as for the
magic and the command line; set it in the server's environment to show another.
"""

from __future__ import annotations

from typing import Any


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Register the handlers with the running server."""
    from jupyter_server.utils import url_path_join

    from .handlers import ROUTES, library_path

    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(
        ".*$", [(url_path_join(base, "autotriton", route), h) for route, h in ROUTES]
    )
    serverapp.log.info(
        "autotriton: side panel API at %sautotriton/ (library %s)", base, library_path()
    )
