"""REST handlers of the side panel: the kernel library, the settings, the running jobs.

Each handler is thin: a plain function builds the JSON-ready answer, so it can be
tested and reused without a server. Nothing here loads a model or imports torch.
The library is `store.default_path()` ($AUTOTRITON_LIBRARY), read on every request.
"""

from __future__ import annotations

import asyncio
import json
import keyword
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import tornado.web
from jupyter_server.base.handlers import APIHandler

from ..store import Accepted, Store, StoreError, default_path


def library_path() -> Path:
    """The library file the panel shows."""
    return default_path()


def _kernel(a: Accepted) -> dict[str, Any]:
    return {
        "name": a.name,
        "task": a.task_name,
        "edited": a.edited,
        "created": a.created,
        "created_iso": time.strftime("%Y-%m-%d %H:%M", time.localtime(a.created)),
        "verdict": a.verdict,
        "speedup_vs_eager": a.speedup_vs_eager,
        "speedup_vs_compile": a.speedup_vs_compile,
        "speedup_vs_eager_b2b": a.speedup_vs_eager_b2b,
        "speedup_vs_compile_b2b": a.speedup_vs_compile_b2b,
        "model": a.model,
        "adapter": a.adapter,
    }


def _open(path: Path) -> Store:
    try:
        return Store(path, write=False)  # the panel only reads: it makes and upgrades nothing
    except OSError as e:
        raise StoreError(
            f"The kernel library {path} cannot be opened ({e}); check that its folder is "
            "readable and writable, or point AUTOTRITON_LIBRARY elsewhere."
        ) from e


def _read_error(path: Path, e: sqlite3.Error) -> StoreError:
    return StoreError(
        f"The kernel library {path} could not be read ({e}); if another program holds it, "
        f"try again; `autotriton kernels check --library {path}` says whether it is damaged."
    )


def list_kernels(path: Path, q: str = "") -> list[dict[str, Any]]:
    """Accepted kernels, newest first; q keeps those whose name or task name contains it."""
    if not path.exists():
        return []
    needle = q.strip().lower()
    with _open(path) as store:
        try:
            rows = store.accepted()
        except sqlite3.Error as e:
            raise _read_error(path, e) from e
    return [
        _kernel(a)
        for a in rows
        if needle in a.name.lower() or needle in a.task_name.lower()
    ]


def snippet(name: str) -> str:
    """A cell that binds the kernel's ModelNew class to a Python name."""
    ident = re.sub(r"\W", "_", name) or "kernel"
    if not ident.isidentifier():  # starts with a digit
        ident = "k_" + ident
    if keyword.iskeyword(ident):
        ident += "_"
    return (
        f"from autotriton_jupyter import load_kernel\n{ident} = load_kernel({json.dumps(name)})\n"
    )


def get_kernel(path: Path, name: str) -> dict[str, Any] | None:
    """One accepted kernel with its code and a snippet that uses it; None when there is none."""
    if not path.exists():
        return None
    with _open(path) as store:
        try:
            a = store.find(name)
        except sqlite3.Error as e:
            raise _read_error(path, e) from e
    if a is None:
        return None
    return {**_kernel(a), "code": a.code, "snippet": snippet(a.name)}


def settings(path: Path) -> dict[str, Any]:
    """The settings a run would use: model and adapter, the magic's defaults, what is usable."""
    from ..config import TritonizeOptions, load
    from ..model.adapters import likely_adapter, list_adapters
    from ..model.generator import GenerationError, GenerationParams
    from ..model.registry import ModelOptions, list_models, resolve, usable

    options = load("model", ModelOptions())
    run = TritonizeOptions()  # the magic's defaults are these (its traitlets read them)
    adapters = list_adapters()
    active = likely_adapter(options.adapter, adapters)
    try:
        spec = usable(resolve(options.name, options))
        available, needs = spec.available, spec.needs
    except GenerationError as e:
        available, needs = False, str(e)
    return {
        "model": {
            "name": options.name,
            "adapter": options.adapter,
            "available": available,
            "needs": needs,
        },
        "n": run.n,
        "rounds": run.rounds,
        "max_tokens": GenerationParams.max_tokens,
        "models": [
            {"name": s.name, "backend": s.backend, "available": s.available, "needs": s.needs}
            for s in list_models(options)
        ],
        "adapters": [
            {"name": a.name, "base": a.base, "created": a.created, "active": a.name == active}
            for a in adapters
        ],
        "library": str(path),
    }


class _Handler(APIHandler):
    def reply(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data))

    def fail(self, e: Exception) -> None:
        self.log.warning("autotriton: %s", e)
        self.reply({"message": str(e)}, 500)

    async def off_loop(self, fn: Any, *args: Any) -> Any:
        """Run blocking work (SQLite, file system, a 1 s probe of a model server) in a thread."""
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


class KernelsHandler(_Handler):
    """GET /autotriton/kernels?q=TEXT"""

    @tornado.web.authenticated
    async def get(self) -> None:
        path = library_path()
        try:
            kernels = await self.off_loop(list_kernels, path, self.get_argument("q", ""))
        except StoreError as e:
            return self.fail(e)
        self.reply({"library": str(path), "kernels": kernels})


class KernelHandler(_Handler):
    """GET /autotriton/kernels/<name>"""

    @tornado.web.authenticated
    async def get(self, name: str) -> None:
        path = library_path()
        try:
            kernel = await self.off_loop(get_kernel, path, name)
        except StoreError as e:
            return self.fail(e)
        if kernel is None:
            return self.reply(
                {"message": f"No accepted kernel named {name!r} in {path}; refresh the list."},
                404,
            )
        self.reply(kernel)


class SettingsHandler(_Handler):
    """GET /autotriton/settings"""

    @tornado.web.authenticated
    async def get(self) -> None:
        from ..config import ConfigError

        try:
            data = await self.off_loop(settings, library_path())
        except ConfigError as e:
            return self.fail(e)
        self.reply(data)


class JobsHandler(_Handler):
    """GET /autotriton/jobs"""

    @tornado.web.authenticated
    async def get(self) -> None:
        from ..jobs import jobs_dir, list_jobs

        jobs = await self.off_loop(list_jobs, jobs_dir(library_path()))
        # A kernel keeps the notebook path it was started for; the server's sessions
        # know the path now (a notebook renamed or moved since).
        sessions = await self.serverapp.session_manager.list_sessions()
        paths = {s["kernel"]["id"]: s["path"] for s in sessions if s.get("kernel")}
        for job in jobs:
            job["notebook"] = paths.get(job["kernel"], job["notebook"])
        self.reply({"jobs": jobs})


ROUTES = [
    ("kernels", KernelsHandler),
    ("kernels/([^/]+)", KernelHandler),
    ("settings", SettingsHandler),
    ("jobs", JobsHandler),
]
