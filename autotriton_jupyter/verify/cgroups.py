"""Kernel-enforced memory and process limits for each worker, where the machine lets us.

The fork server's watch (forkserver.py) sees resident memory and counts processes
every 50 ms; it cannot see memory a worker keeps in a memory file or a tmpfs, and a
fast fork tree can outrun it. A control group per worker is enforced by the kernel
itself: its memory limit counts every page the worker's processes charge (tmpfs and
memory files included), its pids limit stops a fork bomb at the fork. Control groups
are used when the judge may create them (as root, cgroup v1 or v2); elsewhere the
fork server's watch is the limit.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from .confine import kill_until_dying

_ROOT = Path("/sys/fs/cgroup")


def _own_path(controller: str) -> str:
    """This process's cgroup path in a v1 hierarchy ('' for v2's unified one)."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, names, path = line.rstrip("\n").split(":", 2)
                if controller in names.split(","):
                    return path
    except OSError:
        pass
    return "/"


class Limits:
    """Per-worker control groups under one folder per pool; unavailable means do nothing."""

    def __init__(self, tag: str) -> None:
        self.dirs: list[tuple[str, Path]] = []  # (controller, the pool's folder)
        self.v2 = False
        if os.geteuid() != 0:
            return
        if (_ROOT / "cgroup.controllers").exists():  # unified hierarchy
            with contextlib.suppress(OSError):
                wanted = {"memory", "pids"}
                have = set((_ROOT / "cgroup.controllers").read_text().split())
                if wanted <= have:
                    (_ROOT / "cgroup.subtree_control").write_text("+memory +pids")
                    pool = _ROOT / f"autotriton-{tag}"
                    pool.mkdir(exist_ok=True)
                    (pool / "cgroup.subtree_control").write_text("+memory +pids")
                    self.dirs, self.v2 = [("unified", pool)], True
            return
        for controller in ("memory", "pids"):
            base = _ROOT / controller
            if not (base / "cgroup.procs").exists():
                continue
            pool = base / _own_path(controller).lstrip("/") / f"autotriton-{tag}"
            try:
                pool.mkdir(parents=False, exist_ok=True)
            except OSError:
                continue
            self.dirs.append((controller, pool))

    @property
    def available(self) -> bool:
        return bool(self.dirs)

    def attach(self, name: str, pid: int, memory_bytes: int, tasks: int) -> bool:
        """Put process `pid` (and all its threads) in a new group `name` with these limits."""
        ok = False
        for controller, pool in self.dirs:
            group = pool / name
            try:
                group.mkdir(exist_ok=True)
                if controller in ("unified", "memory") and memory_bytes:
                    limit = "memory.max" if self.v2 else "memory.limit_in_bytes"
                    (group / limit).write_text(str(memory_bytes))
                    if self.v2:
                        with contextlib.suppress(OSError):
                            (group / "memory.swap.max").write_text("0")
                if controller in ("unified", "pids"):
                    (group / "pids.max").write_text(str(tasks))
                (group / "cgroup.procs").write_text(str(pid))
                ok = True
            except OSError:
                continue
        return ok

    def out_of_memory(self, name: str) -> bool:
        """Whether the kernel's memory limit killed a process of group `name`."""
        for _, pool in self.dirs:
            group = pool / name
            for fname in ("memory.events", "memory.oom_control"):
                with contextlib.suppress(OSError, ValueError):
                    for line in (group / fname).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill" and int(value) > 0:
                            return True
        return False

    def hit_process_limit(self, name: str) -> bool:
        """Whether a fork in group `name` was refused at its pids limit."""
        for _, pool in self.dirs:
            with contextlib.suppress(OSError, ValueError):
                for line in (pool / name / "pids.events").read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "max" and int(value) > 0:
                        return True
        return False

    def kill(self, name: str, within_s: float = 0.25) -> None:
        """SIGKILL every process of group `name` now: through cgroup.kill where the kernel
        has it (no fork can race it), else each process listed, again until every one is
        dying or `within_s` is over (the pids limit bounds what can be forked meanwhile)."""
        if not self.dirs:
            return
        group = self.dirs[0][1] / name
        if self.v2:
            with contextlib.suppress(OSError):
                (group / "cgroup.kill").write_text("1")
                return

        def listed() -> list[int]:
            try:
                return [int(x) for x in (group / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):  # gone already
                return []

        kill_until_dying(listed, within_s)

    def remove(self, name: str) -> None:
        """Remove group `name` once its processes are gone (they may take a moment to be reaped)."""
        for _, pool in self.dirs:
            group = pool / name
            for _ in range(20):
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)

    def close(self) -> None:
        for _, pool in self.dirs:
            for child in list(pool.iterdir()) if pool.exists() else []:
                if child.is_dir():
                    self.remove_dir(child)
            self.remove_dir(pool)

    @staticmethod
    def remove_dir(path: Path) -> None:
        for _ in range(20):
            try:
                path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.05)
