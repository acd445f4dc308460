"""Cached launches (launch_cache.py) on a GPU: the real compiled kernels, launched directly,
give Triton's results whatever changes between calls; and a kernel with its launches
cached passes the verifier, timed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from autotriton_jupyter import launch_cache, launches
from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions

ROOT = Path(__file__).resolve().parents[2]
SCALE = tl.constexpr(2)


@triton.jit
def scaled_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, (x + alpha * y * SCALE).to(out_ptr.dtype.element_ty), mask=mask)


def _counted(kernel):
    """Count the launches that go through Triton's own path."""
    calls = []
    original = kernel.run

    def run(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    kernel.run = run
    return calls


def test_direct_launches_match_tritons_whatever_changes_between_calls():
    k = launch_cache._autotriton_cached(scaled_add)
    assert isinstance(k, launch_cache._AutotritonCachedLaunch)
    slow = _counted(scaled_add)
    base = {dt: torch.randn(5000, device="cuda").to(dt) for dt in (torch.float32, torch.float16)}
    plan = []
    for dtype in (torch.float32, torch.float16):
        for offset in (0, 1, 4):
            for n in (1, 16, 17, 4096, 4999 - offset):
                for block in (256, 1024):
                    plan.append((dtype, offset, n, block))
    for round_ in range(2):  # the second round finds every specialisation cached
        before = len(slow)
        for dtype, offset, n, block in plan:
            x = base[dtype][offset : offset + n]
            y = torch.randn(n, device="cuda").to(dtype)
            out = torch.empty_like(x)
            k[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n, 0.5, BLOCK=block)
            want = (x.float() + 0.5 * y.float() * 2).to(dtype)
            torch.testing.assert_close(out, want, atol=1e-2, rtol=1e-2)
        if round_:
            assert len(slow) == before  # all launched directly
    assert len(k.compiled) >= 2 * 2 * 2  # dtypes x alignments x blocks at least
    k[(8,)](x, y, out, n, 0.5, BLOCK=1024, num_warps=8)  # an option: Triton's path, once
    assert len(slow) == before + 1


def test_a_changed_global_is_refused_as_triton_refuses_it(monkeypatch):
    k = launch_cache._autotriton_cached(scaled_add)
    x = torch.randn(64, device="cuda")
    out = torch.empty_like(x)
    k[(1,)](x, x, out, 64, 1.0, BLOCK=64)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", tl.constexpr(3))
    with pytest.raises(RuntimeError, match="Global variable SCALE has changed"):
        k[(1,)](x, x, out, 64, 1.0, BLOCK=64)


@pytest.mark.parametrize(
    "task, kernel",
    [
        ("examples/gpu_tasks/softmax.py", "examples/candidates/softmax/rowwise.py"),
        ("examples/gpu_tasks/add_relu.py", "examples/candidates/add_relu/pass_masked.py"),
    ],
)
def test_a_kernel_with_its_launches_cached_passes_the_verifier_timed(task, kernel):
    source = (ROOT / kernel).read_text()
    cached, names = launches.cached(source)
    with Verifier(VerifyOptions(device="cuda", trials=1, seed=11)) as v:
        got = v.verify_many(Task.from_file(ROOT / task), [Candidate(source, "as written"), Candidate(cached, "cached")])
    for r in got:
        assert r.verdict == "pass", r.failed()
        assert r.timing and r.timing.get("candidate_b2b_ms")
    t0, t1 = got[0].timing, got[1].timing
    print(
        f"{kernel}: one call {t0['candidate_ms']:.4f} -> {t1['candidate_ms']:.4f} ms, "
        f"back to back {t0['candidate_b2b_ms']:.4f} -> {t1['candidate_b2b_ms']:.4f} ms ({names})"
    )
