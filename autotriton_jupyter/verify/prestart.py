"""The verifier's fork server process, started without importing torch.

A one-shot `autotriton verify` imports torch (seconds) before its Verifier starts the fork
server, which then imports torch again inside the sandbox (seconds more). `launch()`
starts the fork server first, so the two imports overlap; the Pool the command builds
next takes it (`take()`). sandbox.py starts its fork servers through `Launched` too, so
an early one is the same process, with the same sandbox, as a late one. Nothing here
imports torch.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from . import bwrap
from .bwrap import SandboxUnavailable

# The workers' environment, fixed when the fork server starts:
# - glibc fills fresh heap allocations with a pattern, and large ones stay on the heap,
#   so CPU outputs a kernel never wrote hold garbage rather than lucky zeros;
# - torch.compile (the reference's timing baseline) compiles in-process, since a
#   worker may not start a pool of compile processes.
WORKER_ENV = {
    "MALLOC_PERTURB_": "165",
    "MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024),
    "TORCHINDUCTOR_COMPILE_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}


SCRATCH_PREFIX = "autotriton-verify-"


def scratch_dir() -> tempfile.TemporaryDirectory:
    """A pool's own folder (the fork server's log and the sandbox's /etc files), private.
    It names the process it belongs to, and those left by processes that were killed are
    removed first (_sweep)."""
    here = _here()
    _sweep(Path(tempfile.gettempdir()), here)
    d = tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX)
    os.chmod(d.name, 0o700)
    (Path(d.name) / "owner").write_text(_owner(os.getpid(), here) or "")
    return d


def _here() -> str | None:
    """Where pids mean what they say: this boot of this machine, this pid namespace (a
    temporary folder shared by containers, namespaces or hosts holds folders whose owners
    this process cannot see). None when /proc does not tell."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}/{socket.gethostname()}".replace(" ", "_")
    except OSError:
        return None


def _owner(pid: int, here: str | None) -> str | None:
    """A process named so that a later one with the same pid, or one that another machine
    or pid namespace sees, is not taken for it: its pid, start time and `here` (_here();
    None when it has ended or /proc does not tell)."""
    if here is None:
        return None
    try:
        line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return f"{pid} {line.rsplit(')', 1)[1].split()[19]} {here}"


def _sweep(tmp: Path, here: str | None) -> None:
    """Remove our scratch folders whose owner process has ended (killed: a folder is
    otherwise removed when its pool closes). Only those whose owner this process can see
    (`here`, _here()); a folder without an owner file is left."""
    if here is None:
        return
    for d in tmp.glob(SCRATCH_PREFIX + "*"):
        try:
            st = os.lstat(d)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue
            said = (d / "owner").read_text().strip().split()
            if len(said) == 3 and said[2] == here and _owner(int(said[0]), here) != " ".join(said):
                shutil.rmtree(d, ignore_errors=True)
        except (OSError, ValueError):
            continue


class Launched:
    """A fork server process started in `workdir`, its handshake not read yet (sandbox.py's
    _Server reads it). `sock` is the judge's end of its control socket."""

    def __init__(self, workdir: Path, sandboxed: bool) -> None:
        self.workdir = workdir
        self.sandboxed = sandboxed
        self.log = workdir / "forkserver.log"
        self.popen: subprocess.Popen | None = None
        # What the server's sandbox was made of: a server started early is used only if
        # they are still what a server started now would get (take()).
        self.made_of = _made_of()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            argv = self._argv(theirs.fileno())
            env = self.made_of[0]
        except BaseException:
            ours.close()
            theirs.close()
            raise
        started = threading.Event()
        failure: list[BaseException] = []

        # bwrap dies with the thread that started it (PR_SET_PDEATHSIG), so a thread that
        # lives as long as the server starts it and then waits for it.
        def keeper() -> None:
            try:
                with open(self.log, "ab") as log:
                    self.popen = subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=log,
                        pass_fds=(theirs.fileno(),),
                        env=env,
                        cwd="/",
                        start_new_session=True,
                    )
            except BaseException as e:
                failure.append(e)
                started.set()
                return
            started.set()
            self.popen.wait()

        self.keeper = threading.Thread(target=keeper, name="autotriton-forkserver", daemon=True)
        self.keeper.start()
        started.wait()
        theirs.close()
        if failure:
            ours.close()
            raise SandboxUnavailable(f"The verifier's fork server could not start: {failure[0]}")
        self.sock = ours

    def _argv(self, fd: int) -> list[str]:
        ids = bwrap.worker_ids() if self.sandboxed else None
        argv = [
            sys.executable, "-m", "autotriton_jupyter.verify.forkserver", str(fd),
            "confined" if self.sandboxed else "plain",
            f"{ids[0]}:{ids[1]}" if ids else "",
            # No GPU device files: no worker of this server can be a GPU one (a CUDA start
            # that makes them would also make take() refuse the server), so the server may
            # import torch._dynamo for every worker as soon as it is up.
            "" if self.made_of[1] else "preload",
        ]
        if not self.sandboxed:
            return argv
        etc = self.workdir / "etc"
        bwrap.write_etc(etc, os.getuid(), os.getgid())
        return bwrap.command(bwrap.executable() or "bwrap", etc, argv)


def _made_of() -> tuple[dict[str, str], list[str]]:
    """The workers' environment, and the GPU device files their sandbox binds."""
    env = bwrap.worker_environment({**WORKER_ENV, "PYTHONPATH": bwrap.python_path()})
    return env, bwrap.device_nodes()


_lock = threading.Lock()
_early: tuple[tempfile.TemporaryDirectory, Launched] | None = None


def launch(sandboxed: bool) -> None:
    """Start a fork server now, for the next Pool this process makes with the same sandbox
    setting. Anything that goes wrong is left for that Pool's own start to report."""
    global _early
    with _lock:
        if _early is not None:
            return
        d = None
        try:
            d = scratch_dir()
            if sandboxed:
                bwrap.check(bwrap.executable())
            _early = (d, Launched(Path(d.name), sandboxed))
        except BaseException:
            if d is not None:
                d.cleanup()
            if not isinstance(sys.exc_info()[1], Exception):
                raise  # Ctrl-C: after the folder is gone


def take(sandboxed: bool) -> tuple[tempfile.TemporaryDirectory, Launched] | None:
    """The fork server `launch()` started (and its folder), if its sandbox setting is this one;
    one started for the other setting is ended."""
    global _early
    with _lock:
        got, _early = _early, None
    if got is None:
        return None
    if got[1].sandboxed != sandboxed or got[1].made_of != _made_of():
        # Another setting, or what its sandbox was made of changed since (the environment,
        # or device files CUDA's start created): a server started now is the right one.
        discard(got[1], got[0])
        return None
    if got[1].popen is None or got[1].popen.poll() is not None:
        discard(got[1], got[0])  # it ended already
        return None
    return got


def drop() -> None:
    """End a fork server launch() started that no Pool took (the command is over, or its
    Verifier could not be built)."""
    global _early
    with _lock:
        got, _early = _early, None
    if got is not None:
        discard(got[1], got[0])


def discard(launched: Launched, folder: tempfile.TemporaryDirectory | None = None) -> None:
    """End a launched fork server nobody used (and remove its folder, when given)."""
    launched.sock.close()  # the server ends when its control socket closes
    end(launched.popen)
    if folder is not None:
        folder.cleanup()


def end(p: subprocess.Popen | None) -> None:
    """Kill a fork server and everything in its session (it was started in one of its own)."""
    if p is not None and p.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(p.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            p.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(10)
