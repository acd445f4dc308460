"""The fork server: the one process in the sandbox that imports torch and triton, and forks workers.

It runs inside bubblewrap (or, with the sandbox off, as a plain child of the judge)
and never runs task or candidate code itself. It obeys the judge over one Channel:

    judge -> server  {"op": "spawn", "id", "device", "gpu_fraction", "limits"}
                       with the worker's socket and its log file as descriptors
                     {"op": "kill", "id"}
                     {"op": "preload", "triton_seed"}: import torch._dynamo now (a CPU
                       pool's first word; a GPU pool's once its first spare is forked),
                       and on a GPU seed each later worker's Triton cache (tritonwarm.py)
    server -> judge  {"event": "ready", "import_s", "confine_error"}
                     {"event": "spawned", "id"} with a pidfd of the worker
                     {"event": "spawn_failed", "id", "error"}
                     {"event": "limit", "id", "kind", "message"}
                     {"event": "exited", "id", "status"}
                     {"event": "killed", "id"}: a kill is done (the worker's whole process
                       tree signalled)
                     {"event": "preloaded", "seconds", "seeded", "error"}: a preload
                       that had something to do is over ("error": why the import failed)

Each spawn forks a keeper, which (when confined) enters new namespaces and forks the
worker as their init; the keeper waits for it and reports its wait status. The server
watches every worker's whole process tree for its process and memory limits, since
it sees processes that the judge, outside the sandbox, cannot name.

Length: one small program that runs inside the sandbox; its protocol, spawning and watch
loop stay together.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

_STARTED = time.perf_counter()  # before torch's import (by wire), for the "ready" message

from . import confine, wire  # noqa: E402

SCRATCH = "/tmp/scratch"  # each confined worker mounts its own private tmpfs here
_TICK_S = 0.05
_KILL_WITHIN_S = 0.25  # the longest a kill goes on signalling what a worker forks meanwhile
_Q = struct.Struct("<q")


@dataclass
class _Child:
    id: int
    keeper: int
    pipe: int
    limits: dict[str, Any]
    worker: int = 0
    status: int | None = None
    killed_for: str = ""


def _send(ctl: wire.Channel, msg: dict[str, Any], fds: list[int] | None = None) -> None:
    ctl.send_bytes(wire.encode(msg), fds or [])


def _scratch_for(confined: bool) -> str:
    return SCRATCH if confined else tempfile.mkdtemp(prefix="autotriton-worker-")


def _worker_main(
    sock: int, log_fd: int, msg: dict[str, Any], confined: bool, scratch: str
) -> None:
    """In the worker: finish confining, then serve the judge (never returns)."""
    limits = msg["limits"]
    if confined:
        confine.die_with_parent()
        confine.private_scratch(SCRATCH, limits["scratch_bytes"])
        confine.new_session_keyring()
    else:
        os.setsid()
    work = os.path.join(scratch, "work")
    os.makedirs(work, exist_ok=True)
    if _TRITON_SEED:
        from . import tritonwarm

        try:
            tritonwarm.plant(_TRITON_SEED, os.path.join(scratch, "triton"))
        except OSError:  # (its scratch full) none of it: its warm-up builds them, as without a seed
            shutil.rmtree(os.path.join(scratch, "triton"), ignore_errors=True)
    os.environ.update(
        HOME=scratch,
        TMPDIR=scratch,
        XDG_CACHE_HOME=os.path.join(scratch, ".cache"),
        TRITON_CACHE_DIR=os.path.join(scratch, "triton"),
        TORCHINDUCTOR_CACHE_DIR=os.path.join(scratch, "inductor"),
    )
    tempfile.tempdir = None  # re-read TMPDIR
    confine.prefer_to_be_killed_first()
    confine.set_limits(limits["open_files"], limits["file_bytes"], limits["threads"])
    if confined:
        confine.drop_privileges(have_capabilities=True)
    else:
        confine.not_dumpable()
    from . import worker

    worker.serve(wire.Channel.from_fd(sock), msg["device"], work, log_fd, msg["gpu_fraction"])


def _keeper_main(
    sock: int, log_fd: int, pipe: int, go: int, msg: dict[str, Any], confined: bool, mapped: bool
) -> None:
    """In the keeper: enter the worker's namespaces, fork it, report its pid and its end."""
    keep = sorted({sock, log_fd, pipe, go})
    lo = 3
    for fd in keep:
        os.closerange(lo, fd)
        lo = fd + 1
    os.closerange(lo, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    scratch = _scratch_for(confined)
    pid_ns = confined and bool(msg.get("pid_namespace", True))
    if confined:
        confine.die_with_parent()
        confine.enter_namespaces(mapped_by_parent=mapped, pid_namespace=pid_ns)
        if mapped:  # the fork server writes our id maps from outside, then says go
            os.write(pipe, b"U")
            if os.read(go, 1) != b"G":
                os._exit(72)
            confine.become_mapped_root()
            confine.not_dumpable()
    os.close(go)
    if not pid_ns:
        confine.adopt_orphans()
    pid = os.fork()
    if pid == 0:
        os.close(pipe)
        try:
            _worker_main(sock, log_fd, msg, confined, scratch)
        except BaseException as e:  # confinement failed: say so in the log, run nothing
            os.write(log_fd, f"autotriton: the worker could not be confined: {e}\n".encode())
        os._exit(70)
    os.close(sock)
    os.close(log_fd)
    os.write(pipe, _Q.pack(pid))
    _, status = os.waitpid(pid, 0)
    if not pid_ns:
        _end_adopted()
    os.write(pipe, _Q.pack(status))
    if not confined:
        shutil.rmtree(scratch, ignore_errors=True)
    os._exit(0)


def _end_adopted() -> None:
    """Kill and reap every process left below this one (the worker's orphans), until none."""
    me = os.getpid()
    for _ in range(1000):
        # The whole tree below, not only the children: what they fork meanwhile goes too.
        table = _proc_table()
        kids = [p for p in _tree(me, table) if p != me]
        if not kids:
            return
        for p in kids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        while True:
            try:
                done, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if done == 0:
                time.sleep(0.01)
                break


def _probe_confinement(map_to: tuple[int, int] | None) -> str | None:
    """Try confining a throwaway worker the way spawn does; the reason it failed, or None."""
    r, w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.close(go_w)
        try:
            confine.enter_namespaces(mapped_by_parent=map_to is not None)
            if map_to is not None:
                os.write(w, b"U")
                if os.read(go_r, 1) != b"G":
                    os._exit(1)
                confine.become_mapped_root()
            inner = os.fork()
            if inner == 0:
                try:
                    confine.private_scratch(SCRATCH, 16 << 20)
                    confine.new_session_keyring()
                    confine.drop_privileges(have_capabilities=True)
                except BaseException as e:
                    os.write(w, b"E" + str(e).encode()[:500])
                    os._exit(1)
                os._exit(0)
            _, status = os.waitpid(inner, 0)
            os._exit(0 if status == 0 else 1)
        except BaseException as e:
            os.write(w, b"E" + str(e).encode()[:500])
            os._exit(1)
    os.close(w)
    os.close(go_r)
    error = None
    if map_to is not None:
        error = _map_ids(pid, r, go_w, map_to)
    os.close(go_w)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(r, "rb") as f:
        why = f.read().decode(errors="replace").removeprefix("E")
    if status == 0 and error is None:
        return None
    return error or why or f"exit status {status}"


def _worker_ids(base: tuple[int, int], wid: int) -> tuple[int, int]:
    """Each worker its own uid and gid outside: no two can signal or read each other."""
    offset = 1 + wid % (1 << 20)
    return base[0] + offset, base[1] + offset


def _map_ids(pid: int, pipe: int, go: int, map_to: tuple[int, int]) -> str | None:
    """Wait until the keeper has its new user namespace, map its root to `map_to`, say go."""
    ready, _, _ = select.select([pipe], [], [], 30)
    if not ready or os.read(pipe, 1) != b"U":
        os.write(go, b"F")
        return "the worker did not enter its namespaces"
    try:
        confine.write_id_maps(str(pid), 0, 0, map_to[0], map_to[1])
    except OSError as e:
        os.write(go, b"F")
        return str(e)
    os.write(go, b"G")
    return None


def _proc_table() -> dict[int, tuple[int, int, int]]:
    """pid -> (parent pid, resident bytes, threads) for every process this server can see."""
    page = os.sysconf("SC_PAGE_SIZE")
    table: dict[int, tuple[int, int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        rest = raw[raw.rfind(b")") + 2 :].split()
        try:
            table[int(name)] = (int(rest[1]), int(rest[21]) * page, int(rest[17]))
        except (IndexError, ValueError):
            continue
    return table


def _proportional(pids: list[int]) -> int:
    """Memory of several processes with pages they share counted once (Pss), in bytes.

    Forked processes share their parent's pages, so adding up their resident sizes
    would count those pages once per process.
    """
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
                for line in f:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError, IndexError):
            continue
    return total


def _tree(root: int, table: dict[int, tuple[int, int, int]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        if p in table:
            out.append(p)
            todo.extend(children.get(p, ()))
    return out


class Server:
    """The fork server's state and event loop."""

    def __init__(self, ctl: wire.Channel, confined: bool, map_to: tuple[int, int] | None) -> None:
        self.ctl = ctl
        self.confined = confined
        self.map_to = map_to  # (uid, gid) a worker's root becomes outside, when not its own
        self.children: dict[int, _Child] = {}

    def spawn(self, msg: dict[str, Any], fds: list[int]) -> None:
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            _send(self.ctl, {"event": "spawn_failed", "id": msg.get("id"), "error": "bad request"})
            return
        sock, log_fd = fds
        r, w = os.pipe()
        go_r, go_w = os.pipe()
        mapped = self.confined and self.map_to is not None
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.close(go_w)
            code = 71
            try:
                _keeper_main(sock, log_fd, w, go_r, msg, self.confined, mapped)
            except BaseException as e:
                try:
                    os.write(log_fd, f"autotriton: the worker could not start: {e}\n".encode())
                except OSError:
                    pass
            os._exit(code)
        for fd in (sock, log_fd, w, go_r):
            os.close(fd)
        if mapped:
            assert self.map_to is not None
            error = _map_ids(pid, r, go_w, _worker_ids(self.map_to, int(msg["id"])))
            if error:
                os.close(go_w)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(r)
                _send(self.ctl, {"event": "spawn_failed", "id": msg.get("id"), "error": error})
                return
        os.close(go_w)
        self.children[pid] = _Child(int(msg["id"]), pid, r, dict(msg["limits"]))

    def kill(self, wid: int) -> None:
        for c in list(self.children.values()):
            if c.id == wid and c.worker:
                self._kill_tree(c)
        with contextlib.suppress(OSError):  # a judge gone meanwhile: the loop sees it
            _send(self.ctl, {"event": "killed", "id": wid})

    def _kill_tree(self, c: _Child) -> None:
        """Kill the worker and, now, every process below its keeper: not only once the
        worker has ended (its keeper ends its orphans then, and the members of its own pid
        namespace go as it exits), since a GPU worker's end takes a few tenths of a second,
        which the judge no longer waits for before the next verdict (Pool.release)."""
        try:
            if self.confined:
                os.kill(c.worker, signal.SIGKILL)  # with a pid namespace (its init), all go
            else:
                os.killpg(c.worker, signal.SIGKILL)
        except OSError:
            pass
        # Bounded: a process that forks and exits without end is then left to the pids
        # limit and the keeper.
        confine.kill_until_dying(
            lambda: [p for p in _tree(c.keeper, _proc_table()) if p != c.keeper], _KILL_WITHIN_S
        )

    def on_pipe(self, c: _Child) -> None:
        data = os.read(c.pipe, _Q.size)
        if len(data) == _Q.size:
            (value,) = _Q.unpack(data)
            if not c.worker:
                c.worker = value
                try:
                    pidfd = os.pidfd_open(value)
                except OSError as e:
                    _send(self.ctl, {"event": "spawn_failed", "id": c.id, "error": str(e)})
                    return
                try:
                    _send(self.ctl, {"event": "spawned", "id": c.id}, [pidfd])
                finally:
                    os.close(pidfd)
            else:
                c.status = value
            return
        # End of the pipe: the keeper is gone.
        os.close(c.pipe)
        _, kstatus = os.waitpid(c.keeper, 0)
        del self.children[c.keeper]
        if not c.worker:
            _send(self.ctl, {"event": "spawn_failed", "id": c.id, "error": f"the worker's keeper ended (status {kstatus})"})
            return
        status = c.status if c.status is not None else kstatus
        _send(self.ctl, {"event": "exited", "id": c.id, "status": status})

    def watch(self) -> None:
        """Kill any worker whose process tree is over its process or memory limit."""
        live = [c for c in self.children.values() if c.worker and not c.killed_for]
        # From the keeper: a worker without a pid namespace leaves its orphans to it.
        if not live:
            return
        table = _proc_table()
        for c in live:
            tree = [p for p in _tree(c.keeper, table) if p != c.keeper]
            procs = len(tree)
            threads = sum(table[p][2] for p in tree)
            rss = sum(table[p][1] for p in tree)
            lim = c.limits
            why = ""
            if procs > lim["processes"]:
                kind, why = "processes", f"started more than {lim['processes']} processes"
            elif threads > lim["threads"]:
                kind, why = "processes", f"started more than {lim['threads']} threads"
            elif lim["memory_bytes"] and rss > lim["memory_bytes"] and (
                len(tree) == 1 or _proportional(tree) > lim["memory_bytes"]
            ):
                kind = "memory"
                why = f"used more than {lim['memory_bytes'] / 2**30:.1f} GiB of host memory"
            if why:
                c.killed_for = kind
                self._kill_tree(c)
                _send(self.ctl, {"event": "limit", "id": c.id, "kind": kind, "message": why})

    def preloaded(self, done: tuple[float, str] | None) -> None:
        """Tell the judge how a preload went (a progress line), unless it had nothing to do."""
        if done is not None:
            seconds, error = done
            with contextlib.suppress(OSError):  # a judge gone meanwhile: the loop sees it
                _send(
                    self.ctl,
                    {"event": "preloaded", "seconds": seconds, "seeded": len(_TRITON_SEED), "error": error[:500]},
                )

    def shutdown(self) -> None:
        for c in list(self.children.values()):
            if c.worker:
                self._kill_tree(c)
            try:
                os.kill(c.keeper, signal.SIGKILL)
            except OSError:
                pass

    def loop(self) -> None:
        while True:
            pipes = {c.pipe: c for c in self.children.values()}
            ready, _, _ = select.select([self.ctl.fileno(), *pipes], [], [], _TICK_S)
            for fd in ready:
                if fd == self.ctl.fileno():
                    try:
                        data, fds = self.ctl.recv_message(1 << 20)
                        msg = wire.decode(data)
                    except (EOFError, OSError, wire.WireError):
                        return  # the judge is gone
                    op = msg.get("op") if isinstance(msg, dict) else None
                    if op == "spawn":
                        self.spawn(msg, fds)
                    else:
                        for extra in fds:
                            os.close(extra)
                        if op == "kill":
                            self.kill(int(msg.get("id", -1)))
                        elif op == "preload":
                            self.preloaded(_preload(bool(msg.get("triton_seed")), self.confined))
                        elif op == "stop":
                            return
                elif fd in pipes:
                    self.on_pipe(pipes[fd])
            self.watch()


_TRITON_SEED: dict[str, bytes] = {}  # what every worker forked after its preload finds in its cache
_DYNAMO_TRIED = False  # a preload asked again (a CPU pool may) has nothing more to do
_PRIME_S = 120.0  # the longest wait for tritonwarm.prime's thread


def _stop_now() -> None:
    os._exit(75)


def _preload(triton_seed: bool = False, confined: bool = False) -> tuple[float, str] | None:
    """Import torch._dynamo here, once, for every worker forked after (worker.WorkerState.warm_up
    then has nothing left to do). Trusted code only, in this process: no candidate's
    worker runs while it imports (a CPU pool's server imports before its first fork; a
    GPU pool's after its first spare, which its first reference takes, and before any
    candidate's worker is forked: a kernel session's and a one-shot verify's). The import
    touches no CUDA. The server's loop waits meanwhile: that reference's worker goes
    unwatched for those seconds (the task's own code, not a candidate's).

    CPU workers switch Triton to its interpreter after the fork: the Triton that Dynamo's
    modules hold is then the compiled one. No CPU worker has Dynamo trace Triton code
    (nothing is timed on a CPU, and candidates may not call torch.compile), so that is
    never used.

    With triton_seed (a GPU pool), a child forked before any thread here builds the Triton
    cache that every later worker starts with, and a thread computes Triton's key of its
    build, while this process imports; both are done before it forks again. Returns how
    long it took and why the import failed (""), or None when there was nothing to do (a
    CPU pool's server asked again)."""
    global _DYNAMO_TRIED
    if _DYNAMO_TRIED and not triton_seed:
        return None  # done, or failed (each worker then imports it itself): not again
    _DYNAMO_TRIED = True
    t0 = time.perf_counter()
    error = ""
    seed = primer = None
    if triton_seed:
        from . import tritonwarm

        try:
            # Forked first, while this process has one thread. Confined, in the sandbox's
            # scratch, which each worker covers with its own; else a private new folder.
            seed = tritonwarm.Seed(SCRATCH if confined else None)
            primer = threading.Thread(target=tritonwarm.prime, name="autotriton-prime", daemon=True)
            primer.start()
        except (OSError, RuntimeError):
            primer = None
    try:
        import torch._dynamo  # noqa: F401
    except Exception as e:  # each worker imports it on its own, as without this
        error = f"{type(e).__name__}: {e}"
        print(f"autotriton: torch._dynamo could not be imported ahead: {error}", file=sys.stderr, flush=True)
    if primer is not None:
        primer.join(_PRIME_S)
        if primer.is_alive():  # never fork with a thread running: the pool starts another server
            print("autotriton: Triton's key took too long; the fork server stops", file=sys.stderr, flush=True)
            if seed is not None:
                seed.files(timeout_s=0.0)  # its child and compilers ended, its folder removed
            _stop_now()
    if seed is not None:
        global _TRITON_SEED
        _TRITON_SEED = seed.files()
    return time.perf_counter() - t0, error


def main(argv: list[str]) -> int:
    ctl = wire.Channel.from_fd(int(argv[1]))
    confined = argv[2] == "confined"
    map_to = tuple(int(x) for x in argv[3].split(":")) if len(argv) > 3 and argv[3] else None
    try:
        confine.not_dumpable()
        if not confined:
            confine.die_with_parent()
    except OSError:
        pass
    from . import worker  # noqa: F401  (preloads torch and triton for every fork)

    import_s = time.perf_counter() - _STARTED  # torch's import included
    error = None
    if confined:
        os.makedirs(SCRATCH, exist_ok=True)
        error = _probe_confinement(map_to)  # type: ignore[arg-type]
    _send(ctl, {"event": "ready", "import_s": import_s, "confine_error": error, "pid": os.getpid()})
    server = Server(ctl, confined, map_to)  # type: ignore[arg-type]
    if len(argv) > 4 and argv[4] == "preload":
        server.preloaded(_preload())  # after "ready": the judge's first request waits for it, not its start
    try:
        server.loop()
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
