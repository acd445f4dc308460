"""The device lock: many holders share the device for correctness runs; timing holds it alone.

It holds across threads of one verifier and across verifier processes on one machine
(two notebooks, a notebook and an `eval`): the process-wide part is a file lock
(flock) on a file named for the device, shared while any thread of this process runs
correctness work, exclusive while one times.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path


def lock_path(device: str) -> Path:
    """The lock file for a device: one per GPU set, shared by every user of the machine."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "all") if device == "cuda" else "cpu"
    key = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{device}-{visible}")[:80]
    return Path(os.environ.get("AUTOTRITON_LOCK_DIR") or tempfile.gettempdir()) / f"autotriton-{key}.lock"


class GpuLock:
    """Shared for correctness runs, exclusive for timing; across threads and processes."""

    def __init__(self, path: Path | None = None) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting_exclusive = 0
        self._path = path
        self._fd: int | None = None

    def _file(self) -> int | None:
        if self._path is None:
            return None
        if self._fd is None:
            try:
                fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
            except OSError:
                self._path = None  # no shared lock file to be had: this process's lock still holds
                return None
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o666)  # other users' verifiers take the same lock
            self._fd = fd
        return self._fd

    def _flock(self, how: int) -> None:
        fd = self._file()
        if fd is not None:
            fcntl.flock(fd, how)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive or self._waiting_exclusive:
                self._cond.wait()
            self._shared += 1
            if self._shared == 1:
                self._flock(fcntl.LOCK_SH)
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                if self._shared == 0:
                    self._flock(fcntl.LOCK_UN)
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting_exclusive += 1
            while self._exclusive or self._shared:
                self._cond.wait()
            self._waiting_exclusive -= 1
            self._exclusive = True
        try:
            self._flock(fcntl.LOCK_EX)
            yield
        finally:
            self._flock(fcntl.LOCK_UN)
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()

    def close(self) -> None:
        """Let the lock file go; later holds (a thread still finishing) are this process's only."""
        self._path = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
