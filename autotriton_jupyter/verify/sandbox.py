"""Worker processes: start, warm spares, timeouts, crash and memory containment, GPU lock.

Workers come from multiprocessing's fork server, which imports torch and triton
once; each worker is a fresh fork of it (pristine: nothing a previous candidate did
is in it), initialises the device on its own, and serves one role before it is
killed. Spares are started ahead of time, so the device start-up is paid while the
previous candidate is still running.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import wire

_POLL_S = 0.05
_MAX_MESSAGE = 4 << 30  # a reply larger than this is refused, spilled or not


class WorkerFailure(Exception):
    """A worker died, hung, ran out of memory, or reported an error."""

    def __init__(
        self, kind: str, message: str, log: str = "", traceback: str = "", op: str = ""
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.op = op
        self.message = message
        self.log = log
        self.traceback = traceback


def _signal_name(code: int) -> str:
    try:
        sig = signal.Signals(-code)
    except ValueError:
        return f"signal {-code}"
    meaning = {
        signal.SIGSEGV: "segmentation fault",
        signal.SIGKILL: "killed",
        signal.SIGABRT: "aborted",
        signal.SIGBUS: "bus error",
        signal.SIGFPE: "arithmetic error",
    }.get(sig, "")
    return f"{sig.name}{f' ({meaning})' if meaning else ''}"


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


class Worker:
    """One started worker process and the judge's end of its pipe."""

    def __init__(self, proc: Any, conn: Any, log_path: Path, memory_limit: int) -> None:
        self.spill_dir = str(log_path.parent)
        self.proc = proc
        self.conn = conn
        self.log_path = log_path
        self.memory_limit = memory_limit
        self.ready: dict[str, Any] | None = None
        self.expired = False
        self._deadline = float("inf")

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the worker's output (only the end is read, however large the log)."""
        try:
            with self.log_path.open("rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - chars))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _expire(self) -> None:
        self.expired = True
        self.proc.kill()

    def _receive(self, deadline: float, what: str, timeout: float) -> dict[str, Any]:
        while True:
            if self.conn.poll(_POLL_S):
                try:
                    reply = wire.recv(self.conn, self.spill_dir, _MAX_MESSAGE)
                except (EOFError, OSError):
                    self._raise_dead(what, timeout)
                except wire.WireError as e:
                    self.kill()
                    raise WorkerFailure(
                        "protocol", f"The worker sent a malformed reply: {e}."
                    ) from e
                if not isinstance(reply, dict):
                    self.kill()
                    raise WorkerFailure("protocol", "The worker sent a reply of the wrong shape.")
                return reply
            if not self.proc.is_alive():
                self._raise_dead(what, timeout)
            if self.memory_limit and _rss_bytes(self.proc.pid) > self.memory_limit:
                self.kill()
                raise WorkerFailure(
                    "memory",
                    f"{what} used more than "
                    f"{self.memory_limit / 2**30:.1f} GiB of host memory and was "
                    "stopped.",
                    self.log_tail(),
                )
            if time.monotonic() > deadline:
                self.kill()
                self._raise_dead(what, timeout)

    def _raise_dead(self, what: str, timeout: float) -> None:
        if self.proc.is_alive():
            self.kill()
        self.proc.join(1)
        if self.expired or time.monotonic() > self._deadline:
            raise WorkerFailure(
                "timeout",
                f"{what} did not finish within {timeout:g} s and was stopped.",
                self.log_tail(),
            )
        code = self.proc.exitcode
        how = _signal_name(code) if code is not None and code < 0 else f"exit code {code}"
        raise WorkerFailure("crash", f"{what} crashed the worker process ({how}).", self.log_tail())

    def _guarded(self, timeout: float, what: str, send: dict[str, Any] | None) -> dict[str, Any]:
        """Send (optionally) and receive, with a watchdog that kills the worker at the deadline.

        The watchdog is what ends a read or write the worker left half done: once the
        process is killed, the blocked call sees end-of-file.
        """
        self._deadline = time.monotonic() + timeout
        guard = threading.Timer(timeout, self._expire)
        guard.daemon = True
        guard.start()
        try:
            if send is not None:
                try:
                    wire.send(self.conn, send, self.spill_dir)
                except (BrokenPipeError, OSError):
                    self._raise_dead(what, timeout)
            return self._receive(self._deadline, what, timeout)
        finally:
            guard.cancel()

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        if self.ready is None:
            msg = self._guarded(timeout, "Starting the worker", None)
            if not msg.get("ok"):
                self.kill()
                raise WorkerFailure(
                    "start", str(msg.get("error", "the worker failed to start")), self.log_tail()
                )
            self.ready = msg
        return self.ready

    def call(self, op: str, timeout: float, what: str = "", **payload: Any) -> dict[str, Any]:
        """Send one command and wait for its reply; failures raise WorkerFailure."""
        self.wait_ready(timeout)
        reply = self._guarded(timeout, what or op, {"op": op, **payload})
        if not reply.get("ok"):
            raise WorkerFailure(
                "error",
                str(reply.get("error", "unknown error"))[:2000],
                self.log_tail(),
                str(reply.get("traceback", ""))[-3000:],
                op=op,
            )
        return reply

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        with contextlib.suppress(OSError):
            self.conn.close()


class GpuLock:
    """Many holders share the device for correctness runs; timing holds it alone."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting_exclusive = 0

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive or self._waiting_exclusive:
                self._cond.wait()
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
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
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


_context_lock = threading.Lock()
_context: Any = None


def _forkserver_context() -> Any:
    """The fork server that preloads torch and triton (started once per process)."""
    global _context
    with _context_lock:
        if _context is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["autotriton_jupyter.verify.worker"])
            _context = ctx
        return _context


_start_lock = threading.Lock()


@contextlib.contextmanager
def _bare_main() -> Iterator[None]:
    """Hide the caller's __main__ while a worker starts.

    multiprocessing would otherwise re-import the caller's main script (or notebook
    kernel) inside every worker, running the user's code there again.
    """
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = saved


# The workers' environment, fixed when the fork server starts:
# - glibc fills fresh heap allocations with a pattern, and large ones stay on the heap,
#   so CPU outputs a kernel never wrote hold garbage rather than lucky zeros;
# - torch.compile (the reference's timing baseline) compiles in-process, since a
#   daemonic worker may not start a pool of compile processes.
_WORKER_ENV = {
    "MALLOC_PERTURB_": "165",
    "MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024),
    "TORCHINDUCTOR_COMPILE_THREADS": "1",
}


class Pool:
    """Starts workers for one device, keeping `spares` of them warm."""

    def __init__(
        self,
        device: str,
        *,
        spares: int = 1,
        memory_limit: int = 0,
        gpu_fraction: float = 0.0,
        start_timeout: float = 120.0,
    ) -> None:
        self.device = device
        self.spares = spares
        self.memory_limit = memory_limit
        self.gpu_fraction = gpu_fraction
        self.start_timeout = start_timeout
        self.lock = GpuLock()
        self._dir = tempfile.TemporaryDirectory(prefix="autotriton-verify-")
        self._spare: list[Worker] = []
        self._live: set[Worker] = set()
        self._count = 0
        self._starting = 0
        self._mutex = threading.Lock()
        self._closed = False

    @property
    def workdir(self) -> Path:
        return Path(self._dir.name)

    def _start(self) -> Worker:
        ctx = _forkserver_context()
        from . import worker as worker_module

        with self._mutex:
            self._count += 1
            n = self._count
        log_path = self.workdir / f"worker-{n}.log"
        parent, child = ctx.Pipe(duplex=True)
        proc = ctx.Process(
            target=worker_module.serve,
            args=(
                child,
                self.device,
                str(self.workdir),
                str(log_path),
                self.gpu_fraction,
            ),
            daemon=True,
            name=f"autotriton-worker-{n}",
        )
        with _start_lock, _bare_main():
            saved = {k: os.environ.get(k) for k in _WORKER_ENV}
            os.environ.update(_WORKER_ENV)
            try:
                proc.start()
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
        child.close()
        w = Worker(proc, parent, log_path, self.memory_limit)
        with self._mutex:
            self._live.add(w)
        return w

    def warm(self) -> None:
        """Start spare workers now, so the first candidate does not wait for them."""
        with self._mutex:
            missing = max(0, self.spares - len(self._spare) - self._starting)
            self._starting += missing
        for _ in range(missing):
            try:
                w = self._start()
            finally:
                with self._mutex:
                    self._starting -= 1
            with self._mutex:
                self._spare.append(w)

    def acquire(self) -> Worker:
        """A started worker (a warm spare when there is one); a new spare is started behind it."""
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        with self._mutex:
            w = self._spare.pop(0) if self._spare else None
        if w is None or not w.proc.is_alive():
            if w is not None:
                self.release(w)
            w = self._start()
        self.warm()
        w.wait_ready(self.start_timeout)
        return w

    def release(self, w: Worker) -> None:
        """Kill a worker once its role is done (workers are never reused)."""
        w.kill()
        with self._mutex:
            self._live.discard(w)

    def close(self) -> None:
        """Kill every worker, spares included, and remove the scratch folder."""
        self._closed = True
        with self._mutex:
            workers = list(self._live)
            self._live.clear()
            self._spare.clear()
        for w in workers:
            w.kill()
        self._dir.cleanup()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
