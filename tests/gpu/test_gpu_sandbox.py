"""On a real GPU: sandboxed workers reach the device, contain attacks, and concurrent verifiers agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions
from tests.test_judge_robustness import judge_without_lint
from tests.test_sandbox import attack

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"

AUTOTUNED = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


def configs():
    return [triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 1024) for w in (2, 4)]


@triton.autotune(configs=configs(), key=["n"])
@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_relu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
        return out
'''


def test_sandboxed_gpu_worker_passes_and_is_timed():
    task = Task.from_file(CORPUS / "add_relu" / "task.py")
    with Verifier(VerifyOptions(device="cuda", seed=1)) as v:
        r = v.verify(task, Candidate.from_file(CORPUS / "add_relu" / "pass_masked.py"))
    assert r.verdict == "pass", r.reasons
    assert r.sandboxed and r.timing and r.timing["candidate_ms"] > 0
    # The timing's own breakdown, from the worker's clock (figures only).
    phases = {k: r.seconds.get(f"timing_{k}", -1) for k in ("warmup", "single", "b2b", "prints", "after")}
    assert all(x >= 0 for x in phases.values()), phases
    assert phases["single"] > 0 and phases["b2b"] > 0


def test_a_warm_spares_first_triton_launch_was_made_ready_before_the_candidate():
    """tritonwarm.py: the spare compiled and loaded our kernel while it waited, so the
    candidate's first call built no driver module (its file predates the call)."""
    import time

    task = Task.from_file(CORPUS / "add_relu" / "task.py")
    with Verifier(VerifyOptions(device="cuda", seed=1, timing=False, parallel=1)) as v:
        v.prepare(task)
        v.pool.warm()
        time.sleep(10)  # a spare that waited: its warm-up is over
        r = v.verify(task, Candidate.from_file(CORPUS / "add_relu" / "pass_masked.py"))
    assert r.verdict == "pass", r.reasons
    print("seconds:", {k: round(x, 3) for k, x in r.seconds.items()})
    assert r.seconds.get("worker_triton_warm_up", 0) > 0
    assert "runs_first_call_driver_ready" not in r.seconds
    assert r.seconds.get("runs_first_call_kernel_ready", 0) > 0  # its own kernel still compiles


def test_importing_dynamo_touches_no_cuda():
    """What lets a kernel session's GPU fork server import torch._dynamo before it forks the
    candidates' workers: the import opens none of the driver's devices."""
    probe = (
        "import os, torch, torch._dynamo\n"
        "fds = []\n"
        "for f in os.listdir('/proc/self/fd'):\n"
        "    try:\n"
        "        fds.append(os.readlink(f'/proc/self/fd/{f}'))\n"
        "    except OSError:\n"
        "        pass  # the listing's own descriptor, closed by now\n"
        "print(torch.cuda.is_initialized(), any('nvidia' in f for f in fds))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "False"], out.stdout + out.stderr


def test_a_triton_seed_is_made_by_a_child_and_spares_a_worker_every_build():
    """tritonwarm.Seed: the process that makes it (a fork server) never initializes CUDA;
    what the child built is all a worker's warm-up needs (it compiles nothing: the
    kernel is found through its group file, which plant points at the worker's copy)."""
    probe = (
        "import ctypes, json, os, tempfile\n"
        "from autotriton_jupyter.verify import tritonwarm\n"
        "files = tritonwarm.Seed().files()\n"
        "n = ctypes.c_int()\n"
        "rc = ctypes.CDLL('libcuda.so.1').cuDeviceGetCount(ctypes.byref(n))\n"
        "cache = tempfile.mkdtemp()\n"
        "tritonwarm.plant(files, cache)\n"
        "def stats():\n"
        "    return sorted((os.path.relpath(os.path.join(d, f), cache), os.stat(os.path.join(d, f)).st_ino)\n"
        "                  for d, _, fs in os.walk(cache) for f in fs)\n"
        "planted = stats()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.environ['TRITON_CACHE_DIR'] = cache\n"
        "    tritonwarm.warm_up()\n"
        "    os._exit(0)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(json.dumps({'rc': rc, 'seed': sorted(files), 'status': status,\n"
        "                  'unchanged': stats() == planted}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    print(got)
    assert got["rc"] == 3  # CUDA_ERROR_NOT_INITIALIZED: the seed's maker never started CUDA
    names = [Path(p).name for p in got["seed"]]
    assert any(n.startswith("cuda_utils") for n in names) and any(n.endswith(".cubin") for n in names)
    assert got["status"] == 0
    # The worker's warm-up found all it needed: it wrote no file, not even one again
    # (Triton writes a new file in place of an old one: a new inode).
    assert got["unchanged"]


def test_a_sessions_workers_forked_after_its_servers_dynamo_import_work():
    """session.start: the first spare (the first reference's worker) is forked before the
    server imports torch._dynamo; the candidate's, after, and it is judged and timed."""
    from autotriton_jupyter.verify import session

    task = Task.from_file(CORPUS / "add_relu" / "task.py")
    options = VerifyOptions(device="cuda", seed=1, parallel=1)
    session.close()
    session.start(options)
    try:
        v = session.get(options)
        r = v.verify(task, Candidate.from_file(CORPUS / "add_relu" / "pass_masked.py"))
        assert r.verdict == "pass", r.reasons
        assert r.timing and r.timing["candidate_ms"] > 0
        w = v.pool.acquire()
        try:
            ready = w.wait_ready(120)
            assert ready["dynamo_preloaded"]
            assert ready["triton_seeded"] > 0  # its Triton cache began with the server's seed
        finally:
            v.pool.release(w)
    finally:
        session.close()
    print("seconds:", {k: round(x, 3) for k, x in r.seconds.items()})


def test_attacks_are_contained_on_the_gpu(tmp_path):
    task = Task.from_file(CORPUS / "add_relu" / "task.py")
    mark = tmp_path / "mark"
    cand = attack(at_import=f'import os\nos.system("touch {mark}")\n')
    with Verifier(VerifyOptions(device="cuda", seed=2, timing=False)) as v:
        judge_without_lint(v, task, cand)
        assert v.verify(task, Candidate.from_file(CORPUS / "add_relu" / "pass_masked.py")).verdict == "pass"
    assert not mark.exists()


def test_three_verifiers_at_once_give_the_verdicts_of_one(tmp_path):
    """Two notebooks and an eval on one GPU: timing is serialised across processes."""
    (tmp_path / "autotuned.py").write_text(AUTOTUNED)
    cands = [CORPUS / "add_relu" / "pass_masked.py", tmp_path / "autotuned.py", CORPUS / "add_relu" / "fail_sub.py"]
    expected = ["pass", "pass", "fail"]

    def run_all() -> list[str]:
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "autotriton_jupyter", "verify", str(CORPUS / "add_relu" / "task.py"),
                 str(c), "--json", "-q", "--device", "cuda"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
            )
            for c in cands
        ]
        verdicts = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            verdicts.append(json.loads(out)["verdict"] if out.strip() else f"error: {err[-500:]}")
        return verdicts

    for _ in range(2):
        got = run_all()
        assert got == expected, got
