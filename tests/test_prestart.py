"""A fork server started before torch is imported (verify/prestart.py) is the one the next
Verifier uses, sandboxed as before; one nobody uses ends with its folder."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions, prestart

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="the sandbox is Linux namespaces and bubblewrap"
)


@pytest.fixture(autouse=True)
def _nothing_held():
    yield
    got = prestart.take(True) or prestart.take(False)
    if got is not None:
        prestart.discard(got[1], got[0])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_a_verifier_uses_the_fork_server_started_early(corpus):
    prestart.launch(True)
    folder, launched = prestart._early
    pid = launched.popen.pid
    task = Task.from_file(corpus / "add_relu" / "task.py")
    honest = Candidate.from_file(corpus / "add_relu" / "pass_masked.py")
    with Verifier(VerifyOptions(device="cpu", seed=3, timeout=60, timing=False, parallel=1)) as v:
        assert prestart._early is None  # taken
        assert v.pool.workdir == Path(folder.name)
        r = v.verify(task, honest)
        assert r.verdict == "pass", r.reasons
        assert r.sandboxed
        assert v.pool._server._popen.pid == pid  # no second fork server was started
        assert v.pool.restarts == 0
    assert not Path(folder.name).exists()
    launched.popen.wait(10)


def test_a_setting_that_differs_ends_the_early_one(corpus):
    prestart.launch(True)
    folder, launched = prestart._early
    assert prestart.take(False) is None  # --no-sandbox asked for: not this one
    launched.popen.wait(10)
    assert not _alive(launched.popen.pid) and not Path(folder.name).exists()


def test_an_early_server_a_pool_never_used_ends_with_the_pool():
    prestart.launch(True)
    folder, launched = prestart._early
    v = Verifier(VerifyOptions(device="cpu", timeout=60, timing=False, parallel=1))
    v.close()  # closed before any worker was asked for
    launched.popen.wait(10)
    assert not Path(folder.name).exists()


def test_a_launch_that_cannot_start_leaves_nothing_behind(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOTRITON_BWRAP", str(tmp_path / "no-such-bwrap"))
    made = []
    real = prestart.scratch_dir
    monkeypatch.setattr(prestart, "scratch_dir", lambda: made.append(real()) or made[-1])
    prestart.launch(True)
    assert prestart._early is None
    assert len(made) == 1 and not Path(made[0].name).exists()  # its folder was removed


def test_a_server_whose_sandbox_would_now_differ_is_not_used(monkeypatch):
    """Its workers would get an environment (or device files) from before: a variable
    set after the launch must reach the workers of the server the Verifier uses."""
    prestart.launch(True)
    folder, launched = prestart._early
    monkeypatch.setenv("TRITON_PRESTART_MARK", "1")
    assert prestart.take(True) is None
    launched.popen.wait(10)
    assert not Path(folder.name).exists()


def test_a_verifier_that_cannot_be_built_leaves_no_server(capsys):
    from autotriton_jupyter.cli import main

    code = main(["verify", str(ROOT / "examples/tasks/add_relu.py"),
                 str(ROOT / "examples/candidates/add_relu/pass_masked.py"),
                 "--local", "--device", "cuda", "-q"])
    assert code != 0 and "cuda" in capsys.readouterr().err.lower()
    assert prestart._early is None


def _verify_with(patch: str, tmp_path) -> subprocess.CompletedProcess:
    """A one-shot `autotriton verify --local` of the honest add_relu kernel, in a fresh
    process, with `patch` (code that replaces prestart's functions) run first."""
    probe = textwrap.dedent(patch) + textwrap.dedent(
        f"""
        from autotriton_jupyter.cli import main
        sys.exit(main(["verify", "{ROOT}/examples/tasks/add_relu.py",
                       "{ROOT}/examples/candidates/add_relu/pass_masked.py",
                       "--local", "--no-timing", "-q"]))
        """
    )
    return subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "AUTOTRITON_CACHE": str(tmp_path)},
    )


def test_the_cli_starts_it_before_importing_torch(tmp_path):
    """`autotriton verify` without a service: the fork server is launched while torch is
    not imported yet (so their starts overlap), its Verifier's pool takes it, and the
    verdict is the usual one."""
    out = _verify_with(
        """
        import sys
        from autotriton_jupyter.verify import prestart
        real, real_take = prestart.launch, prestart.take
        def take(sandboxed):
            got = real_take(sandboxed)
            print("taken by the pool:", got is not None, file=sys.stderr)
            return got
        def launch(sandboxed):
            print("torch imported at launch:", "torch" in sys.modules, file=sys.stderr)
            real(sandboxed)
            import autotriton_jupyter.verify.sandbox as sandbox  # imports torch: after
            sandbox.take = take
        prestart.launch = launch
        """,
        tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "torch imported at launch: False" in out.stderr
    assert "taken by the pool: True" in out.stderr


def test_ctrl_c_while_torch_is_imported_ends_the_early_server(tmp_path):
    """An interrupt that lands between the launch and the end of the judge's imports waits
    for them, then unwinds: exit 130, the early server and its folder gone."""
    out = _verify_with(
        """
        import os, signal, sys
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
        from autotriton_jupyter.verify import prestart
        real = prestart.launch
        def launch(sandboxed):
            real(sandboxed)
            print("folder:", prestart._early[0].name, "pid:", prestart._early[1].popen.pid,
                  file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGINT)  # as if Ctrl-C came during the imports
        prestart.launch = launch
        """,
        tmp_path,
    )
    assert out.returncode == 130, out.stderr[-2000:]
    folder = out.stderr.split("folder: ")[1].split()[0]
    pid = int(out.stderr.split("pid: ")[1].split()[0])
    assert not Path(folder).exists()
    assert not _alive(pid)


def _dynamo_preloaded(sandboxed: bool) -> bool:
    from autotriton_jupyter.verify.sandbox import Pool

    pool = Pool("cpu", spares=0, sandbox=sandboxed)
    try:
        return pool.acquire().wait_ready(120)["dynamo_preloaded"]
    finally:
        pool.close()


def test_a_cpu_pools_server_imports_torch_dynamo_once_for_all_its_workers(monkeypatch):
    """Not again in each worker (seconds of the same few cores). On a machine with GPU
    device files, a CPU pool tells its server to (that server forks only CPU workers)."""
    from autotriton_jupyter.verify import bwrap

    monkeypatch.setattr(bwrap, "device_nodes", lambda: ["/dev/nvidiactl"])  # no sandbox: not bound
    assert _dynamo_preloaded(sandboxed=False)


@pytest.mark.skipif(bool(prestart.bwrap.device_nodes()), reason="this machine has GPU device files")
def test_a_server_started_where_no_gpu_can_be_imports_it_untold(monkeypatch):
    from autotriton_jupyter.verify import sandbox

    monkeypatch.setattr(sandbox._Server, "preload", lambda self: None)
    assert _dynamo_preloaded(sandboxed=True)


@pytest.mark.parametrize("nodes, preload", [([], True), (["/dev/nvidiactl", "/dev/nvidia0"], False)])
def test_an_early_server_preloads_only_where_no_gpu_worker_can_be(tmp_path, nodes, preload):
    """A server that may fork GPU workers never imports more than the workers need: a
    CUDA start in it would leave every GPU worker it forks without a working GPU."""
    launched = prestart.Launched.__new__(prestart.Launched)
    launched.workdir, launched.sandboxed, launched.made_of = tmp_path, True, ({}, nodes)
    assert ("preload" in launched._argv(5)) is preload


def test_scratch_folders_of_killed_processes_are_swept_and_no_other(tmp_path, monkeypatch):
    """A pool's folder names its process; one whose process ended without removing it
    (killed) goes when the next pool starts. A live process's folder, one without an owner
    file, one whose owner another machine or pid namespace saw, a link and another
    program's folder are left; one whose pid another process now has goes."""
    gone = subprocess.Popen(["sleep", "30"])
    said = prestart._owner(gone.pid, prestart._here())
    gone.kill()
    gone.wait()
    live = subprocess.Popen(["sleep", "30"])
    assert said is not None
    pid, start, here = said.split()
    try:
        folders = {}
        for name, owner in [
            ("dead", said),
            ("mine", prestart._owner(os.getpid(), prestart._here())),
            ("live", prestart._owner(live.pid, prestart._here())),
            ("reused", f"{os.getpid()} 1 {here}"),  # our pid, another start time
            ("elsewhere", f"{pid} {start} another-boot/pid:[1]/{here.rsplit('/', 1)[1]}"),
            ("old-format", f"{pid} {start}"),
            ("unnamed", None),
        ]:
            d = tmp_path / f"{prestart.SCRATCH_PREFIX}{name}"
            d.mkdir()
            (d / "forkserver.log").write_text("")
            if owner is not None:
                (d / "owner").write_text(owner)
            folders[name] = d
        (tmp_path / "other-dead").mkdir()
        (tmp_path / "other-dead" / "owner").write_text(said)
        (tmp_path / f"{prestart.SCRATCH_PREFIX}link").symlink_to(folders["dead"])
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        made = prestart.scratch_dir()  # sweeps first
        try:
            assert Path(made.name).parent == tmp_path
            assert (Path(made.name) / "owner").read_text() == prestart._owner(os.getpid(), prestart._here())
        finally:
            made.cleanup()
        left = {n for n, d in folders.items() if d.exists()}
        assert left == {"mine", "live", "elsewhere", "old-format", "unnamed"}, left
        assert (tmp_path / "other-dead").exists()
        assert (tmp_path / f"{prestart.SCRATCH_PREFIX}link").is_symlink()
    finally:
        live.kill()
        live.wait()
