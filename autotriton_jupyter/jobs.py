"""Job progress files: a running %%autotriton writes its state where the JupyterLab panel can read it.

One JSON file per run, `<jobs_dir>/<id>.json`, replaced whole on every write (temp file
+ os.replace) so a reader never sees half a file:

    {"id", "task", "notebook": str | null, "kernel": str | null, "pid", "state", "stage",
     "lines": [str], "started", "updated"}

"notebook" is the path the kernel was started for (JPY_SESSION_NAME); "kernel" is the
kernel's id, by which the server finds the notebook's current path after a rename.

state is "running", "done", "failed" or "cancelled" as written; `list_jobs` reports a
"running" job whose process is gone as "stopped". Progress files are a convenience:
a write that fails (read-only folder, full disk) warns once and never stops the run.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

STATES = ("running", "done", "failed", "cancelled", "stopped")
KEEP_FINISHED_S = 3600.0
WRITES_PER_S = 4.0


def jobs_dir(library: str | Path | None = None) -> Path:
    """Where progress files live: $AUTOTRITON_JOBS, else `jobs/` in the library's side
    folder (store.side_dir: beside the default library, in the user cache for others)."""
    env = os.environ.get("AUTOTRITON_JOBS")
    if env:
        return Path(env)
    from .store import side_dir

    return side_dir(library) / "jobs"


def _kernel_id() -> str | None:
    """The id of the Jupyter kernel this process is (from its connection file's name), if any."""
    app = sys.modules.get("ipykernel.kernelapp")
    if app is None or not app.IPKernelApp.initialized():
        return None
    name = Path(app.IPKernelApp.instance().connection_file or "").name
    if name.startswith("kernel-") and name.endswith(".json"):
        return name[len("kernel-") : -len(".json")]
    return None


class JobLog:
    """The progress file of one run, written from the kernel process."""

    def __init__(self, task: str, library: str | Path | None = None) -> None:
        now = time.time()
        self.dir = jobs_dir(library)
        self.data: dict[str, Any] = {
            "id": f"{int(now)}-{os.getpid()}-{uuid.uuid4().hex[:8]}",
            "task": task,
            "notebook": os.environ.get("JPY_SESSION_NAME") or None,
            "kernel": _kernel_id(),
            "pid": os.getpid(),
            "state": "running",
            "stage": "starting",
            "lines": [],
            "started": now,
            "updated": now,
        }
        self.path = self.dir / f"{self.data['id']}.json"
        self.last_write = 0.0
        self.broken = False
        self.lock = threading.Lock()
        self._write(force=True)

    def update(
        self, stage: str | None = None, lines: list[str] | None = None, force: bool = False
    ) -> None:
        """Record the current stage and status lines; unforced writes come at most 4 times a second."""
        with self.lock:
            if stage is not None:
                self.data["stage"] = stage
            if lines is not None:
                self.data["lines"] = list(lines)
            self._write(force)

    def finish(self, state: str = "done") -> None:
        """The run is over: "done", "failed" or "cancelled"."""
        if state not in STATES:
            raise ValueError(f"unknown job state {state!r}")
        with self.lock:
            self.data["state"] = state
            self._write(force=True)

    def _write(self, force: bool) -> None:
        if self.broken:
            return
        now = time.monotonic()
        if not force and now - self.last_write < 1.0 / WRITES_PER_S:
            return
        self.last_write = now
        self.data["updated"] = time.time()
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(self.data))
            os.replace(tmp, self.path)
        except OSError as e:
            self.broken = True
            print(
                f"autotriton: cannot write progress to {self.dir} ({e}); the JupyterLab panel "
                "will not show this run (set AUTOTRITON_JOBS to a writable folder).",
                file=sys.stderr,
            )
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    except (OSError, ValueError, OverflowError):
        return False
    return True


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        job = {
            "id": str(data["id"]),
            "task": str(data["task"]),
            "notebook": data.get("notebook") if isinstance(data.get("notebook"), str) else None,
            "kernel": data.get("kernel") if isinstance(data.get("kernel"), str) else None,
            "pid": int(data["pid"]),
            "state": str(data["state"]),
            "stage": str(data.get("stage", "")),
            "lines": [str(x) for x in data.get("lines", [])],
            "started": float(data["started"]),
            "updated": float(data.get("updated", data["started"])),
        }
    except (KeyError, TypeError, ValueError):
        return None
    return job if job["state"] in STATES else None


def list_jobs(directory: str | Path | None = None) -> list[dict[str, Any]]:
    """Recent jobs, newest first: corrupt files skipped, dead "running" ones shown as "stopped",
    and finished ones older than an hour deleted."""
    folder = Path(directory) if directory else jobs_dir()
    if not folder.is_dir():
        return []
    now = time.time()
    jobs = []
    for path in folder.glob("*.json"):
        job = _read(path)
        if job is None:
            continue
        if job["state"] == "running" and not _alive(job["pid"]):
            job["state"] = "stopped"
        if job["state"] != "running" and now - job["updated"] > KEEP_FINISHED_S:
            try:
                path.unlink()
            except OSError:
                pass
            continue
        jobs.append(job)
    return sorted(jobs, key=lambda j: j["started"], reverse=True)
