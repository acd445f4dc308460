"""A warm verifier for the command line: `autotriton verifier start`, then `autotriton verify`.

A one-shot `autotriton verify` pays for importing torch, starting the fork server and its
workers, and running the reference, before its candidate is judged. A started service
keeps all of that between calls (one Verifier, its spare workers and its last references),
so a second verify of a task costs only its candidate's work. It is started by the user,
never behind their back, holds the GPU memory its workers need, and stops after
`idle_s` without requests (or on `autotriton verifier stop`).

It listens on a Unix socket in a folder only its user can enter, and answers only that
user (the peer's uid). Requests and replies are JSON lines:

    client -> {"op": "verify", "task": {...}, "candidate": {...}, "options": {...}}
    service -> {"event": "..."}*  then {"report": {...}} or {"error": "...", "kind": "task"|"options"}
    client -> {"op": "status"} | {"op": "stop"}

This module imports neither torch nor the judge until a service actually starts.

Length: the service and its client speak one protocol, kept side by side.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import itertools
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..task import Candidate, Task, TaskError
from .options import VerifyOptions
from .report import Report

IDLE_S = 1800.0  # a service with no request for this long stops
_FAILED = "autotriton: the verifier service cannot start: "  # its last word in the log
_HELD = 3  # a service's exit status when another holds the lock (one per user: _hold_lock)
_REQUEST_S = 10.0  # a connection that sends no request within this is closed
_REPLY_S = 30.0  # a status or stop not answered within this: the service is stuck
_HOLD: list[int] = []  # the lock's descriptor, held for the service process's whole life
_LINE_LIMIT = 64 << 20  # the longest request or reply line (sources, a report)


class ServiceError(RuntimeError):
    """The service could not be reached, started or stopped, with what to do; `usage` when
    what was asked cannot work here (an input error, not a failure)."""

    def __init__(self, message: str, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


def folder() -> Path:
    """The service's private folder: $XDG_RUNTIME_DIR/autotriton, else /tmp/autotriton-UID."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    base = Path(runtime) / "autotriton" if runtime and Path(runtime).is_dir() else (
        Path(tempfile.gettempdir()) / f"autotriton-{os.getuid()}"
    )
    fix = "set XDG_RUNTIME_DIR to a private folder of yours"
    try:
        if not base.is_symlink() and not (base.exists() and not base.is_dir()):
            base.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = base.lstat()
    except OSError as e:
        raise ServiceError(
            f"the verifier service's folder {base} cannot be made ({e.strerror or e}); {fix}"
        ) from e
    if base.exists() and not base.is_dir() and not base.is_symlink():
        raise ServiceError(f"{base} is a file, not a folder; remove it, or {fix}")
    if base.is_symlink():
        raise ServiceError(
            f"{base} is a symbolic link, and the verifier service's socket must live in a "
            f"real folder; remove the link, or {fix}"
        )
    if st.st_uid != os.getuid() or st.st_mode & 0o077 or not base.is_dir():
        raise ServiceError(
            f"{base} is not a private folder of this user (owner uid {st.st_uid}, mode "
            f"{oct(st.st_mode & 0o777)}; it must be yours, mode 0700); remove it, or {fix}"
        )
    return base


@functools.cache
def code_id() -> str:
    """What judges: a digest of the verifier's and the task's source files. A service
    started from other code (an upgrade since, another checkout) does not judge for this
    client, whose verdicts would otherwise come from code it does not run."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted([*here.glob("*.py"), here.parent / "task.py"]):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def socket_path() -> Path:
    return folder() / "verifier.sock"


def _info_path() -> Path:
    return folder() / "verifier.json"


def _lock_path() -> Path:
    return folder() / "verifier.lock"


def _hold_lock() -> bool:
    """Take the user's service lock for this process's life (it goes with the process, after
    its workers): False when another service process holds it (starting, running or ending)."""
    fd = os.open(_lock_path(), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    _HOLD.append(fd)
    return True


def _lock_held() -> bool:
    """Whether a service process exists (it holds the lock), from outside it."""
    try:
        fd = os.open(_lock_path(), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # (a lock taken here goes with it)
    return False


def _unreachable() -> dict[str, Any] | None:
    """A service that takes no connections, from its info file: one starting (importing
    torch and its verifier; "starting"), or one that has let its socket go and is ending
    its workers ("stopping"). None when there is none."""
    try:
        if not _lock_held():
            return None
        info = json.loads(_info_path().read_text())
    except (OSError, ValueError, ServiceError):
        return None  # no info file (written just after the lock), or no usable folder
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int) or not _alive(info["pid"]):
        return None
    if info.get("starting"):
        return {**info, "stopping": False, "active": 0, "ready": False}
    return {**info, "stopping": True, "active": 0, "ready": False}


def _write_info(info: dict[str, Any]) -> None:
    """The info file, replaced whole (a reader never sees half of it)."""
    path = _info_path()
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, path)


def _drop_info() -> None:
    """Remove the info file if it is this process's (a service started since has its own)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if json.loads(_info_path().read_text()).get("pid") == os.getpid():
            _info_path().unlink()


def _options_dict(o: VerifyOptions) -> dict[str, Any]:
    d = dataclasses.asdict(o)
    d["allow_torch"], d["shapes"] = list(o.allow_torch), list(o.shapes)
    return d


def _options_from(d: dict[str, Any]) -> VerifyOptions:
    known = {f.name for f in dataclasses.fields(VerifyOptions)}
    o = VerifyOptions(**{k: v for k, v in d.items() if k in known})
    o.allow_torch, o.shapes = tuple(o.allow_torch), tuple(o.shapes)
    return o


def _send(conn: socket.socket, msg: dict[str, Any]) -> None:
    conn.sendall(json.dumps(msg, allow_nan=False).encode() + b"\n")


def _lines(conn: socket.socket) -> Any:
    """The JSON messages arriving on conn, one per line, until it closes."""
    buf = b""
    while True:
        chunk = conn.recv(1 << 20)
        if not chunk:
            return
        buf += chunk
        if len(buf) > _LINE_LIMIT:
            raise ServiceError("a message from the verifier service is too long")
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield json.loads(line)


# the client ------------------------------------------------------------------------------
def _connect(timeout: float = 30.0) -> socket.socket | None:
    """A connection to a running service, or None when there is none. A service that
    does not take the connection within `timeout` (a machine under load) is not "none":
    ServiceError says it is busy."""
    try:
        path = socket_path()
    except (OSError, ServiceError):
        return None
    if not path.exists():
        return None
    deadline = time.monotonic() + timeout
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            conn.connect(str(path))
        except (BlockingIOError, TimeoutError, InterruptedError) as e:
            # Its queue of connections is full (EAGAIN on a Unix socket): busy, not gone.
            conn.close()
            if time.monotonic() >= deadline:
                raise ServiceError(
                    f"the verifier service at {path} did not answer within {timeout:g} s "
                    "(busy?); try again, or `autotriton verify --local`"
                ) from e
            time.sleep(0.05)
            continue
        except OSError:  # a socket left by a service that died: not running
            conn.close()
            return None
        conn.settimeout(None)
        return conn


def mismatch(running: dict[str, Any], options: VerifyOptions) -> str | None:
    """What of `options` a running service (its status) was not started with, or None."""
    why = []
    if running.get("code") != code_id():
        why.append("it runs other autotriton code (an upgrade since, or another checkout)")
    if options.device not in ("auto", running.get("device")):
        why.append(f"it runs on {running.get('device')}, not --device {options.device}")
    if options.sandbox != running.get("sandbox"):
        why.append(f"its sandbox is {'on' if running.get('sandbox') else 'off'}")
    if options.memory_limit_gb and options.memory_limit_gb != running.get("memory_limit_gb"):
        why.append(f"its memory limit is {running.get('memory_limit_gb') or 'the default'}")
    return "; ".join(why) or None


def status() -> dict[str, Any] | None:
    """What the running service says of itself, or None when none runs. One that has let
    its socket go and is ending its workers is "stopping" too; one still importing torch
    and its verifier is "starting"."""
    conn = _connect()
    if conn is None:
        return _unreachable()
    with conn:
        conn.settimeout(_REPLY_S)
        try:
            _send(conn, {"op": "status"})
            for msg in _lines(conn):
                return msg
        except ConnectionError:  # it let the connection go as it ended (reset, broken pipe)
            return _unreachable()
        except TimeoutError as e:
            raise ServiceError(
                f"the verifier service took its connection but did not say its status within "
                f"{_REPLY_S:g} s (stopped, or overloaded?); its log is {folder() / 'verifier.log'}"
            ) from e
    return _unreachable()


def verify_remote(
    task: Task,
    candidate: Candidate,
    options: VerifyOptions,
    on_event: Callable[[str], None] | None = None,
) -> Report | None:
    """Judge one candidate in the running service; None when no service can take it
    (none runs, or it was started for another device, sandbox or memory limit).

    A task the service cannot run raises TaskError, as a local verify would.
    """
    conn = _connect()
    if conn is None:
        return None
    with conn:
        request = {
            "op": "verify",
            "task": dataclasses.asdict(task),
            "candidate": dataclasses.asdict(candidate),
            "options": _options_dict(options),
            "code": code_id(),
        }
        lines = _lines(conn)
        try:
            _send(conn, request)
            first = next(lines, None)
        except ConnectionError:  # it dropped the request unread as it ended: as if none ran
            return None
        for msg in itertools.chain([first] if first is not None else [], lines):
            if "event" in msg:
                if on_event:
                    on_event(str(msg["event"]))
            elif "report" in msg:
                report = Report.from_dict(msg["report"])
                report.notes.append(f"verified by the verifier service (pid {msg.get('pid')})")
                return report
            elif msg.get("kind") == "task":
                raise TaskError(str(msg.get("error")))
            elif msg.get("kind") == "stopping":
                return None  # as if none ran
            else:
                if on_event:
                    on_event(f"the verifier service cannot take this: {msg.get('error')}; verifying here")
                return None
    raise ServiceError("the verifier service closed the connection without a report")


def start(options: VerifyOptions, idle_s: float = IDLE_S, wait_s: float = 300.0,
          on_event: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Start a service in the background and wait until it answers; its status. When one
    runs already, its status with "already": True (nothing is started). One stopping is
    waited for first; one being started by another command at the same moment is taken as
    the one that runs (one service per user: its lock)."""
    deadline = time.monotonic() + wait_s
    while True:
        running = status()
        if running is not None and running.get("stopping"):
            _await_stop(running, deadline, on_event)
            continue
        if running is not None and not running.get("starting"):
            return {**running, "already": True}
        if running is not None or _lock_held():  # another command's is starting: wait
            _await_other(deadline)
            continue
        got = _launch(options, idle_s, deadline, on_event)
        if got is not None:
            return got


def _launch(options: VerifyOptions, idle_s: float, deadline: float,
            on_event: Callable[[str], None] | None) -> dict[str, Any] | None:
    """Start one service and wait until it answers: its status; None when it found the lock
    taken (another started at the same moment)."""
    log = folder() / "verifier.log"
    start_at = log.stat().st_size if log.exists() else 0
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "autotriton_jupyter.verify.service", json.dumps(_options_dict(options)), str(idle_s)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,  # not ended by the terminal's Ctrl-C
            cwd="/",
        )
    try:
        return _await_start(proc, log, start_at, deadline, on_event)
    except BaseException:  # Ctrl-C, or it did not answer: a service nobody waits for goes
        if proc.poll() is None:
            if on_event:
                on_event(f"stopping the verifier service ({proc.pid}) it was starting")
            proc.terminate()  # it stops as `verifier stop` stops it (SIGTERM)
            _await_end(proc, 60.0)
        raise


def _await_end(proc: subprocess.Popen, wait_s: float) -> None:
    """Wait for a service told to stop; killed if it is not gone after wait_s, unless it is
    still finishing verifies it took (those are a user's, waited for up to 10 min)."""
    t0 = time.monotonic()
    while True:
        try:
            proc.wait(2.0)
            return
        except subprocess.TimeoutExpired:
            pass
        try:
            got = status()
        except ServiceError:
            got = None
        busy = got is not None and got.get("pid") == proc.pid and got.get("active", 0) > 0
        if time.monotonic() - t0 > (600.0 if busy else wait_s):
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
            return


def _await_other(deadline: float) -> None:
    """Wait until the service another command is starting answers, or its lock is free."""
    while time.monotonic() < deadline:
        got = status()
        if (got is not None and not got.get("starting")) or (got is None and not _lock_held()):
            return
        time.sleep(0.2)
    raise ServiceError(
        f"another verifier service is starting and did not answer in time; its log is "
        f"{folder() / 'verifier.log'}"
    )


def _await_stop(running: dict[str, Any], deadline: float,
                on_event: Callable[[str], None] | None) -> None:
    """Wait until a stopping service has ended (it finishes its verifies, then its workers)."""
    if on_event:
        on_event(
            f"the verifier service (pid {running.get('pid')}) is stopping: waiting for its "
            f"{running.get('active', 0)} verif{'y' if running.get('active') == 1 else 'ies'} under way"
        )
    pid = running.get("pid")
    while time.monotonic() < deadline:
        got = status()
        if (got is None or not got.get("stopping")) and not (isinstance(pid, int) and _alive(pid)):
            return
        time.sleep(0.2)
    raise ServiceError(
        f"the verifier service (pid {pid}) is stopping and still runs; its log is "
        f"{folder() / 'verifier.log'}"
    )


def _await_start(proc: subprocess.Popen, log: Path, start_at: int, deadline: float,
                 on_event: Callable[[str], None] | None) -> dict[str, Any] | None:
    """The started service's status once it answers as ready (ServiceError if it ends;
    None if it ended because another service holds the lock)."""
    told = False
    while time.monotonic() < deadline:
        got = status()
        if got is not None and got.get("failed") and got.get("pid") == proc.pid:
            raise ServiceError(f"the verifier service could not start its workers: {got['failed']}")
        if got is not None and got.get("stopping") and got.get("pid") == proc.pid:
            raise ServiceError("the verifier service was asked to stop while it started")
        if got is not None and got.get("ready"):
            if got.get("pid") != proc.pid:  # another's: this one finds the lock taken and ends
                try:
                    proc.wait(max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.terminate()
            return got
        if proc.poll() == _HELD:
            return None
        if proc.poll() is not None:
            with open(log, "rb") as f:
                f.seek(start_at)
                said = f.read().decode(errors="replace")
            reason = [ln[len(_FAILED):] for ln in said.splitlines() if ln.startswith(_FAILED)]
            if reason:
                raise ServiceError(reason[-1], usage=proc.returncode == 2)
            raise ServiceError(
                f"the verifier service stopped while starting; its output ends with:\n{said[-800:]}"
            )
        if on_event and got is not None and not got.get("starting") and not told:
            on_event(f"the verifier service ({got['pid']}) is starting its workers on {got['device']}")
            told = True
        time.sleep(0.5)
    raise ServiceError(f"the verifier service did not answer in time; see {log}")


def stop(wait_s: float = 600.0, on_event: Callable[[str], None] | None = None) -> int | None:
    """Ask the running service to stop and wait until it is gone (it first finishes the
    verifies it is running, and says so through `on_event` after a second). Returns how
    many verifies were running when it was asked, or None when none runs; raises
    ServiceError when it is still there after wait_s."""
    conn = _connect()
    running = 0
    pid = None
    if conn is not None:
        with conn:
            conn.settimeout(_REPLY_S)
            try:
                _send(conn, {"op": "stop"})
                for reply in _lines(conn):
                    if isinstance(reply, dict) and isinstance(reply.get("active"), int):
                        running = reply["active"]
                    if isinstance(reply, dict) and isinstance(reply.get("pid"), int):
                        pid = reply["pid"]
            except ConnectionError:  # it let the connection go as it ended: as below
                conn = None
            except TimeoutError as e:
                raise ServiceError(
                    f"the verifier service took the stop but did not answer within {_REPLY_S:g} s "
                    f"(stuck?); its log is {folder() / 'verifier.log'}"
                ) from e
    if conn is None:
        # No socket (yet, or any more): one starting is told by a signal, which it honours
        # once its start is over; one ending is waited for.
        other = _unreachable()
        if other is None:
            return None
        if other.get("starting"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(other["pid"], signal.SIGTERM)
        _await_stop(other, time.monotonic() + wait_s, None)
        return 0

    def there() -> bool:  # until its workers are gone too (a service since started is another)
        return _alive(pid) if pid is not None else _lock_held()

    t0 = time.monotonic()
    told = False
    while time.monotonic() - t0 < wait_s and there():
        if on_event and not told and running and time.monotonic() - t0 > 1.0:
            on_event("the verifier service finishes the verifies under way before it stops")
            told = True
        time.sleep(0.1)
    if there():
        raise ServiceError(
            f"the verifier service was asked to stop but still runs after {wait_s:g} s "
            f"(verifies under way when asked: {running}); its log is {folder() / 'verifier.log'}"
        )
    return running


# the service -----------------------------------------------------------------------------
def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


class _Service:
    def __init__(
        self, options: VerifyOptions, idle_s: float, signalled: list[int] | None = None
    ) -> None:
        from . import prestart

        prestart.launch(options.sandbox)  # its start overlaps the judge's imports (torch)
        try:
            from .judge import Verifier

            self.verifier = Verifier(options)
        finally:
            prestart.drop()  # one the Verifier did not take (it could not be built)
        self.options = options
        self.idle_s = idle_s
        self.ready = False
        self.active = 0  # verifies under way
        self.connections = 0  # connections taken and not yet answered (a verify among them)
        self.last = time.monotonic()
        # The signals taken (a handler only appends: it may not take a lock); serve's loop
        # turns them into `stopping` within a second.
        self.signalled = signalled if signalled is not None else []
        self.stopping = threading.Event()
        self.failed: str | None = None  # why its workers could not start
        self.lock = threading.Lock()
        self.started = time.time()
        # As many verifies at once as its workers were sized for (memory, GPU share).
        self.slots = threading.BoundedSemaphore(self.verifier.parallel)

    def warm(self) -> None:
        try:
            self.verifier.pool.warm()
        except Exception as e:  # no sandbox here, no GPU memory, ...: said, and it stops
            self.failed = str(e) or type(e).__name__
            print(f"{_FAILED}{self.failed}", file=sys.stderr, flush=True)
            self.stopping.set()
            return
        with self.lock:
            self.last = time.monotonic()  # its idle time counts from when it is ready
        self.ready = True

    def describe(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "ready": self.ready,
            "device": self.verifier.device,
            "sandbox": self.options.sandbox,
            "memory_limit_gb": self.options.memory_limit_gb or None,
            "code": code_id(),
            "started": self.started,
            "idle_s": self.idle_s,
            "active": self.active,
            "references": len(self.verifier._refs),
            "stopping": self.stopping.is_set(),
            **({"failed": self.failed} if self.failed else {}),
        }

    def handle(self, conn: socket.socket) -> None:
        try:
            self._handle(conn)
        finally:
            with self.lock:
                self.connections -= 1

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            if _peer_uid(conn) != os.getuid():
                return
            conn.settimeout(_REQUEST_S)  # one that never asks does not hold the service up
            try:
                msg = next(_lines(conn), None)
            except (ValueError, ServiceError, OSError):
                return
            conn.settimeout(None)
            if not isinstance(msg, dict):
                return
            if msg.get("op") == "status":
                _send(conn, self.describe())
            elif msg.get("op") == "stop":
                self.stopping.set()
                with self.lock:
                    running = self.active
                _send(conn, {"stopping": True, "active": running, "pid": os.getpid()})
            elif msg.get("op") == "verify" and self.stopping.is_set():
                # As if none ran: the client verifies on its own (verify_remote).
                _send(conn, {"error": "the verifier service is stopping", "kind": "stopping"})
            elif msg.get("op") == "verify":
                with self.lock:
                    self.active += 1
                try:
                    self._verify(conn, msg)
                except (OSError, ValueError):
                    pass  # the client went away: its verdict is lost, the service is not
                finally:
                    with self.lock:
                        self.active -= 1
                        self.last = time.monotonic()

    def _verify(self, conn: socket.socket, msg: dict[str, Any]) -> None:
        from .judge import Interrupted  # (the service's side: torch is imported here)

        try:
            task = Task(**msg["task"])
            cand = Candidate(**msg["candidate"])
            options = _options_from(msg["options"])
        except (KeyError, TypeError) as e:
            _send(conn, {"error": f"a malformed request ({e})", "kind": "request"})
            return
        if msg.get("code") != code_id():
            _send(
                conn,
                {
                    "error": f"it runs other autotriton code: its source changed since it "
                    f"started, or this command is another installation's (pid {os.getpid()}, "
                    f"started from {Path(__file__).resolve().parent.parent}); `autotriton "
                    "verifier stop`, then `autotriton verifier start` again",
                    "kind": "options",
                },
            )
            return
        try:
            fits = self.verifier.shares_workers_with(options)
        except TaskError as e:  # --device cuda without a GPU: the request's error, not ours
            _send(conn, {"error": str(e), "kind": "task"})
            return
        if not fits:
            why = mismatch(self.describe(), options) or "its workers were started with other options"
            _send(conn, {"error": why, "kind": "options"})
            return

        def event(text: str) -> None:
            with contextlib.suppress(OSError):
                _send(conn, {"event": text})

        if not self.slots.acquire(blocking=False):
            event(
                f"waiting for a free worker: the verifier service runs {self.verifier.parallel} "
                "verifies at once"
            )
            self.slots.acquire()
        done = threading.Event()
        try:
            view = self.verifier.view(options, on_event=event)
            threading.Thread(target=_on_hang_up, args=(conn, done, view.interrupt), daemon=True).start()
            report = view.verify(task, cand)
        except TaskError as e:
            _send(conn, {"error": str(e), "kind": "task"})
            return
        except Interrupted:  # its client went: nobody to answer
            return
        finally:
            done.set()
            self.slots.release()
        _send(conn, {"report": json.loads(report.to_json()), "pid": os.getpid()})

    def serve(self) -> None:
        """Take connections until stopped (`verifier stop`, a signal) or idle. A stopping
        service still answers its status ("stopping") and refuses new verifies, until
        the verifies under way are done; then its socket and info file go, if they are
        still its own (a service started since has its own there), and then its workers."""
        path = socket_path()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        os.chmod(path, 0o600)
        mine = _identity(path)
        listener.listen(16)
        listener.settimeout(1.0)
        _write_info(self.describe())
        threading.Thread(target=self.warm, name="autotriton-warm", daemon=True).start()
        try:
            while True:
                with self.lock:
                    # Idle: no verify for idle_s since it was ready (status asks do not count).
                    idle = (
                        self.ready and self.active == 0 and self.connections == 0
                        and time.monotonic() - self.last > self.idle_s
                    )
                if idle or self.signalled:
                    self.stopping.set()
                if self.stopping.is_set():
                    listener.settimeout(0.1)
                    with self.lock:
                        if self.active == 0 and self.connections == 0:
                            break
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                with self.lock:
                    self.connections += 1
                try:
                    threading.Thread(target=self.handle, args=(conn,), daemon=True).start()
                except BaseException:
                    conn.close()
                    with self.lock:
                        self.connections -= 1
                    raise
        finally:
            listener.close()
            if _identity(path) == mine:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            while True:  # (an error above): verifies under way finish first
                with self.lock:
                    if self.active == 0 and self.connections == 0:
                        break
                time.sleep(0.1)
            self.verifier.close()
            _drop_info()  # last: until here `status` finds it ending (its info file and lock)


def _on_hang_up(conn: socket.socket, done: threading.Event, then: Callable[[], None]) -> None:
    """Call `then` if the client goes (Ctrl-C) before `done`: its candidate is stopped, not
    judged to the end for nobody (a hanging one would hold the service until its timeout).
    The client sends nothing after its request and keeps its end open until the answer
    (one that shut its writing side would be taken as gone: it gets no answer)."""
    watch = select.poll()
    watch.register(conn, select.POLLIN | select.POLLHUP | select.POLLERR)
    while not done.is_set():
        try:
            if not watch.poll(200):
                continue
            gone = conn.recv(1, socket.MSG_PEEK) == b""
        except ConnectionError:  # reset by the client
            gone = True
        except (OSError, ValueError):  # closed here, once done
            return
        if gone and not done.is_set():
            then()
        return


def _identity(path: Path) -> tuple[int, int] | None:
    """Which file `path` is (device, inode), or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def main(argv: list[str]) -> int:
    options = _options_from(json.loads(argv[1]))
    idle_s = float(argv[2]) if len(argv) > 2 else IDLE_S
    # SIGTERM, SIGHUP and SIGINT stop it as `verifier stop` does, from its first moment:
    # verifies under way finish, and its socket, info file and workers go. While it starts
    # (torch's import) a signal only marks the stop, which follows once the start is over.
    signalled: list[int] = []  # (a handler that took a lock could deadlock its thread)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda s, _f: signalled.append(s))
    try:
        if not _hold_lock():  # another service process (starting, running or ending)
            print("autotriton: another verifier service holds the lock; this one ends", file=sys.stderr, flush=True)
            return _HELD
        # Seen as starting from here (`status`, and `stop`, which signals it), replacing an
        # info file left by a service that was killed (no other one lives: the lock).
        _write_info({
            "pid": os.getpid(), "starting": True, "started": time.time(), "device": options.device,
            "sandbox": options.sandbox, "memory_limit_gb": options.memory_limit_gb or None,
            "idle_s": idle_s, "code": code_id(),
        })
    except OSError as e:
        print(f"{_FAILED}its lock {_lock_path()} cannot be taken: {e}", file=sys.stderr, flush=True)
        return 2
    try:
        service = _Service(options, idle_s, signalled)
    except TaskError as e:  # --device cuda without a GPU, say: one line for the client
        print(f"{_FAILED}{e}", file=sys.stderr, flush=True)
        _drop_info()
        return 2
    except BaseException:
        _drop_info()
        raise
    if signalled:  # stopped while it started
        print(f"{_FAILED}it was asked to stop while it started", file=sys.stderr, flush=True)
        service.verifier.close()
        _drop_info()
        return 130
    service.serve()
    return 2 if service.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
