"""`autotriton verifier start`: a warm verifier service that `autotriton verify` uses (CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from autotriton_jupyter import bytecode
from autotriton_jupyter.verify import service

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "examples/tasks/add_relu.py"
CANDS = ROOT / "examples/candidates/add_relu"


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autotriton_jupyter", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )


def test_verify_uses_a_started_service_and_gives_the_local_verdicts(env, monkeypatch, capsys):
    assert cli(env, "verifier", "status").returncode == 1  # none yet
    none = cli(env, "verifier", "status", "--json")
    assert none.returncode == 1 and json.loads(none.stdout) == {"running": False}
    started = cli(env, "verifier", "start", "--device", "cpu", "--idle", "5")
    assert started.returncode == 0, started.stderr
    assert "verifier service ready: pid" in started.stdout and "on cpu, sandbox on" in started.stdout
    status = json.loads(cli(env, "verifier", "status", "--json").stdout)
    assert status["ready"] and status["device"] == "cpu" and status["idle_s"] == 300

    ok = cli(env, "verify", str(TASK), str(CANDS / "pass_masked.py"), "--json")
    bad = cli(env, "verify", str(TASK), str(CANDS / "fail_sub.py"), "--json")
    assert (ok.returncode, bad.returncode) == (0, 1)
    assert json.loads(ok.stdout)["verdict"] == "pass"
    assert json.loads(bad.stdout)["reasons"][0]["check"] == "correctness"
    assert "running in a sandboxed worker" in ok.stderr  # the service's progress, streamed
    # The same verdicts from a verify in this process.
    local = cli(env, "verify", str(TASK), str(CANDS / "fail_sub.py"), "--json", "--local")
    checks = lambda p: [(c["name"], c["status"]) for c in json.loads(p.stdout)["checks"]]  # noqa: E731
    assert checks(local) == checks(bad)
    # The service kept the task's reference: a second verify did not run it again.
    assert json.loads(cli(env, "verifier", "status", "--json").stdout)["references"] == 1
    assert any("verified by the verifier service" in n for n in json.loads(ok.stdout)["notes"])
    assert not any("verifier service" in n for n in json.loads(local.stdout)["notes"])

    # Options the service's workers cannot serve: the verify runs here, and says so.
    other = cli(env, "verify", str(TASK), str(CANDS / "pass_masked.py"), "--no-sandbox")
    assert other.returncode == 0
    assert "cannot take this" in other.stderr and "its sandbox is on" in other.stderr

    # A second start says one runs; one asked for other settings is refused, and says which.
    again = cli(env, "verifier", "start", "--device", "cpu")
    assert again.returncode == 0 and "already running" in again.stdout
    other = cli(env, "verifier", "start", "--no-sandbox")
    assert other.returncode == 1 and "its sandbox is on" in other.stderr and "verifier stop" in other.stderr
    longer = cli(env, "verifier", "start", "--device", "cpu", "--idle", "9")
    assert longer.returncode == 0 and "its idle limit stays 5 min" in longer.stdout
    if not torch.cuda.is_available():  # a device this machine lacks: the request's error, exit 2
        cuda = cli(env, "verify", str(TASK), str(CANDS / "pass_masked.py"), "--device", "cuda")
        assert cuda.returncode == 2 and "CUDA" in cuda.stderr and "service failed" not in cuda.stderr
    # A client of other code (an upgrade since the service started) verifies itself.
    from autotriton_jupyter.task import Candidate, Task
    from autotriton_jupyter.verify.options import VerifyOptions

    said = []
    with monkeypatch.context() as m:
        m.setattr(service, "code_id", lambda: "another-version")
        got = service.verify_remote(Task.from_file(TASK), Candidate.from_file(CANDS / "pass_masked.py"),
                                    VerifyOptions(device="cpu"), said.append)
        assert got is None and "other autotriton code" in said[-1] and "source changed" in said[-1]
        assert "other autotriton code" in service.mismatch(service.status(), VerifyOptions())
        from autotriton_jupyter.cli import main

        capsys.readouterr()
        assert main(["verifier", "status"]) == 0
        assert "note: it runs other autotriton code than this command" in capsys.readouterr().out
    assert service.mismatch(service.status(), VerifyOptions(device="cpu")) is None
    human = cli(env, "verifier", "status")
    assert human.returncode == 0 and "on cpu, sandbox on" in human.stdout and "stops after 5 min" in human.stdout

    assert "verifier service stopped" in cli(env, "verifier", "stop").stdout
    for _ in range(100):  # it finishes its accept loop, then removes its socket
        if service.status() is None:
            break
        time.sleep(0.1)
    assert service.status() is None


def test_a_one_shot_verify_says_how_to_keep_a_verifier_warm(env):
    """Without a service, a verify pays for its own verifier: it says so, and what to run."""
    slow = cli(env, "verify", str(TASK), str(CANDS / "pass_masked.py"), "--device", "cpu")
    assert slow.returncode == 0, slow.stderr
    assert "started its own verifier" in slow.stderr and "autotriton verifier start" in slow.stderr
    for flag in ("-q", "--local"):  # asked for quiet, or asked to verify here
        quiet = cli(env, "verify", str(TASK), str(CANDS / "pass_masked.py"), "--device", "cpu", flag)
        assert quiet.returncode == 0 and "verifier start" not in quiet.stderr
    assert ("no compiled bytecode" in slow.stderr) == bool(bytecode.missing())


def test_a_one_shot_verify_without_its_packages_bytecode_says_how_to_compile_it(env, tmp_path):
    """A Python that finds no .pyc for a package the verifier imports compiles it in every
    process: a one-shot verify says so, with the command that mends it. Here the package
    checked is one of the test's, without bytecode (sitecustomize names it)."""
    pkg = tmp_path / "pkg_without_pyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("X = 1\n")
    (tmp_path / "sitecustomize.py").write_text(
        "from autotriton_jupyter import bytecode\n"
        "bytecode.CHECKED = {'pkg_without_pyc': ('__init__.py',)}\n"
    )
    no_pyc = {**env, "PYTHONPATH": f"{tmp_path}:{ROOT}", "PYTHONDONTWRITEBYTECODE": "1"}
    args = ("verify", str(TASK), str(CANDS / "pass_masked.py"), "--device", "cpu", "--local")
    got = cli(no_pyc, *args)
    assert got.returncode == 0, got.stderr
    line = next(x for x in got.stderr.splitlines() if "no compiled bytecode" in x)
    assert "pkg_without_pyc has" in line and line.endswith(f"-m compileall -q -j 0 -x /testing/_internal/ {pkg}")
    assert "pass" in got.stdout  # the verdict, as without the hint
    quiet = cli(no_pyc, *args, "-q")
    assert quiet.returncode == 0 and "bytecode" not in quiet.stderr


def test_a_task_error_from_the_service_is_an_input_error(env, tmp_path):
    assert cli(env, "verifier", "start", "--device", "cpu", "--idle", "5").returncode == 0
    broken = tmp_path / "broken.py"
    broken.write_text(
        TASK.read_text().replace("def forward(self, x, y):", "def forward(self, x, y):\n        raise ValueError('no')")
    )
    got = cli(env, "verify", str(broken), str(CANDS / "pass_masked.py"))
    assert got.returncode == 2 and "cannot be run" in got.stderr and "no" in got.stderr


def test_the_client_does_not_import_torch():
    code = (
        "import sys; from autotriton_jupyter.verify import service, format_text, VerifyOptions; "
        "import autotriton_jupyter.cli; print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr


def test_a_shared_or_foreign_folder_is_refused(tmp_path, monkeypatch):
    runtime = tmp_path / "run"
    (runtime / "autotriton").mkdir(parents=True)
    os.chmod(runtime / "autotriton", 0o777)  # others could plant a socket there
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    with pytest.raises(service.ServiceError, match="not a private folder"):
        service.folder()
    assert service.status() is None  # a client treats it as no service, and verifies itself


def test_start_takes_only_its_own_flags(env):
    got = cli(env, "verifier", "start", "--device", "cpu", "--atol", "0.1")
    assert got.returncode == 2 and "--atol" in got.stderr
    assert service.status() is None  # nothing was started


def test_an_unusable_runtime_folder_is_one_clear_line(tmp_path):
    link = tmp_path / "run"
    link.mkdir(mode=0o700)
    (link / "autotriton").symlink_to(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for runtime, says in ((str(link), "is a symbolic link"), ("/proc", "cannot be made")):
        got = cli({**env, "XDG_RUNTIME_DIR": runtime}, "verifier", "start", "--device", "cpu")
        assert got.returncode == 1 and says in got.stderr and "XDG_RUNTIME_DIR" in got.stderr
        assert "Traceback" not in got.stderr


def test_a_service_that_does_not_take_the_connection_is_busy_not_gone(tmp_path, monkeypatch):
    import socket

    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(service.socket_path()))
    listener.listen(0)  # never accepts: the queue fills
    held = []
    try:
        with pytest.raises(service.ServiceError, match="did not answer"):
            for _ in range(64):
                c = service._connect(timeout=0.3)
                assert c is not None
                held.append(c)
    finally:
        for c in held:
            c.close()
        listener.close()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_a_service_asked_for_a_missing_gpu_says_so_in_one_line(env):
    got = cli(env, "verifier", "start", "--device", "cuda")
    assert got.returncode == 2 and "CUDA" in got.stderr
    assert "Traceback" not in got.stderr and len(got.stderr.strip().splitlines()) <= 2
    assert service.status() is None


def test_tune_flags_imply_tune_and_the_verified_files_are_not_overwritten(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    got = cli(env, "verify", str(TASK), str(CANDS / "pass_masked.py"), "--tune-variants", "3",
              "--json", "--local", "--device", "cpu")
    assert got.returncode == 0 and "needs timing on a GPU" in json.loads(got.stdout)["tuning"]["skipped"]
    same = cli(env, "verify", str(TASK), str(CANDS / "pass_masked.py"), "--tune", "--tuned-out",
               str(CANDS / "pass_masked.py"))
    assert same.returncode == 2 and "one of the files being verified" in same.stderr


def test_sigterm_stops_the_service_as_verifier_stop_does(env):
    started = cli(env, "verifier", "start", "--device", "cpu", "--idle", "5")
    assert started.returncode == 0, started.stderr
    pid = json.loads(cli(env, "verifier", "status", "--json").stdout)["pid"]
    folder = service.socket_path().parent
    assert service.socket_path().exists()
    os.kill(pid, 15)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (service.socket_path().exists() or service._alive(pid)):
        time.sleep(0.2)
    assert not service.socket_path().exists()  # its socket and info file are gone
    assert not any(p.name.startswith("verifier.") and p.suffix in (".sock", ".json") for p in folder.iterdir())
    assert not service._alive(pid)
    assert cli(env, "verifier", "status").returncode == 1


def test_stop_says_how_many_verifies_it_let_finish(env, capsys):
    from autotriton_jupyter.cli import main

    assert cli(env, "verifier", "start", "--device", "cpu", "--idle", "5").returncode == 0
    assert cli(env, "verifier", "stop").stdout.strip() == "verifier service stopped"  # none under way
    assert cli(env, "verifier", "start", "--device", "cpu", "--idle", "5").returncode == 0
    slow = subprocess.Popen(
        [sys.executable, "-m", "autotriton_jupyter", "verify", "--json",
         str(ROOT / "examples/tasks/softmax.py"), str(ROOT / "examples/candidates/softmax/rowwise.py")],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (service.status() or {}).get("active", 0) == 0:
            assert slow.poll() is None, slow.communicate()
            time.sleep(0.05)
        assert main(["verifier", "stop"]) == 0  # in this process: asked within milliseconds
        said = capsys.readouterr().out.strip()
        assert said == "verifier service stopped (1 verify under way finished first)"
        out, err = slow.communicate(timeout=600)
    finally:
        if slow.poll() is None:
            slow.kill()
    assert slow.returncode == 0 and json.loads(out)["verdict"] == "pass", err[-2000:]
    assert "verified by the verifier service" in " ".join(json.loads(out)["notes"])


def test_a_service_that_does_not_stop_in_time_is_an_error_not_stopped(tmp_path, monkeypatch):
    import socket
    import threading

    ours, theirs = socket.socketpair()

    def service_side() -> None:  # its pid: a process that stays (this one)
        with theirs:
            theirs.recv(1 << 16)  # the stop request
            theirs.sendall(json.dumps({"stopping": True, "active": 2, "pid": os.getpid()}).encode() + b"\n")

    threading.Thread(target=service_side, daemon=True).start()
    monkeypatch.setattr(service, "_connect", lambda: ours)
    monkeypatch.setattr(service, "folder", lambda: tmp_path)
    with pytest.raises(service.ServiceError, match="still runs after 0.3 s .verifies under way when asked: 2"):
        service.stop(wait_s=0.3)


def test_a_start_while_the_service_stops_waits_for_it_and_leaves_no_orphan(env, capsys):
    """`verifier stop` lets the verifies under way finish. Meanwhile `status` says the
    service is stopping, and `start` waits until it is gone, then starts the next one,
    whose socket the old one, ending after, does not remove. (The stop, `status` and
    `start` are sent from this process: within milliseconds, while the verify is surely
    under way.)"""
    import threading

    from autotriton_jupyter.cli import main

    assert cli(env, "verifier", "start", "--device", "cpu", "--idle", "5").returncode == 0
    old = json.loads(cli(env, "verifier", "status", "--json").stdout)["pid"]
    slow = subprocess.Popen(
        [sys.executable, "-m", "autotriton_jupyter", "verify", "--json",
         str(ROOT / "examples/tasks/softmax.py"), str(ROOT / "examples/candidates/softmax/rowwise.py")],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    stopped: list = []
    stopper = threading.Thread(target=lambda: stopped.append(service.stop(wait_s=600)), daemon=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (service.status() or {}).get("active", 0) == 0:
            assert slow.poll() is None, slow.communicate()
            time.sleep(0.05)
        stopper.start()
        while time.monotonic() < deadline and not (service.status() or {}).get("stopping"):
            time.sleep(0.05)
        capsys.readouterr()
        assert main(["verifier", "status"]) == 0
        said = capsys.readouterr().out
        assert said.startswith(f"verifier service stopping: pid {old}"), said
        assert "finishes its 1 verify under way and takes no new one" in said
        assert main(["verifier", "start", "--device", "cpu", "--idle", "5"]) == 0
        started = capsys.readouterr()
        assert f"(pid {old}) is stopping: waiting for its 1 verify under way" in started.err
        assert "verifier service ready" in started.out
        out, err = slow.communicate(timeout=600)
        assert slow.returncode == 0 and json.loads(out)["verdict"] == "pass", err[-2000:]
        stopper.join(60)
        assert stopped == [1]  # the old one's stop: it let its 1 verify finish
    finally:
        if slow.poll() is None:
            slow.kill()
    new = service.status()
    assert new is not None and new["pid"] != old and not new.get("stopping")
    assert not service._alive(old) and service.socket_path().exists()


def test_two_starts_at_once_give_one_service(env):
    """Two `verifier start` at the same moment: one service (one per user, its lock), which
    both report, and which a stop ends, leaving none behind."""
    starts = [
        subprocess.Popen(
            [sys.executable, "-m", "autotriton_jupyter", "verifier", "start", "--device", "cpu", "--idle", "5"],
            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in starts]
    assert [p.returncode for p in starts] == [0, 0], outs
    pids = {int(o.split("pid ", 1)[1].split()[0]) for o, _ in outs}
    assert len(pids) == 1 and _services(env) == pids, (outs, _services(env))
    assert cli(env, "verifier", "stop").returncode == 0
    assert service.status() is None and _services(env) == set()


def test_a_connection_that_never_asks_does_not_keep_a_stopping_service(env):
    import socket

    assert cli(env, "verifier", "start", "--device", "cpu", "--idle", "5").returncode == 0
    pid = service.status()["pid"]
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(str(service.socket_path()))
    try:  # (it would wait for the silent connection forever: the stop would time out)
        assert service.stop(wait_s=service._REQUEST_S + 50) == 0
    finally:
        silent.close()
    assert not service._alive(pid)


def test_a_verify_sent_to_a_stopping_service_is_verified_here(monkeypatch):
    """A stopping service refuses new verifies: the client verifies on its own, quietly."""
    import socket
    import threading

    from autotriton_jupyter.task import Candidate, Task

    ours, theirs = socket.socketpair()

    def service_side() -> None:
        with theirs:
            theirs.recv(1 << 20)
            theirs.sendall(json.dumps({"error": "the verifier service is stopping", "kind": "stopping"}).encode() + b"\n")

    threading.Thread(target=service_side, daemon=True).start()
    monkeypatch.setattr(service, "_connect", lambda: ours)
    said: list[str] = []
    task, cand = Task.from_file(TASK), Candidate.from_file(CANDS / "pass_masked.py")
    assert service.verify_remote(task, cand, service.VerifyOptions(), said.append) is None
    assert said == []


def _services(env: dict[str, str]) -> set[int]:
    """The service processes running for this test's runtime folder."""
    mine = f"XDG_RUNTIME_DIR={env['XDG_RUNTIME_DIR']}".encode()
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if b"autotriton_jupyter.verify.service" in cmd and mine in environ.split(b"\0") and service._alive(int(proc.name)):
            found.add(int(proc.name))
    return found


def test_ctrl_c_while_a_service_starts_stops_it(env):
    import signal
    import threading

    from autotriton_jupyter.verify import VerifyOptions

    started = []
    real = subprocess.Popen

    def popen(*a, **k):
        started.append(real(*a, **k))
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()  # Ctrl-C, a second in
        return started[-1]

    saved = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(service.subprocess, "Popen", popen)
            with pytest.raises(KeyboardInterrupt):
                service.start(VerifyOptions(device="cpu"), idle_s=300)
    finally:
        signal.signal(signal.SIGINT, saved)
    assert len(started) == 1 and started[0].poll() is not None  # the service it started ended
    assert service.status() is None and not service.socket_path().exists()


def test_a_service_that_drops_the_connection_as_it_ends_reads_as_gone_not_as_an_error(env):
    """A service that closes a connection it has not read (it is ending) resets it: status,
    stop and a verify read that as a service that is gone, and raise nothing (CI found the
    reset); the verify is then the client's own."""
    import socket
    import threading

    from autotriton_jupyter.task import Candidate, Task
    from autotriton_jupyter.verify.options import VerifyOptions

    path = service.socket_path()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    served = []

    def drop() -> None:  # accept, wait until the request has arrived unread, then close
        for _ in range(3):
            conn, _ = listener.accept()
            time.sleep(0.2)
            served.append(len(conn.recv(1 << 16, socket.MSG_PEEK)))
            conn.close()

    t = threading.Thread(target=drop, daemon=True)
    t.start()
    try:
        assert service.status() is None
        assert service.stop(wait_s=5) is None
        task, cand = Task.from_file(TASK), Candidate.from_file(CANDS / "pass_masked.py")
        assert service.verify_remote(task, cand, VerifyOptions(device="cpu")) is None
    finally:
        t.join(10)
        listener.close()
        path.unlink(missing_ok=True)
    assert len(served) == 3 and all(served)  # the requests were there, unread, at the close
