"""A pool's spares are replaced behind the worker just acquired: the reference's worker,
first of all, does not wait for the fork server to fork others. A worker released is
killed at once, whole tree and all, and its end waited for behind the verdict."""

from __future__ import annotations

import contextlib
import threading
import time

from autotriton_jupyter.verify.sandbox import Pool


def test_acquire_does_not_wait_for_the_spares_it_starts(monkeypatch):
    pool = Pool("cpu", spares=2, sandbox=False)
    real = Pool._start
    slow = threading.Event()

    calls = []

    def start(self):
        calls.append(1)
        if len(calls) > 1:
            slow.wait(30)  # the spares' starts held back until the test lets them go
        return real(self)

    monkeypatch.setattr(Pool, "_start", start)
    try:
        t0 = time.perf_counter()
        w = pool.acquire()  # none ready: started here, at once
        took = time.perf_counter() - t0
        assert w.proc.is_alive() and not pool._spare
        slow.set()
        for _ in range(600):
            if len(pool._spare) == 2:
                break
            time.sleep(0.1)
        assert len(pool._spare) == 2  # the spares came behind it
        assert took < 25, took
    finally:
        slow.set()
        pool.close()


def test_only_a_gpu_pool_is_told_to_import_dynamo_after_its_first_spare():
    """A CPU pool's server imports it before its first fork already (tests/test_prestart.py);
    a GPU pool's only when a kernel session asks, after its first spare (session.start)."""
    import types

    sent = []
    pool = Pool.__new__(Pool)
    pool._fork_server = lambda: types.SimpleNamespace(preload=lambda **how: sent.append(how))
    pool.device = "cpu"
    pool.preload_after_first_spare()
    assert sent == []
    pool.device = "cuda"
    pool.preload_after_first_spare()
    assert sent == [{"triton_seed": True}]  # and its later workers' Triton caches seeded


def test_start_for_reference_forks_one_worker_before_the_server_imports_dynamo(monkeypatch):
    """The first reference's worker is forked first and alone, however many spares the pool
    keeps; the import comes after it, and every later fork (the candidates') after that."""
    import types

    events = []
    pool = Pool.__new__(Pool)
    pool.device, pool.spares, pool._spare, pool._starting = "cuda", 4, [], 0
    pool._mutex, pool._closed = threading.Lock(), False
    pool._fork_server = lambda: types.SimpleNamespace(preload=lambda **_: events.append("preload"))

    def start():
        events.append("fork")
        return object()

    pool._start = start
    pool.start_for_reference()
    assert events == ["fork", "preload"]
    assert len(pool._spare) == 1 and pool._starting == 0
    pool.start_for_reference()  # its one spare is there: nothing more is forked
    assert events == ["fork", "preload", "preload"]


def test_a_pool_tells_once_when_its_server_is_ready_and_when_it_preloaded():
    """The one-shot CLI's lines about the fork server (Pool.on_event), from a real CPU pool:
    each once, even where the pool asks the server to preload twice."""
    said: list[str] = []
    pool = Pool("cpu", spares=0, sandbox=False)
    pool.on_event = said.append
    try:
        pool.start_for_reference()
        pool._fork_server().preload()  # asked again: nothing to do, nothing said
        w = pool.acquire()
        pool.release(w)
        for _ in range(100):  # the lines are said on threads of their own
            if sum("preloaded" in x for x in said) and sum("ready" in x for x in said):
                break
            time.sleep(0.05)
        time.sleep(0.3)
    finally:
        pool.close()
    assert sum("fork server is ready (torch imported in" in x for x in said) == 1, said
    assert sum("torch._dynamo preloaded in the fork server" in x for x in said) == 1, said
    assert said.index(next(x for x in said if "ready" in x)) == 0


def test_a_listener_that_never_returns_holds_up_no_worker():
    """The server's lines reach a listener on threads of their own: one stuck (a stderr
    nobody reads) does not stop the events of the workers (their start, their end)."""
    stuck = threading.Event()
    pool = Pool("cpu", spares=0, sandbox=False, start_timeout=20)
    pool.on_event = lambda _line: stuck.wait(60) if "preloaded" in _line else None
    try:
        pool.start_for_reference()
        t0 = time.monotonic()
        w = pool.acquire()
        pool.release(w)
        w = pool.acquire()  # a second fork: the events of the first were read meanwhile
        pool.release(w)
        assert time.monotonic() - t0 < 20
    finally:
        stuck.set()
        pool.close()


def _first_end_held(monkeypatch) -> tuple[threading.Event, list]:
    """Hold back the first released worker's end (Worker.reap) until the event is set; the
    workers whose ends are over, in order."""
    from autotriton_jupyter.verify import sandbox

    real = sandbox.Worker.reap
    held = threading.Event()
    ended: list = []
    started: list = []

    def slow_reap(self):
        if not started:
            started.append(self)
            held.wait(30)
        real(self)
        ended.append(self)

    monkeypatch.setattr(sandbox.Worker, "reap", slow_reap)
    return held, ended


def test_a_released_worker_is_signalled_at_once_and_its_end_waited_for_on_a_thread(monkeypatch):
    """A GPU worker's end (its CUDA context torn down) takes a few tenths of a second: no
    verdict waits for it. The next acquire does (no worker handed out runs beside the
    memory of one that is ending), and so does the pool's close, before it removes the
    workers' folder and control groups."""
    pool = Pool("cpu", spares=0, sandbox=False)
    held, ended = _first_end_held(monkeypatch)
    try:
        w = pool.acquire()
        t0 = time.perf_counter()
        pool.release(w)
        # Back once its server has signalled its whole tree (milliseconds), not its end.
        assert time.perf_counter() - t0 < 1.5 and w.proc.killed.is_set()
        w.proc.join(20)  # signalled by release itself
        assert not w.proc.is_alive() and ended == []
        got = []
        taking = threading.Thread(target=lambda: got.append(pool.acquire()))
        taking.start()
        taking.join(0.5)
        assert taking.is_alive() and not got  # waiting for that end
        held.set()
        taking.join(60)
        assert ended == [w] and len(got) == 1
        pool.release(got[0], wait=True)  # asked to: ended before it returns
        assert ended == [w, got[0]]
    finally:
        held.set()
        pool.close()


def test_close_waits_for_the_ends_of_released_workers(monkeypatch):
    pool = Pool("cpu", spares=0, sandbox=False)
    held, ended = _first_end_held(monkeypatch)
    try:
        w = pool.acquire()
        pool.release(w)
        closing = threading.Thread(target=pool.close)
        closing.start()
        closing.join(0.5)
        assert closing.is_alive() and ended == []
        held.set()
        closing.join(30)
        assert not closing.is_alive() and ended == [w]
    finally:
        held.set()
        pool.close()


def test_close_signals_every_worker_before_it_waits_for_any(monkeypatch):
    from autotriton_jupyter.verify import sandbox

    pool = Pool("cpu", spares=0, sandbox=False)
    order = []
    real_signal, real_reap = sandbox._Process.kill, sandbox.Worker.reap
    monkeypatch.setattr(sandbox._Process, "kill", lambda self: (order.append(("signal", self.id)), real_signal(self))[1])
    monkeypatch.setattr(sandbox.Worker, "reap", lambda self: (order.append(("wait", self.proc.id)), real_reap(self))[1])
    try:
        a, b = pool.acquire(), pool.acquire()
        order.clear()
        pool.close()
        waits = [i for i, (what, _) in enumerate(order) if what == "wait"]
        signals = [i for i, (what, _) in enumerate(order) if what == "signal"]
        assert len(waits) == 2 and {order[i][1] for i in signals[:2]} == {a.proc.id, b.proc.id}
        assert signals[1] < waits[0]  # both signalled before the first wait
        assert a.proc.ended.is_set() and b.proc.ended.is_set()  # their server saw them end
    finally:
        pool.close()


def test_the_fork_server_kills_a_workers_whole_tree_at_the_kill_not_at_its_end(tmp_path):
    """A process the worker started in a session of its own (out of its process group) is
    killed with the kill itself, not once the worker has ended and its keeper ends the
    orphans: a GPU worker's end takes a few tenths of a second, which no verdict waits for."""
    import os
    import signal
    import subprocess
    import sys
    import textwrap

    from autotriton_jupyter.verify import forkserver

    marker = tmp_path / "escaped.pid"
    keeper = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, time
        from autotriton_jupyter.verify import confine
        confine.adopt_orphans()  # as a keeper of a worker without a pid namespace is
        pid = os.fork()
        if pid == 0:  # the worker
            os.setpgid(0, 0)
            if os.fork() == 0:  # what it leaves behind, in a session of its own
                os.setsid()
                open({str(marker)!r}, "w").write(str(os.getpid()))
                time.sleep(120)
            time.sleep(120)
        open({str(marker)!r} + ".worker", "w").write(str(pid))
        time.sleep(120)  # the keeper: it reaps nothing until the test is over
    """)])
    def gone(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # dead, not yet reaped
        except OSError:
            return True

    try:
        for _ in range(200):
            if marker.exists() and marker.with_suffix(".pid.worker").exists() and marker.read_text():
                break
            time.sleep(0.05)
        escaped = int(marker.read_text())
        worker = int(marker.with_suffix(".pid.worker").read_text())
        server = forkserver.Server.__new__(forkserver.Server)
        server.confined = False
        child = forkserver._Child(1, keeper.pid, -1, {})
        child.worker = worker
        server._kill_tree(child)
        deadline = time.monotonic() + 5
        while not (gone(escaped) and gone(worker)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert gone(escaped) and gone(worker)
        assert keeper.poll() is None  # the keeper itself is left to report the end
    finally:
        keeper.kill()
        keeper.wait(10)
        for f in (marker, marker.with_suffix(".pid.worker")):
            if f.exists():
                with contextlib.suppress(OSError, ValueError):
                    pid = int(f.read_text())
                    if not gone(pid):  # (a pid of this test's, still there)
                        os.kill(pid, signal.SIGKILL)


def test_every_acquire_waits_for_an_end_not_only_the_first(monkeypatch):
    """Two threads acquiring at once (a session's candidates, a reference beside them):
    neither gets a worker while a released one is still ending."""
    pool = Pool("cpu", spares=0, sandbox=False)
    held, _ = _first_end_held(monkeypatch)
    try:
        pool.release(pool.acquire())
        got = []
        takers = [threading.Thread(target=lambda: got.append(pool.acquire())) for _ in range(2)]
        for t in takers:
            t.start()
        time.sleep(0.5)
        assert got == [] and all(t.is_alive() for t in takers)
        held.set()
        for t in takers:
            t.join(60)
        assert len(got) == 2
    finally:
        held.set()
        pool.close()


def test_doomed_tells_a_process_that_will_go_from_one_that_runs():
    import signal
    import subprocess

    from autotriton_jupyter.verify.confine import doomed

    p = subprocess.Popen(["sleep", "60"])
    try:
        assert not doomed(p.pid)
        p.send_signal(signal.SIGSTOP)  # stopped: the SIGKILL's delivery is what is checked
        time.sleep(0.1)
        assert not doomed(p.pid)
        p.kill()
        deadline = time.monotonic() + 5
        while not doomed(p.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert doomed(p.pid)  # pending, exiting or a zombie: not reaped yet
    finally:
        p.kill()
        p.wait(10)
    assert doomed(p.pid)  # reaped: no such process
