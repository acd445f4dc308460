"""The reference's eager and torch.compile timings, kept on disk between runs.

Timing a reference (eager, then torch.compile with its compilation) costs seconds and
gives the same figures for the same task on the same machine, so they are kept, keyed
on everything they depend on: the task's source, the input shapes and dtypes timed, the
GPU, the driver, torch and Triton, and the timing settings. A change to any of them is
another key; entries older than MAX_AGE_S are timed again. `--no-cache` (VerifyOptions
.reference_cache) skips the file altogether.

The file is JSON, written whole to a temporary file and renamed into place under a lock,
so concurrent verifiers and an interrupted write never leave it half-written; a file
that cannot be read is treated as empty (and replaced on the next write).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MAX_AGE_S = 7 * 24 * 3600  # a week: drivers, clocks and neighbours change
MAX_ENTRIES = 500


def default_path() -> Path:
    """$AUTOTRITON_CACHE/reference-timing.json, else the user cache directory."""
    env = os.environ.get("AUTOTRITON_CACHE")
    base = Path(env) if env else Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    ) / "autotriton"
    return base / "reference-timing.json"


def key(**parts: Any) -> str:
    """A stable digest of everything a timing depends on."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class ReferenceTimings:
    """get/put of timing dicts by key, in one JSON file shared by every process."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, k: str) -> dict[str, Any] | None:
        """The timing stored under k, if it is there and recent; never raises."""
        return next(iter(self._found([k])), None)

    def has_any(self, keys: list[str]) -> bool:
        """Whether a recent timing is stored under any of `keys` (the file read once)."""
        return bool(self._found(keys))

    def _found(self, keys: list[str]) -> list[dict[str, Any]]:
        """The recent timings stored under `keys`, in their order; never raises."""
        try:
            data = self._read()
            entries = [data.get(k) for k in keys]
        except Exception:
            return []
        found = []
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("timing"), dict):
                continue
            try:
                if time.time() - float(entry.get("stored", 0)) > MAX_AGE_S:
                    continue
            except (TypeError, ValueError):
                continue
            found.append({**entry["timing"], "cached_at": entry.get("stored")})
        return found

    def put(self, k: str, timing: dict[str, Any]) -> None:
        """Store a timing; a cache that cannot be written is skipped (timing works without it)."""
        try:
            with self._locked():
                data = self._read()
                data[k] = {"stored": time.time(), "timing": timing}
                if len(data) > MAX_ENTRIES:  # the oldest go first
                    keep = sorted(data.items(), key=lambda kv: kv[1].get("stored", 0))
                    data = dict(keep[-MAX_ENTRIES:])
                fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".reference-timing.")
                try:
                    with os.fdopen(fd, "w") as f:
                        json.dump(data, f)
                    os.replace(tmp, self.path)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
                    raise
        except OSError:
            pass
