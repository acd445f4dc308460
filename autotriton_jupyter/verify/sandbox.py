"""Worker processes: the sandboxed fork server, warm spares, timeouts, containment, device lock.

Workers come from our own fork server (forkserver.py), which runs inside a bubblewrap
sandbox (bwrap.py) and imports torch and triton once; each worker is a fresh fork of
it (pristine: nothing a previous candidate did is in it), confined in namespaces of
its own (confine.py), initialises the device on its own, and serves one role before
it is killed. Spares are started ahead of time, so the device start-up is paid while
the previous candidate is still running.

The judge holds, for each worker, only the judge's end of a socket, a log file the
worker writes to, and a pidfd (to kill it and see it end). Workers hold nothing of
the judge: not its stdout, not its files, not a way to name its process.

Length: the judge's side of a worker's whole life (start, messages, deadlines, death),
kept together because each way of dying is told apart by what the others saw.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import bwrap, wire
from .bwrap import SandboxUnavailable
from .cgroups import Limits
from .gpulock import GpuLock, lock_path
from .prestart import Launched, discard, end, scratch_dir, take

__all__ = ["GpuLock", "Pool", "SandboxUnavailable", "Worker", "WorkerFailure"]

_POLL_S = 0.05
_MAX_MESSAGE = 4 << 30  # a reply larger than this is refused, spilled or not
_MAX_LOG = 64 << 20  # a worker that writes more output than this is stopped
_SCRATCH_BYTES = 1 << 30


class WorkerFailure(Exception):
    """A worker died, hung, ran out of memory, or reported an error.

    kind "lost" means the worker died with its fork server, through no fault of its own.
    """

    def __init__(
        self, kind: str, message: str, log: str = "", traceback: str = "", op: str = ""
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.op = op
        self.message = message
        self.log = log
        self.traceback = traceback
        self.where = ""  # where it failed, set by a caller that knows ("on input set 'fresh-2'")

    def placed(self) -> str:
        """Its message after where it failed, when a caller said: "on input set 'fresh-1',
        it crashed the worker process (…)"."""
        if not self.where:
            return self.message
        lower = self.message.startswith(("The ", "A "))
        return f"{self.where}, {self.message[0].lower() + self.message[1:] if lower else self.message}"


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
        signal.SIGXFSZ: "file size limit",
    }.get(sig, "")
    return f"{sig.name}{f', {meaning}' if meaning else ''}"


class _Process:
    """A worker process as the judge sees it: a pidfd, and the exit status its server reports."""

    def __init__(self, pidfd: int, server: _Server, wid: int) -> None:
        self.pidfd = pidfd
        self.server = server
        self.id = wid
        self.status: int | None = None
        self.limit: tuple[str, str] | None = None
        self.ended = threading.Event()
        self._fd_lock = threading.Lock()
        self.killed = threading.Event()  # its server has signalled its whole tree (or it ended)

    def host_pid(self) -> int | None:
        """This worker's pid as the judge's /proc numbers it (from the pidfd's fdinfo)."""
        try:
            with open(f"/proc/self/fdinfo/{self.pidfd}") as f:
                for line in f:
                    if line.startswith("Pid:"):
                        pid = int(line.split()[1])
                        return pid if pid > 0 else None
        except (OSError, ValueError):
            pass
        return None

    def is_alive(self) -> bool:
        with self._fd_lock:  # never on a pidfd that a released worker's end closed meanwhile
            if self.pidfd < 0:
                return False
            ready, _, _ = select.select([self.pidfd], [], [], 0)
        return not ready

    def kill(self) -> None:
        with self._fd_lock:
            if self.pidfd >= 0:
                with contextlib.suppress(ProcessLookupError, OSError):
                    signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        self.server.request_kill(self.id)

    def wait_killed(self, timeout: float) -> None:
        """After kill(): until its server has signalled every process of its tree."""
        if self.server.alive:
            self.killed.wait(timeout)

    def join(self, timeout: float) -> None:
        fd = self.pidfd
        if fd >= 0:
            with contextlib.suppress(OSError, ValueError):  # closed by another thread meanwhile
                select.select([fd], [], [], timeout)
        self.ended.wait(timeout if self.server.alive else 0)

    @property
    def exitcode(self) -> int | None:
        if self.status is None:
            return None
        return os.waitstatus_to_exitcode(self.status)

    def close(self) -> None:
        with self._fd_lock:
            if self.pidfd >= 0:
                fd, self.pidfd = self.pidfd, -1
                os.close(fd)


class _Output:
    """A worker's stdout and stderr: a pipe the judge drains, keeping only the end.

    A pipe, not a file: a worker cannot fill the judge's disk (a file's size can be
    kept small while fallocate reserves gigabytes behind it), and what it writes past
    the end kept here is only counted.
    """

    KEEP = 64 << 10

    def __init__(self, fd: int) -> None:
        self.fd = fd
        os.set_blocking(fd, False)
        self.tail = bytearray()
        self.total = 0

    def drain(self) -> None:
        while self.fd >= 0:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                return
            if not chunk:
                return
            self.total += len(chunk)
            self.tail += chunk
            if len(self.tail) > self.KEEP:
                del self.tail[: len(self.tail) - self.KEEP]

    def text(self, chars: int) -> str:
        self.drain()
        return bytes(self.tail[-chars:]).decode("utf-8", "replace")

    def close(self) -> None:
        if self.fd >= 0:
            self.drain()
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


class Worker:
    """One started worker process and the judge's end of its socket."""

    def __init__(
        self, proc: _Process, conn: wire.Channel, output: _Output, group: tuple[Limits, str] | None = None
    ) -> None:
        self.proc = proc
        self.conn = conn
        self.output = output
        self.group = group  # its control group, when the kernel enforces its limits
        self.ready: dict[str, Any] | None = None
        self.expired = False
        self._deadline = float("inf")
        # Its crashes end with advice to a kernel's author; a reference's worker has none.
        self.runs_kernels = True

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the worker's output (only the last 64 KiB is kept, however much it wrote)."""
        return self.output.text(chars)

    def _expire(self) -> None:
        self.expired = True
        self.proc.kill()

    def _receive(
        self, deadline: float, what: str, timeout: float, max_reply: int = _MAX_MESSAGE
    ) -> dict[str, Any]:
        while True:
            if self.conn.poll(_POLL_S):
                try:
                    reply = wire.recv(self.conn, max_reply)
                except (EOFError, OSError):
                    self._raise_dead(what, timeout)
                except wire.WireError as e:
                    self.kill()
                    raise WorkerFailure(
                        "protocol", f"The worker sent a malformed reply: {e}."
                    ) from None
                if not isinstance(reply, dict):
                    self.kill()
                    raise WorkerFailure("protocol", "The worker sent a reply of the wrong shape.")
                return reply
            if not self.proc.is_alive() or self.proc.limit:
                self._raise_dead(what, timeout)
            self.output.drain()
            if self.output.total > _MAX_LOG:
                self.kill()
                raise WorkerFailure(
                    "output",
                    f"{what} wrote more than {_MAX_LOG >> 20} MiB of output and was stopped.",
                    self.log_tail(),
                )
            if time.monotonic() > deadline:
                self.kill()
                self._raise_dead(what, timeout)

    def _raise_dead(self, what: str, timeout: float) -> None:
        self.proc.join(0.2)  # a process the kernel just killed: let its group's counters settle
        if self.group is not None and self.proc.limit is None:
            limits, name = self.group
            if limits.out_of_memory(name):
                self.proc.limit = ("memory", "used more memory than its limit (the kernel stopped it)")
            elif limits.hit_process_limit(name) and not self.expired:
                self.proc.limit = ("processes", "tried to start more processes than its limit")
        if self.proc.is_alive():
            self.kill()
        self.proc.join(2)
        if self.proc.limit:
            kind, why = self.proc.limit
            raise WorkerFailure(kind, f"{what} {why} and was stopped.", self.log_tail())
        if self.expired or time.monotonic() > self._deadline:
            raise WorkerFailure(
                "timeout",
                f"{what} did not finish within {timeout:g} s and was stopped.",
                self.log_tail(),
            )
        if self.proc.status is None and not self.proc.server.alive:
            raise WorkerFailure(
                "lost", f"{what} was lost: the verifier's fork server ended.", self.log_tail()
            )
        code = self.proc.exitcode
        how = _signal_name(code) if code is not None and code < 0 else f"exit code {code}"
        hint = ""
        if self.runs_kernels and code is not None and -code in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT):
            hint = (
                " A kernel that reads or writes past its tensors does this: check that every "
                "tl.load and tl.store is masked (mask=offsets < n) and that the grid covers "
                "no more than the data."
            )
        raise WorkerFailure("crash", f"{what} crashed the worker process ({how}).{hint}", self.log_tail())

    def _guarded(
        self,
        timeout: float,
        what: str,
        send: dict[str, Any] | wire.Sealed | None,
        max_reply: int = _MAX_MESSAGE,
    ) -> dict[str, Any]:
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
                    wire.send(self.conn, send)
                except (BrokenPipeError, OSError):
                    self._raise_dead(what, timeout)
            return self._receive(self._deadline, what, timeout, max_reply)
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

    def call(
        self,
        op: str,
        timeout: float,
        what: str = "",
        max_reply: int = _MAX_MESSAGE,
        sealed: wire.Sealed | None = None,
        **payload: Any,
    ) -> dict[str, Any]:
        """Send one command and wait for its reply; failures raise WorkerFailure.

        `max_reply` caps the reply at what this step can honestly return. `sealed`, if
        given, is the whole command (its op among it), encoded once for several workers.
        """
        self.wait_ready(timeout)
        message = sealed if sealed is not None else {"op": op, **payload}
        reply = self._guarded(timeout, what or op, message, max_reply)
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
        """Kill the worker and everything it started; wait until they are gone."""
        self.signal()
        self.reap()

    def signal(self) -> None:
        """Kill the worker's process and, at once, every process of its tree: its server's
        kill, and its control group's where it has one (a tree that forks as it is killed)."""
        self.proc.kill()
        if self.group is not None:
            limits, name = self.group
            with contextlib.suppress(Exception):
                limits.kill(name)

    def reap(self) -> None:
        """After kill(): wait until the worker is gone, then close its descriptors and
        remove its control group. Each step is tried, whatever the one before did (on a
        thread of its own too: Pool.release)."""
        for step in (lambda: self.proc.join(5), self.conn.close, self.proc.close, self.output.close):
            with contextlib.suppress(Exception):
                step()
        if self.group is not None:
            limits, name = self.group
            with contextlib.suppress(Exception):
                limits.remove(name)


def _ready_line(ready: dict[str, Any]) -> str:
    return f"verifier: the workers' fork server is ready (torch imported in {float(ready.get('import_s', 0.0)):.1f} s)"


def _preloaded_line(msg: dict[str, Any]) -> str:
    if msg.get("error"):
        return (
            f"verifier: torch._dynamo could not be imported ahead ({str(msg['error'])[:200]}); "
            "each worker imports it itself"
        )
    seeded = ", and the later workers' Triton cache seeded" if msg.get("seeded") else ""
    return f"verifier: torch._dynamo preloaded in the fork server{seeded} ({float(msg.get('seconds', 0.0)):.1f} s)"


class _Server:
    """The judge's handle on one fork server process (inside the sandbox, or not)."""

    def __init__(
        self,
        workdir: Path,
        sandboxed: bool,
        start_timeout: float,
        launched: Launched | None = None,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        self.workdir = workdir
        self.sandboxed = sandboxed
        self.alive = False
        self._ctl: wire.Channel | None = None
        self._send_lock = threading.Lock()
        self._pending: dict[int, dict[str, Any]] = {}
        self._procs: dict[int, _Process] = {}
        self._cond = threading.Condition()
        self._popen: subprocess.Popen | None = None
        self._log = workdir / "forkserver.log"
        self.on_event = on_event
        self._start(start_timeout, launched)

    def _start(self, timeout: float, launched: Launched | None) -> None:
        """Read the handshake of a fork server started by prestart.py: one started early for
        this pool (`launched`), or started now."""
        launched = launched or Launched(self.workdir, self.sandboxed)
        self._popen = launched.popen
        self._keeper = launched.keeper
        ours = wire.Channel(launched.sock)
        self._ctl = ours
        if not ours.poll(timeout):
            self.stop()
            raise SandboxUnavailable(
                f"The verifier's fork server did not start within {timeout:g} s. {self._log_tail()}"
            )
        try:
            ready = wire.decode(ours.recv_bytes(1 << 20))
        except (EOFError, OSError, wire.WireError):
            self.stop()
            raise SandboxUnavailable(
                f"The verifier's fork server ended while starting. {self._log_tail()}"
            ) from None
        if ready.get("confine_error"):
            self.stop()
            raise SandboxUnavailable(
                "The verifier's sandbox cannot confine its workers on this machine "
                f"({ready['confine_error']}). {bwrap.HOW_TO_FIX}"
            )
        self.import_s = float(ready.get("import_s", 0.0))
        self._told(_ready_line, ready, on_a_thread=False)  # before any line of the reader's
        self.alive = True
        self._reader = threading.Thread(target=self._read, name="autotriton-forkserver-events", daemon=True)
        self._reader.start()

    def _told(
        self, line: Callable[[dict[str, Any]], str], msg: dict[str, Any], on_a_thread: bool = True
    ) -> None:
        """A progress line about the server. From the reader, on a thread of its own: a slow
        or failing listener never holds up the workers' events."""
        listener = self.on_event
        if listener is None:
            return

        def tell() -> None:
            with contextlib.suppress(Exception):  # a progress line never stops the pool
                listener(line(msg))

        if not on_a_thread:
            tell()
            return
        with contextlib.suppress(RuntimeError):  # no thread to be had: no line
            threading.Thread(target=tell, name="autotriton-forkserver-line", daemon=True).start()

    def _log_tail(self) -> str:
        try:
            text = self._log.read_text(errors="replace").strip()
        except OSError:
            return ""
        return f"Its output ended with: {text[-800:]}" if text else ""

    def _read(self) -> None:
        assert self._ctl is not None
        while True:
            try:
                data, fds = self._ctl.recv_message(1 << 20)
                msg = wire.decode(data)
            except (EOFError, OSError, wire.WireError):
                break
            try:
                kept = self._on(msg, fds)
            except (AttributeError, TypeError, ValueError):  # a malformed message: dropped
                kept = False
            if not kept:
                for fd in fds:
                    os.close(fd)
        with self._cond:
            self.alive = False
            for proc in self._procs.values():
                proc.ended.set()
                proc.killed.set()
            self._cond.notify_all()

    def _on(self, msg: dict[str, Any], fds: list[int]) -> bool:
        """One event of the server's; True when its descriptors were handed on."""
        wid = msg.get("id")
        event = msg.get("event")
        if event == "preloaded":
            self._told(_preloaded_line, msg)
            return False
        with self._cond:
            if event in ("spawned", "spawn_failed"):
                self._pending[wid] = {"event": event, "fds": fds, "error": msg.get("error", "")}
                self._cond.notify_all()
                return True
            proc = self._procs.get(wid)
            if proc is None:
                return False
            if event == "limit":
                proc.limit = (str(msg.get("kind", "limit")), str(msg.get("message", "")))
            elif event == "killed":
                proc.killed.set()
            elif event == "exited":
                proc.status = int(msg.get("status", 0))
                proc.ended.set()
                proc.killed.set()
                self._procs.pop(wid, None)
        return False

    def spawn(self, wid: int, request: dict[str, Any], fds: list[int], timeout: float) -> _Process:
        """Ask for a worker; its pidfd when it has been forked."""
        if not self.alive:
            raise WorkerFailure("lost", "The verifier's fork server has ended.")
        with self._send_lock:
            assert self._ctl is not None
            try:
                self._ctl.send_bytes(wire.encode({"op": "spawn", "id": wid, **request}), fds)
            except OSError as e:
                raise WorkerFailure("lost", f"The verifier's fork server has ended ({e}).") from e
        deadline = time.monotonic() + timeout
        with self._cond:
            while wid not in self._pending and self.alive and time.monotonic() < deadline:
                self._cond.wait(0.5)
            got = self._pending.pop(wid, None)
            if got is None:
                raise WorkerFailure("lost", "The verifier's fork server did not start a worker.")
            if got["event"] != "spawned" or len(got["fds"]) != 1:
                for fd in got["fds"]:
                    os.close(fd)
                raise WorkerFailure("start", f"A worker could not be started: {got['error']}")
            proc = _Process(got["fds"][0], self, wid)
            self._procs[wid] = proc
            return proc

    def preload(self, triton_seed: bool = False) -> None:
        """Have the server import torch._dynamo before it forks anyone else: a CPU pool's
        first word (Pool._fork_server); a GPU pool's once its first spare is forked
        (Pool.preload_after_first_spare), which seeds its later workers' Triton caches too."""
        msg = {"op": "preload", "triton_seed": triton_seed}
        with self._send_lock, contextlib.suppress(OSError, AttributeError):
            self._ctl.send_bytes(wire.encode(msg))  # type: ignore[union-attr]

    def request_kill(self, wid: int) -> None:
        if not self.alive:
            return
        with self._send_lock, contextlib.suppress(OSError, AttributeError):
            self._ctl.send_bytes(wire.encode({"op": "kill", "id": wid}))  # type: ignore[union-attr]

    def stop(self) -> None:
        """End the server and, with it, every worker it forked."""
        if self._ctl is not None:
            with self._send_lock, contextlib.suppress(OSError):
                self._ctl.send_bytes(wire.encode({"op": "stop"}))
        end(self._popen)
        if self._ctl is not None:
            self._ctl.close()
        self.alive = False


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
        sandbox: bool = True,
    ) -> None:
        self.device = device
        self.spares = spares
        self.memory_limit = memory_limit
        self.gpu_fraction = gpu_fraction
        self.start_timeout = start_timeout
        self.sandboxed = sandbox
        if sandbox:
            bwrap.check(bwrap.executable())
        self.lock = GpuLock(lock_path(device) if device == "cuda" else None)
        self._spare: list[Worker] = []
        self._live: set[Worker] = set()
        self._count = 0
        self._starting = 0
        self._mutex = threading.Lock()
        self._server_lock = threading.Lock()
        self._server: _Server | None = None
        self._closed = False
        self._ending: list[threading.Thread] = []  # released workers' ends being waited for
        self.restarts = 0
        # Told how the fork server's start and preload went (a progress line), if set
        # before the server starts.
        self.on_event: Callable[[str], None] | None = None
        self.limits = Limits(f"{os.getpid()}-{id(self):x}") if sandbox else None
        # CUDA's driver fails (error 304) in a pid namespace whose /proc it cannot see, and
        # the sandbox's /proc cannot be mounted again for each worker; GPU workers go
        # without one (their keeper adopts and ends what they leave behind).
        self.pid_namespace = device != "cuda"
        # A fork server started before torch was imported (prestart.launch), with its folder:
        # taken last, when nothing here can fail any more.
        early = take(sandbox)
        self._dir = early[0] if early else scratch_dir()
        self._early: Launched | None = early[1] if early else None

    @property
    def workdir(self) -> Path:
        return Path(self._dir.name)

    @property
    def closed(self) -> bool:
        return self._closed

    def _fork_server(self) -> _Server:
        with self._server_lock:
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            if self._server is None or not self._server.alive:
                if self._server is not None:
                    self._server.stop()
                    self.restarts += 1
                launched, self._early = self._early, None
                self._server = _Server(
                    self.workdir, self.sandboxed, self.start_timeout, launched, self.on_event
                )
                if self.device == "cpu":
                    # Every worker imports torch._dynamo (worker.WorkerState.warm_up): on a CPU,
                    # where it costs each worker a second or two of the same few cores,
                    # the server imports it once for all. Not here for a GPU: its first
                    # worker (a reference's, which needs Dynamo only to time torch.compile)
                    # would wait for it, and the server forks and watches no worker
                    # meanwhile (it does once that worker is forked: start_for_reference).
                    self._server.preload()
            return self._server

    def start_for_reference(self) -> None:
        """Fork the one spare that the first reference takes, then on a GPU import
        torch._dynamo in the fork server for every worker forked after it
        (preload_after_first_spare): a kernel session's background start, and a one-shot
        verify's before its reference. The caller's first acquire must be a reference's."""
        self.warm(up_to=1)
        self.preload_after_first_spare()

    def preload_after_first_spare(self) -> None:
        """For a GPU pool, once its first spare is forked (start_for_reference: a kernel
        session's start, a one-shot verify): the server imports torch._dynamo and seeds
        Triton's cache (tritonwarm.py), and every worker forked after, the candidates'
        among them, starts with both done (2-3 s sooner on an H100 host). The first
        spare, which the first reference takes, does not wait for it; no candidate's
        worker runs while the server imports (the server forks none meanwhile, and the
        candidates take workers forked after), so no candidate goes unwatched by the
        server meanwhile. The import touches no CUDA (tests/gpu/test_gpu_sandbox.py)."""
        if self.device != "cpu":
            self._fork_server().preload(triton_seed=True)

    def _limits(self) -> dict[str, int]:
        cores = os.cpu_count() or 4
        return {
            "processes": 32,
            "threads": 4 * cores + 256,
            "open_files": 4096,
            "file_bytes": _MAX_MESSAGE + (256 << 20),
            "scratch_bytes": _SCRATCH_BYTES,
            "memory_bytes": int(self.memory_limit),
        }

    def _start(self) -> Worker:
        server = self._fork_server()
        with self._mutex:
            self._count += 1
            n = self._count
        out_r, out_w = os.pipe()
        ours, theirs = wire.Channel.pair()
        try:
            proc = server.spawn(
                n,
                {
                    "device": self.device,
                    "gpu_fraction": self.gpu_fraction,
                    "limits": self._limits(),
                    "pid_namespace": self.pid_namespace,
                },
                [theirs.fileno(), out_w],
                self.start_timeout,
            )
        except BaseException:
            ours.close()
            os.close(out_r)
            raise
        finally:
            theirs.close()
            os.close(out_w)
        group = None
        if self.limits is not None and self.limits.available:
            pid = proc.host_pid()
            lim = self._limits()
            name = f"w{n}"
            if pid and self.limits.attach(name, pid, lim["memory_bytes"], lim["threads"]):
                group = (self.limits, name)
        w = Worker(proc, ours, _Output(out_r), group)
        with self._mutex:
            self._live.add(w)
        return w

    def warm(self, up_to: int | None = None) -> None:
        """Start spare workers now, so the first candidate does not wait for them: up to
        `spares` of them, or up to `up_to` when given."""
        with self._mutex:
            want = self.spares if up_to is None else up_to
            missing = max(0, want - len(self._spare) - self._starting)
            self._starting += missing
        left = missing
        try:
            while left:
                try:
                    w = self._start()
                finally:
                    left -= 1
                    with self._mutex:
                        self._starting -= 1
                with self._mutex:
                    closed = self._closed
                    if not closed:
                        self._spare.append(w)
                if closed:  # closed while it started (a spare replaced on a thread): ended here
                    self.release(w)
        finally:
            if left:  # a start failed: the ones not tried are not starting either
                with self._mutex:
                    self._starting -= left

    def acquire(self) -> Worker:
        """A started worker (a warm spare when there is one); a new spare is started behind it."""
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        self.settle()
        with self._mutex:
            w = self._spare.pop(0) if self._spare else None
        if w is None or not w.proc.is_alive() or not w.proc.server.alive:
            if w is not None:
                self.release(w)
            w = self._start()
        self._warm_later()
        w.wait_ready(self.start_timeout)
        return w

    def _warm_later(self) -> None:
        """Replace the spares taken, on a thread: the worker just acquired (a reference's,
        first of all) does not wait for the fork server to fork others."""

        def run() -> None:
            with contextlib.suppress(Exception):  # (a closed pool) the next acquire starts its own
                self.warm()

        try:
            threading.Thread(target=run, name="autotriton-spares", daemon=True).start()
        except RuntimeError:  # no thread to be had
            self.warm()

    def release(self, w: Worker, wait: bool = False) -> None:
        """Kill a worker once its role is done (workers are never reused); one that close()
        took already is its to kill (never two threads killing one worker). It is signalled
        at once (its fork server kills its whole process tree then) and, unless `wait` or
        the pool is closed, its end is waited for on a thread: a GPU worker's end (its CUDA
        context torn down) takes a few tenths of a second, which no verdict waits for.
        acquire(), close() and the GPU's exclusive hold for timing (settle) wait for it, so
        no worker handed out and no timing runs beside the memory of one that is ending."""
        with self._mutex:
            ours = w in self._live
            self._live.discard(w)
            wait = wait or self._closed
        if not ours:
            return
        w.signal()
        if not wait:
            # Its whole tree signalled before the verdict goes on: nothing of the
            # candidate's runs past it (a few milliseconds; ended by the kernel then).
            w.proc.wait_killed(2.0)
            try:
                ending = threading.Thread(target=w.reap, name="autotriton-worker-end", daemon=True)
                with self._mutex:
                    ending.start()
                    self._ending = [t for t in self._ending if t.is_alive()]
                    self._ending.append(ending)
                return
            except RuntimeError:  # no thread to be had: waited for here
                pass
        w.reap()

    def settle(self, timeout: float = 15.0) -> None:
        """Wait for the ends of the workers released so far (all of them together at most
        `timeout`; each end is bounded by Worker.reap's own waits)."""
        deadline = time.monotonic() + timeout
        with self._mutex:
            ending = list(self._ending)
        for t in ending:
            t.join(max(0.0, deadline - time.monotonic()))
        with self._mutex:
            self._ending = [t for t in self._ending if t.is_alive()]

    def close(self) -> None:
        """Kill every worker, spares included, stop the fork server, remove the scratch folder."""
        with self._mutex:
            self._closed = True
            workers = list(self._live)
            self._live.clear()
            self._spare.clear()
        for w in workers:  # every one signalled first: their ends overlap
            w.signal()
        for w in workers:
            w.reap()
        self.settle()  # released ones, ended before their folder and groups go
        with self._server_lock:
            if self._server is not None:
                self._server.stop()
            if self._early is not None:  # started early, never used
                discard(self._early)
                self._early = None
        self.settle()  # any released while the server stopped (they are waited for inline now)
        if self.limits is not None:
            self.limits.close()
        self.lock.close()
        self._dir.cleanup()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
