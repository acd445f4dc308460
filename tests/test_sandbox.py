"""Model-written code cannot touch the user's machine, the judge, or other candidates (issue 12).

Each attack is the honest add_relu kernel with hostile code added at import or in
forward, judged past the lint (the lint is not what these tests are about): the
sandbox alone must contain it. What an attack saw, it reports by raising, so the
test can read it in the report.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions
from autotriton_jupyter.verify.bwrap import SandboxUnavailable
from autotriton_jupyter.verify.report import Report

from .test_judge_robustness import judge_without_lint

ROOT = Path(__file__).resolve().parents[1]
HONEST = (ROOT / "tests" / "corpus" / "add_relu" / "pass_masked.py").read_text()

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the sandbox is Linux namespaces and bubblewrap"
)


def attack(at_import: str = "", in_forward: str = "") -> Candidate:
    """The honest kernel plus hostile code; `in_forward` runs before the kernel launch."""
    src = HONEST.replace("import triton.language as tl\n", "import triton.language as tl\n" + textwrap.dedent(at_import) + "\n", 1)
    if in_forward:
        body = textwrap.indent(textwrap.dedent(in_forward), " " * 8)
        src = src.replace("        x = x.contiguous()\n", body + "\n        x = x.contiguous()\n", 1)
    return Candidate(src, "attack")


def seen(report: Report) -> dict:
    """What an attack reported by raising `RuntimeError("SEEN" + base64(json))`."""
    found = re.findall(r"SEEN([A-Za-z0-9+/=]+)", json.dumps(report.to_dict()))
    assert found, report.reasons
    return json.loads(base64.b64decode(max(found, key=len)))  # the traceback's is whole


@pytest.fixture(scope="module", params=["pid namespace", "no pid namespace (as on a GPU)"])
def setup(corpus, request):
    task = Task.from_file(corpus / "add_relu" / "task.py")
    honest = Candidate.from_file(corpus / "add_relu" / "pass_masked.py")
    with Verifier(VerifyOptions(device="cpu", seed=5, timeout=30, timing=False, parallel=2)) as v:
        v.pool.pid_namespace = request.param == "pid namespace"
        yield v, task, honest


def _pids_with(marker: str) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        out.append(int(name))
            except OSError:
                pass
    return out


def test_reports_say_the_workers_were_sandboxed(setup):
    v, task, honest = setup
    r = v.verify(task, honest)
    assert r.verdict == "pass" and r.sandboxed
    assert r.to_dict()["sandboxed"] is True


def test_shell_commands_and_writes_leave_no_mark_outside(setup, tmp_path):
    v, task, honest = setup
    marks = [tmp_path / "from_shell", tmp_path / "from_python", ROOT / f"mark-{uuid.uuid4().hex}"]
    import sysconfig

    pth = Path(sysconfig.get_paths()["purelib"]) / f"zz_autotriton_attack_{uuid.uuid4().hex}.pth"
    cand = attack(
        at_import=f"""
        import os
        os.system("touch {marks[0]}")
        for p in {[str(m) for m in marks[1:]] + [str(pth)]!r}:
            try:
                open(p, "w").write("import os; os.system('touch {marks[0]}')")
            except OSError:
                pass
        """
    )
    judge_without_lint(v, task, cand)
    for m in marks + [pth]:
        assert not m.exists(), f"the candidate wrote {m}"
    assert v.verify(task, honest).verdict == "pass"


def test_secrets_are_out_of_sight(setup, tmp_path, monkeypatch):
    v, task, _ = setup
    cand = attack(
        in_forward=f"""
        import os, json
        found = {{}}
        for p in ("/etc/shadow", "/etc/passwd", {str(ROOT / "pyproject.toml")!r}):
            try:
                found[p] = open(p).read()[:60]
            except OSError as e:
                found[p] = "denied"
        for d in ("/root", "/home", {os.path.expanduser("~")!r}, {str(tmp_path)!r}):
            try:
                found[d] = sorted(os.listdir(d))[:5]
            except OSError:
                found[d] = "denied"
        found["env"] = sorted(k for k in os.environ if "SECRET" in k)
        raise RuntimeError("SEEN" + __import__("base64").b64encode(json.dumps(found).encode()).decode())
        """
    )
    (tmp_path / "id_rsa").write_text("PRIVATE KEY")
    r = judge_without_lint(v, task, cand)
    got = seen(r)
    assert "root:" not in got["/etc/shadow"]
    assert got["/etc/passwd"].startswith("autotriton:") and got["/etc/passwd"].count("\n") == 1
    for d in ("/root", "/home", os.path.expanduser("~")):
        # Only what holds Python itself is bound back into a hidden folder.
        python = {Path(p).relative_to(d).parts[0] for p in (sys.prefix, sys.base_prefix, *sys.path)
                  if p.startswith(d + "/")}
        assert got[d] == "denied" or set(got[d]) <= python, (d, got[d])
    assert got[str(tmp_path)] in ([], "denied")
    assert "PRIVATE KEY" not in json.dumps(r.to_dict())


def test_no_secret_environment_reaches_a_worker(corpus, monkeypatch):
    monkeypatch.setenv("MY_API_SECRET_TOKEN", "hunter2")
    task = Task.from_file(corpus / "add_relu" / "task.py")
    cand = attack(
        in_forward="""
        import os, json
        raise RuntimeError("SEEN" + __import__("base64").b64encode(json.dumps({"env": sorted(os.environ)}).encode()).decode())
        """
    )
    with Verifier(VerifyOptions(device="cpu", seed=1, timeout=30, timing=False)) as v:
        r = judge_without_lint(v, task, cand)
    env = seen(r)["env"]
    assert "MY_API_SECRET_TOKEN" not in env and env  # an environment, but not the user's secrets


def test_no_network(setup):
    v, task, honest = setup
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.setblocking(False)
    port = server.getsockname()[1]
    cand = attack(
        in_forward=f"""
        import socket, json
        results = []
        for host in ("127.0.0.1", "localhost"):
            try:
                s = socket.create_connection((host, {port}), timeout=2)
                results.append("connected")
                s.close()
            except OSError as e:
                results.append(type(e).__name__)
        raise RuntimeError("SEEN" + __import__("base64").b64encode(json.dumps({{"r": results}}).encode()).decode())
        """
    )
    r = judge_without_lint(v, task, cand)
    assert "connected" not in seen(r)["r"]
    with pytest.raises(BlockingIOError):
        server.accept()  # nothing ever connected
    server.close()


def test_forged_verdict_and_killing_everything_in_sight_change_nothing(corpus, tmp_path):
    """The CLI's stdout and exit status stay the judge's, whatever the candidate writes or kills."""
    cand = tmp_path / "cand.py"
    cand.write_text(
        attack(
            at_import="""
            import os, signal
            for pid in os.listdir("/proc"):
                if pid.isdigit() and int(pid) != os.getpid():
                    for fd in ("1", "2"):
                        try:
                            with open(f"/proc/{pid}/fd/{fd}", "w") as f:
                                f.write('{"verdict": "pass", "reasons": []}\\n')
                        except OSError:
                            pass
            for pid in os.listdir("/proc"):
                if pid.isdigit() and int(pid) != os.getpid():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except OSError:
                        pass
            os.kill(os.getppid(), signal.SIGKILL)
            raise SystemExit(0)
            """
        ).source
    )
    out = subprocess.run(
        [sys.executable, "-m", "autotriton_jupyter", "verify", str(corpus / "add_relu" / "task.py"),
         str(cand), "--json", "--device", "cpu", "--no-timing", "-q"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert out.returncode == 1, out.stderr
    lines = [x for x in out.stdout.splitlines() if x.strip()]
    assert len(lines) == 1
    report = json.loads(lines[0])
    assert report["verdict"] == "fail" and report["sandboxed"] is True


def test_honest_candidates_keep_their_verdict_beside_a_killer(setup):
    v, task, honest = setup
    killer = attack(
        at_import="""
        import os, signal
        for pid in os.listdir("/proc"):
            if pid.isdigit() and int(pid) != os.getpid():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
        """
    )
    reports = v.verify_many(task, [honest, killer, honest, killer, honest])
    assert [reports[i].verdict for i in (0, 2, 4)] == ["pass"] * 3


def test_a_dead_fork_server_is_restarted_and_its_candidates_judged_again(corpus):
    task = Task.from_file(corpus / "add_relu" / "task.py")
    honest = Candidate.from_file(corpus / "add_relu" / "pass_masked.py")
    events = []
    with Verifier(VerifyOptions(device="cpu", seed=2, timeout=30, timing=False), on_event=events.append) as v:
        assert v.verify(task, honest).verdict == "pass"
        server = v.pool._server
        os.killpg(server._popen.pid, signal.SIGKILL)  # the reference worker and spares die with it
        server._popen.wait(10)
        r = v.verify(task, honest)
        assert r.verdict == "pass", r.reasons
        assert v.pool.restarts == 1


def test_nothing_outlives_a_worker(setup):
    v, task, honest = setup
    tag = f"9{uuid.uuid4().int % 10**8}"
    cand = attack(
        at_import=f"""
        import os
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "{tag}"])
            os._exit(0)
        for _ in range(20):
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "{tag}"])
        """
    )
    r = judge_without_lint(v, task, cand)
    # Every one of them was sent SIGKILL before its verdict came back (the pool waits for
    # the worker's own end later, on a thread): dying at once, gone a moment after, the
    # pool still open.
    from autotriton_jupyter.verify.confine import doomed

    assert all(doomed(p) for p in _pids_with(f"sleep\x00{tag}")), r.reasons
    deadline = time.monotonic() + 2.0
    while _pids_with(f"sleep\x00{tag}") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _pids_with(f"sleep\x00{tag}") == [], r.reasons


def test_a_fork_bomb_is_stopped(setup):
    v, task, honest = setup
    cand = attack(
        at_import="""
        import os, time
        for _ in range(400):
            try:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
            except OSError:
                break
        time.sleep(60)
        """
    )
    t0 = time.monotonic()
    r = judge_without_lint(v, task, cand)
    assert r.verdict == "fail"
    assert {c.name for c in r.failed()} & {"processes", "load"}, r.reasons
    assert time.monotonic() - t0 < 25  # stopped at the limit, not at the 30 s timeout
    assert v.verify(task, honest).verdict == "pass"


def test_candidates_cannot_see_or_poison_each_others_scratch_and_caches(setup):
    v, task, _ = setup
    tag = uuid.uuid4().hex
    writer = attack(
        at_import=f"""
        import os
        for d in (os.environ["TRITON_CACHE_DIR"], os.environ["TMPDIR"], "/tmp", "/dev/shm",
                  os.environ["TORCHINDUCTOR_CACHE_DIR"]):
            try:
                os.makedirs(d, exist_ok=True)
                open(os.path.join(d, "{tag}"), "w").write("poison")
            except OSError:
                pass
        """
    )
    reader = attack(
        in_forward=f"""
        import os, json
        hits = []
        for root in ("/tmp", "/dev/shm"):
            for dirpath, dirs, files in os.walk(root):
                if "{tag}" in files:
                    hits.append(dirpath)
        others = []
        me = os.readlink("/proc/self")  # this worker's number in the sandbox's /proc
        for pid in os.listdir("/proc"):
            if pid.isdigit() and pid != me:
                try:
                    fds = ["fd/" + n for n in os.listdir(f"/proc/{{pid}}/fd")]
                except OSError:
                    fds = ["fd/0", "fd/1", "fd/2", "fd/3"]
                for what in ["mem", "environ", *fds]:
                    try:
                        with open(f"/proc/{{pid}}/{{what}}", "rb") as f:
                            f.read(1)
                        others.append(pid + "/" + what)
                    except OSError:
                        pass
        raise RuntimeError("SEEN" + __import__("base64").b64encode(json.dumps({{"hits": hits, "others": others}}).encode()).decode())
        """
    )
    judge_without_lint(v, task, writer)
    got = seen(judge_without_lint(v, task, reader))
    assert got["hits"] == []
    assert got["others"] == []


def test_missing_bubblewrap_is_refused_with_a_way_out(corpus, monkeypatch):
    from autotriton_jupyter.verify import bwrap

    bwrap.check.cache_clear()
    monkeypatch.setenv("AUTOTRITON_BWRAP", "/nonexistent/bwrap")
    try:
        with pytest.raises(SandboxUnavailable) as e:
            Verifier(VerifyOptions(device="cpu"))
        assert "bubblewrap" in str(e.value) and "--no-sandbox" in str(e.value)
        out = subprocess.run(
            [sys.executable, "-m", "autotriton_jupyter", "verify",
             str(corpus / "add_relu" / "task.py"), str(corpus / "add_relu" / "pass_masked.py"),
             "--device", "cpu", "--no-timing", "-q"],
            capture_output=True, text=True, timeout=300, cwd=ROOT,
            env={**os.environ, "AUTOTRITON_BWRAP": "/nonexistent/bwrap"},
        )
        assert out.returncode == 2 and "bubblewrap" in out.stderr and "Traceback" not in out.stderr
        # The user's opt-out works, and the report says so.
        with Verifier(VerifyOptions(device="cpu", sandbox=False, timing=False, seed=3)) as v:
            r = v.verify(Task.from_file(corpus / "add_relu" / "task.py"),
                         Candidate.from_file(corpus / "add_relu" / "pass_masked.py"))
        assert r.verdict == "pass" and r.sandboxed is False
    finally:
        bwrap.check.cache_clear()


def test_three_verifiers_at_once_give_the_verdicts_of_one(corpus):
    task = corpus / "add_relu" / "task.py"
    cands = {"pass_masked": 0, "fail_sub": 1, "cheat02_partial": 1}
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "autotriton_jupyter", "verify", str(task),
             str(corpus / "add_relu" / f"{name}.py"), "--device", "cpu", "--no-timing", "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        )
        for name in cands
    }
    for name, p in procs.items():
        _, err = p.communicate(timeout=300)
        assert p.returncode == cands[name], (name, err)


def _descendants(root: int) -> set[int]:
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    raw = f.read()
                parents[int(name)] = int(raw[raw.rfind(b")") + 2 :].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    out, todo = set(), [root]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out.update(kids)
        todo.extend(kids)
    return out


def test_a_judge_killed_by_a_signal_leaves_nothing_running(corpus, tmp_path):
    hang = tmp_path / "hang.py"
    # A hang the lint lets through (a lint failure would be judged without any worker).
    hang.write_text(attack(in_forward="n = 0\nwhile n >= 0:\n    n = n + 1").source)
    judge = subprocess.Popen(
        [sys.executable, "-m", "autotriton_jupyter", "verify", str(corpus / "add_relu" / "task.py"),
         str(hang), "--device", "cpu", "--no-timing", "-q", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT,
    )
    deadline = time.monotonic() + 120
    sandbox: set[int] = set()
    while time.monotonic() < deadline and len(sandbox) < 4:  # bwrap, its init, the server, a worker
        sandbox = _descendants(judge.pid)
        time.sleep(0.2)
    assert len(sandbox) >= 4, sandbox
    judge.kill()
    out, _ = judge.communicate(timeout=30)
    assert out == b""  # no verdict at all, so nothing says pass
    def running(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            return False
        return raw[raw.rfind(b")") + 2 :].split()[0] != b"Z"  # a zombie has ended

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(running(p) for p in sandbox):
        time.sleep(0.2)
    left = [p for p in sandbox if running(p)]
    assert left == [], left


def test_the_config_file_can_switch_the_sandbox_off(tmp_path, monkeypatch):
    from autotriton_jupyter.config import load

    cfg = tmp_path / "config.toml"
    cfg.write_text("[verify]\nsandbox = false\n")
    monkeypatch.setenv("AUTOTRITON_CONFIG", str(cfg))
    assert load("verify", VerifyOptions()).sandbox is False
    cfg.write_text("")
    assert load("verify", VerifyOptions()).sandbox is True
    from autotriton_jupyter.config import ConfigError

    for bad in ("[]", "2", '"maybe"', "0.0"):  # never read as truthy or falsy
        cfg.write_text(f"[verify]\nsandbox = {bad}\n")
        with pytest.raises(ConfigError, match="expected true or false"):
            load("verify", VerifyOptions())


def test_the_fork_server_imports_what_the_judge_imports(tmp_path, monkeypatch):
    """torch found through PYTHONPATH or a user site must be found in the sandbox too."""
    from autotriton_jupyter.verify import bwrap

    monkeypatch.syspath_prepend(str(tmp_path))  # sys.path[0] stays the script's folder
    monkeypatch.setattr(sys, "path", [sys.path[1], sys.path[0], *sys.path[2:]])
    entries = bwrap.python_path().split(os.pathsep)
    assert entries[0] == bwrap.package_parent()
    assert str(tmp_path) in entries


def _keyctl(*args: int) -> int:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(ctypes.c_long(250), *[ctypes.c_long(a) for a in args])


def test_white_box_escapes_are_closed(setup, tmp_path, monkeypatch):
    """What a white-box review got through once: each must now be refused by the kernel."""
    import ctypes

    v, task, honest = setup
    secret = ROOT / ".probe-secret"
    secret.write_text("ROOT ONLY")
    secret.chmod(0o600)
    sock_path = f"/run/autotriton-test-{uuid.uuid4().hex[:8]}.sock"
    server = None
    try:
        server = socket.socket(socket.AF_UNIX)
        server.bind(sock_path)
        server.listen(1)
        server.setblocking(False)
    except OSError:
        server, sock_path = None, ""
    # A secret in the judge's session keyring.
    libc = ctypes.CDLL(None, use_errno=True)
    key = libc.syscall(ctypes.c_long(248), b"user", b"autotriton-test", b"SECRET-KEY", ctypes.c_long(10), ctypes.c_long(-3))
    probe = attack(
        in_forward=f"""
        import os, json, socket, ctypes
        got = {{}}
        def attempt(name, fn):
            try:
                fn()
                got[name] = "done"
            except OSError as e:
                got[name] = type(e).__name__
        attempt("sysctl", lambda: open("/proc/sys/kernel/printk_ratelimit", "w").write(open("/proc/sys/kernel/printk_ratelimit").read()))
        attempt("secret", lambda: open({str(secret)!r}).read())
        if {sock_path!r}:
            attempt("host_socket", lambda: socket.socket(socket.AF_UNIX).connect({sock_path!r}))
        for d in ("/root", "/home", "/var/tmp", "/var/lib", "/dev", "/tmp", "/run"):
            attempt("write " + d, lambda d=d: open(os.path.join(d, "planted"), "w").write("x"))
        attempt("fallocate log", lambda: os.posix_fallocate(1, 0, 1 << 30))
        me = os.readlink("/proc/self")
        for pid in os.listdir("/proc"):
            if pid.isdigit() and pid != me:
                attempt("oom " + pid, lambda pid=pid: open(f"/proc/{{pid}}/oom_score_adj", "w").write("1000"))
        libc = ctypes.CDLL(None, use_errno=True)
        found = libc.syscall(ctypes.c_long(250), ctypes.c_long(10), ctypes.c_long(-3), b"user", b"autotriton-test", ctypes.c_long(0))
        got["keyring"] = "found" if found > 0 else "none"
        got["ids"] = [os.getuid(), os.getgid(), os.getgroups()]
        raise RuntimeError("SEEN" + __import__("base64").b64encode(json.dumps(got).encode()).decode())
        """
    )
    connected = False
    try:
        got = seen(judge_without_lint(v, task, probe))
    finally:
        secret.unlink()
        if server is not None:
            try:
                server.accept()
                connected = True
            except BlockingIOError:
                pass
            server.close()
            os.unlink(sock_path)
        if key > 0:
            _keyctl(3, key)  # KEYCTL_REVOKE
    done = {k for k, val in got.items() if val == "done"}
    assert done == set(), done
    assert got["keyring"] == "none"
    if os.geteuid() == 0:
        assert got["ids"] == [0, 0, []]  # root inside its namespace, nobody outside, no groups
    assert not connected


def test_memory_in_memory_files_and_deep_fork_trees_is_limited_by_the_kernel(corpus):
    """Memory the fork server's watch cannot see (a memory file) and forks faster than it looks."""
    from autotriton_jupyter.verify.cgroups import Limits

    probe = Limits("probe")
    if not probe.available:
        pytest.skip("control groups cannot be created here (not root, or none writable)")
    probe.close()
    task = Task.from_file(corpus / "add_relu" / "task.py")
    memfd = attack(
        at_import="""
        import os
        fd = os.memfd_create("hoard")
        block = b"x" * (1 << 24)
        for _ in range(128):  # 2 GiB, never mapped, so never resident
            os.write(fd, block)
        """
    )
    tree = attack(
        at_import="""
        import os, time
        for _ in range(14):  # a tree 14 forks deep: 16384 processes if nothing stops it
            try:
                os.fork()
            except OSError:
                break
        time.sleep(30)
        """
    )
    opts = VerifyOptions(device="cpu", seed=6, timeout=60, timing=False, memory_limit_gb=0.75)
    with Verifier(opts) as v:
        r = judge_without_lint(v, task, memfd)
        assert {c.name for c in r.failed()} & {"memory"}, r.reasons
        t0 = time.monotonic()
        r = judge_without_lint(v, task, tree)
        assert r.verdict == "fail" and time.monotonic() - t0 < 40, r.reasons
        assert v.verify(task, Candidate.from_file(corpus / "add_relu" / "pass_masked.py")).verdict == "pass"
