"""The verifier service's start and end (CPU): one still starting is seen and can be
stopped, one whose workers cannot start says why at once, idleness ends it while clients
poll its status, and verifies beyond what its workers were sized for wait their turn."""

from __future__ import annotations

import dataclasses
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autotriton_jupyter.verify import service
from tests.test_service import ROOT, cli

BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="bubblewrap (bwrap) is not installed")


def _bwrap(tmp_path: Path, first: str, later: str) -> str:
    """A bwrap program for the service: its first use (the sandbox's check, made while the
    service is built) runs the shell line `first`, then the real bwrap; each later use
    (the workers' fork server) runs `later`."""
    count, script = tmp_path / "bwrap-uses", tmp_path / "bwrap"
    script.write_text(
        "#!/bin/sh\n"
        f"n=$(cat {count} 2>/dev/null || echo 0)\n"
        f"echo $((n + 1)) > {count}\n"
        f'if [ "$n" = 0 ]; then {first}; exec {BWRAP} "$@"; fi\n'
        f"{later}\n"
    )
    script.chmod(0o755)
    return str(script)


def _start(env: dict[str, str], **extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "autotriton_jupyter", "verifier", "start", "--device", "cpu", "--idle", "5"],
        env={**env, **extra}, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


@needs_bwrap
def test_a_service_still_starting_is_seen_and_a_stop_ends_it(env, tmp_path):
    """Until its imports are done a service has no socket: `status` says it is starting,
    and `stop` ends it (a stop here was lost before: it said none ran, and the service then
    ran its whole idle time). The `start` that launched it says why it ended."""
    release = tmp_path / "release"
    bw = _bwrap(tmp_path, f"while [ ! -e {release} ]; do sleep 0.05; done", f'exec {BWRAP} "$@"')
    starting = _start(env, AUTOTRITON_BWRAP=bw)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (service.status() or {}).get("starting"):
            assert starting.poll() is None, starting.communicate()
            time.sleep(0.05)
        got = service.status()
        assert got is not None and got["starting"] and not got["ready"]
        said = cli(env, "verifier", "status")
        assert said.returncode == 0 and said.stdout.startswith(f"verifier service starting: pid {got['pid']}")
        # The stop is a signal (no socket yet), sent at once; its start goes on 2 s later.
        threading.Timer(2.0, release.touch).start()
        assert service.stop(wait_s=300) == 0
        assert not service._alive(got["pid"])
        out, err = starting.communicate(timeout=120)
        assert starting.returncode == 1 and "asked to stop while it started" in err, (out, err)
    finally:
        release.touch()
        if starting.poll() is None:
            starting.kill()
    assert service.status() is None and not service.socket_path().exists()


@needs_bwrap
def test_a_service_whose_workers_cannot_start_says_why_at_once(env, tmp_path):
    """The sandbox's check passes, then its workers' fork server cannot be confined: the
    start says so within seconds (it waited its whole 300 s before, then said only "did
    not answer in time"), and no service is left."""
    bw = _bwrap(tmp_path, ":", 'echo "bwrap: No permission to create new namespace" >&2; exit 1')
    t0 = time.monotonic()
    got = _start(env, AUTOTRITON_BWRAP=bw)
    out, err = got.communicate(timeout=300)
    assert got.returncode == 1, (out, err)
    assert "could not start its workers" in err and "fork server" in err, err
    assert time.monotonic() - t0 < 120
    assert service.status() is None and not service.socket_path().exists()


def test_idleness_ends_the_service_while_a_client_polls_its_status(env):
    """Status asks are not work: a client that asks several times a second (a monitor)
    does not keep a service, and the GPU memory its workers hold, past its idle limit."""
    started = cli(env, "verifier", "start", "--device", "cpu", "--idle", "0.05")  # 3 s
    assert started.returncode == 0, started.stderr
    pid = service.status()["pid"]
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and service._alive(pid):
        service.status()
        time.sleep(0.2)
    assert not service._alive(pid)
    assert service.status() is None


class _Blocking:
    """A stand-in for the service's verifier (one worker): each verify waits for its gate,
    then says the task cannot run (which the service passes on)."""

    parallel = 1
    _refs: dict = {}
    device = "cpu"

    def __init__(self) -> None:
        self.gates = [threading.Event(), threading.Event()]
        self.began: list[int] = []

    def shares_workers_with(self, options) -> bool:
        return True

    def view(self, options, on_event=None):
        return self

    def interrupt(self) -> None:  # (its clients stay: never called)
        raise AssertionError("a verify was interrupted though its client stayed")

    def verify(self, task, cand):
        from autotriton_jupyter.task import TaskError

        n = len(self.began)
        self.began.append(n)
        assert self.gates[n].wait(60)
        raise TaskError(f"verify {n} done")


def test_verifies_beyond_the_workers_it_was_sized_for_wait_their_turn(monkeypatch):
    """Its workers' memory and GPU shares are sized for `parallel` at once: a verify beyond
    that waits (and says so) until one under way is done, as a local verify_many would."""
    from autotriton_jupyter.task import Candidate, Task
    from tests.test_service import CANDS, TASK

    svc = service._Service.__new__(service._Service)
    svc.verifier = _Blocking()
    svc.slots = threading.BoundedSemaphore(1)
    task, cand = Task.from_file(TASK), Candidate.from_file(CANDS / "pass_masked.py")
    msg = {
        "op": "verify", "task": dataclasses.asdict(task), "candidate": dataclasses.asdict(cand),
        "options": service._options_dict(service.VerifyOptions(device="cpu")),
        "code": service.code_id(),
    }
    pairs = [socket.socketpair() for _ in range(2)]
    threads = [threading.Thread(target=svc._verify, args=(theirs, msg), daemon=True) for _, theirs in pairs]
    threads[0].start()
    deadline = time.monotonic() + 30
    while not svc.verifier.began and time.monotonic() < deadline:
        time.sleep(0.01)
    threads[1].start()
    second = pairs[1][0].makefile("rb")
    waiting = json.loads(second.readline())
    assert "waiting for a free worker" in waiting["event"]
    time.sleep(0.3)
    assert svc.verifier.began == [0]  # the second has not begun beside the first
    svc.verifier.gates[0].set()
    threads[0].join(30)
    assert json.loads(pairs[0][0].makefile("rb").readline()) == {"error": "verify 0 done", "kind": "task"}
    svc.verifier.gates[1].set()
    threads[1].join(30)
    assert svc.verifier.began == [0, 1]
    assert json.loads(second.readline()) == {"error": "verify 1 done", "kind": "task"}


def test_a_service_gone_during_tuning_leaves_the_verdict_and_tuning_goes_on_here(env, monkeypatch, capsys):
    """`verify --tune` through the service: the service stops between the candidate's
    verdict and its variants' (a stop from another terminal, its idle end). The variants
    are judged by a verifier of this command's own, and the verdict is printed (before, a
    traceback and no verdict). Tuning needs a GPU's timing: on the CPU a stand-in for the
    tuning pass stops the service and hands its judge the candidate itself."""
    from autotriton_jupyter import tuning
    from autotriton_jupyter.cli import main
    from tests.test_service import CANDS, TASK

    assert cli(env, "verifier", "start", "--device", "cpu", "--idle", "5").returncode == 0
    judged: list = []

    def tune(cand, report, judge, limit, progress, rank_by="call"):
        assert any("verified by the verifier service" in n for n in report.notes)
        # (0 or 1: the service may count the verify just answered until its handler ends)
        assert service.stop() in (0, 1) and service.status() is None
        judged.extend(judge([cand]))
        return tuning.Tuning(original_ms=None, skipped="a stand-in for the tuning pass")

    monkeypatch.setattr(tuning, "tune", tune)
    capsys.readouterr()
    rc = main(["verify", str(TASK), str(CANDS / "pass_masked.py"), "--device", "cpu", "--tune", "--json"])
    said = capsys.readouterr()
    assert rc == 0 and json.loads(said.out)["verdict"] == "pass", said
    assert "the verifier service left during tuning" in said.err and "tuning goes on here" in said.err
    assert [r.verdict for r in judged] == ["pass"]
    assert not any("verifier service" in n for n in judged[0].notes)  # judged here


def test_a_verify_given_up_with_ctrl_c_is_stopped_in_the_service(env):
    """Ctrl-C in a verify sent to the service: the service sees the command go and stops
    its candidate (one that hangs held the service, and a `verifier stop` or `start`,
    until its timeout before). Its other work goes on."""
    import signal

    corpus = ROOT / "tests" / "corpus"
    assert cli(env, "verifier", "start", "--device", "cpu", "--idle", "5").returncode == 0
    pid = service.status()["pid"]
    hangs = subprocess.Popen(
        [sys.executable, "-m", "autotriton_jupyter", "verify", "--timeout", "300",
         str(corpus / "add_relu" / "task.py"), str(corpus / "crash" / "cheat_hang.py")],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 120
        for line in hangs.stderr:  # its progress, streamed from the service
            if "running in a sandboxed worker" in line or time.monotonic() > deadline:
                break
        time.sleep(1.0)  # the candidate is in its endless loop
        assert service.status()["active"] == 1
        hangs.send_signal(signal.SIGINT)
        _, err = hangs.communicate(timeout=60)
        assert hangs.returncode == 130 and "the verifier service stops this candidate" in err, err
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60 and service.status()["active"]:
            time.sleep(0.1)
        assert service.status()["active"] == 0  # not its 300 s timeout
    finally:
        if hangs.poll() is None:
            hangs.kill()
    ok = cli(env, "verify", str(corpus / "add_relu" / "task.py"), str(corpus / "add_relu" / "pass_masked.py"))
    assert ok.returncode == 0 and service.status()["pid"] == pid  # the same service, still serving


def test_status_and_stop_say_when_the_runtime_folder_cannot_be_used(env, capsys):
    """A folder that is not private (another user could reach the socket) is refused by
    `status` and `stop` with what to do, not read as "no verifier service is running"."""
    from autotriton_jupyter.cli import main

    folder = Path(env["XDG_RUNTIME_DIR"]) / "autotriton"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    try:
        for what in ("status", "stop"):
            assert main(["verifier", what]) == 1
            said = capsys.readouterr()
            assert "is not a private folder of this user" in said.err and "no verifier service" not in said.out
    finally:
        folder.chmod(0o700)
