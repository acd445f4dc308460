"""On a GPU: a kernel that keeps its outputs by input value cannot fake its speed.

The cheat below reads a signature of its input on the device, and when it has seen that
signature before it copies the output it kept instead of multiplying: right outputs,
and, where timing reuses a few input sets, the time of a copy. Timing varies every
call's inputs (verify/vary.py), so the cheat has to multiply on every timed call.
"""

from __future__ import annotations

import random

import torch

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions, timing, vary

TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(2048, 2048), torch.randn(2048, 2048)]


def get_init_inputs():
    return []
"""

CHEAT = """
import torch
import torch.nn as nn
import triton
import triton.language as tl

SLOTS = 4


@triton.jit
def _signature(a_ptr):
    i = tl.arange(0, 64)
    return tl.sum(tl.load(a_ptr + i) * (i + 1.0), 0)


@triton.jit
def _tile(a_ptr, b_ptr, om, on, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        ok = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + om[:, None] * K + ok[None, :], mask=(om[:, None] < M) & (ok[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ok[:, None] * N + on[None, :], mask=(ok[:, None] < K) & (on[None, :] < N), other=0.0)
        acc += tl.dot(a, b, allow_tf32=False)  # float32 as torch's matmul: no TF32
    return acc


@triton.jit
def matmul_or_copy(a_ptr, b_ptr, c_ptr, sig_ptr, cache_ptr, slot_ptr, M, N, K,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, CACHE: tl.constexpr):
    om = tl.program_id(0) * BM + tl.arange(0, BM)
    on = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (om[:, None] < M) & (on[None, :] < N)
    where = om[:, None] * N + on[None, :]
    if CACHE:
        seen = (tl.load(sig_ptr + tl.arange(0, 4)) == _signature(a_ptr)).to(tl.int32)
        if tl.max(seen, 0) > 0:
            tile = tl.load(cache_ptr + tl.argmax(seen, 0) * M * N + where, mask=mask)
            tl.store(c_ptr + where, tile, mask=mask)
        else:
            acc = _tile(a_ptr, b_ptr, om, on, M, N, K, BM, BN, BK)
            tl.store(c_ptr + where, acc, mask=mask)
            tl.store(cache_ptr + tl.load(slot_ptr) * M * N + where, acc, mask=mask)
    else:
        tl.store(c_ptr + where, _tile(a_ptr, b_ptr, om, on, M, N, K, BM, BN, BK), mask=mask)


@triton.jit
def remember(a_ptr, sig_ptr, slot_ptr):
    sig = _signature(a_ptr)
    seen = (tl.load(sig_ptr + tl.arange(0, 4)) == sig).to(tl.int32)
    if tl.max(seen, 0) == 0:
        slot = tl.load(slot_ptr)
        tl.store(sig_ptr + slot, sig)
        tl.store(slot_ptr, (slot + 1) % 4)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("sig", torch.full((SLOTS,), float("nan")), persistent=False)
        self.register_buffer("cache", torch.empty(SLOTS * 2048 * 2048), persistent=False)
        self.register_buffer("slot", torch.zeros(1, dtype=torch.int32), persistent=False)

    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        matmul_or_copy[grid](a, b, c, self.sig, self.cache, self.slot, M, N, K,
                             BM=64, BN=64, BK=32, CACHE=CACHE_ON)
        if CACHE_ON:
            remember[(1,)](a, self.sig, self.slot)
        return c
"""


def _cheat(cache: bool) -> str:
    return CHEAT.replace("CACHE_ON", str(cache))


def test_the_cheat_is_fast_on_inputs_it_has_seen(tmp_path):
    """The premise: called twice on the same values, the cheat copies the second time."""
    import importlib.util

    path = tmp_path / "cheat.py"  # Triton reads a kernel's source from its file
    path.write_text(_cheat(True))
    spec = importlib.util.spec_from_file_location("cheat", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.ModelNew().cuda()
    a, b = torch.randn(2048, 2048, device="cuda"), torch.randn(2048, 2048, device="cuda")
    ms = []
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = model(a, b)
        end.record()
        torch.cuda.synchronize()
        ms.append(start.elapsed_time(end))
    torch.testing.assert_close(out, a @ b, rtol=1e-2, atol=1e-1)
    print("cheat on the same inputs, ms:", ms)
    assert ms[2] < ms[1] / 3 or ms[2] < ms[0] / 3  # a copy, not a multiplication


def test_timing_makes_the_cheat_multiply_on_every_call():
    task = Task.from_source(TASK, "matmul_2048")
    with Verifier(VerifyOptions(device="cuda", seed=7)) as v:
        honest = v.verify(task, Candidate(_cheat(False), "honest"))
        cheat = v.verify(task, Candidate(_cheat(True), "cheat"))
    for r in (honest, cheat):
        print(r.candidate, r.verdict, r.reasons, r.timing and {k: r.timing[k] for k in ("candidate_ms", "candidate_b2b_ms")})
    assert honest.verdict == "pass", honest.reasons
    assert cheat.verdict == "pass", cheat.reasons  # right outputs: it is only the figure
    # The cheat multiplies too (and keeps a copy): never faster than the honest kernel.
    assert cheat.timing["candidate_ms"] > 0.8 * honest.timing["candidate_ms"]
    assert cheat.timing["candidate_b2b_ms"] > 0.8 * honest.timing["candidate_b2b_ms"]


def test_the_reference_remakes_a_timed_calls_inputs_exactly():
    sets = [[torch.randn(300, 257, device="cuda"), torch.ones(5, device="cuda")] for _ in range(2)]
    buffers = [x.clone() for x in sets[0]]
    seen = []

    def record(x, y):
        seen.append(x.clone())
        return x * 2

    seed = 12345
    r = timing.bench(record, buffers, sets, rng=random.Random(3), keep=2, back_to_back=True,
                     vary=vary.Variation(seed, sets))
    for position, call, out in r["kept"]:
        again = vary.varied_copy(sets[position], vary.Variation(seed, sets), position, call)
        assert torch.equal(out, again[0] * 2)
        assert torch.equal(again[1], sets[position][1])  # whole numbers: left alone
    assert len({t.sum().item() for t in seen}) == len(seen)  # no two calls saw the same values


ADD_RELU = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)


def get_inputs():
    return [torch.randn(2048, 4099), torch.randn(2048, 4099)]


def get_init_inputs():
    return []
"""

SKIPPER = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu_or_skip(x_ptr, y_ptr, out_ptr, count_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = tl.load(count_ptr)
    if (c > 100) & (c % 4 != 0):  # past the calls the judge checks in full: skip most
        tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=mask)
    else:
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)


@triton.jit
def bump(count_ptr):
    tl.store(count_ptr, tl.load(count_ptr) + 1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1, dtype=torch.int64), persistent=False)

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_relu_or_skip[(triton.cdiv(n, 1024),)](x, y, out, self.count, n, BLOCK=1024)
        bump[(1,)](self.count)
        return out
"""


def test_a_kernel_that_skips_work_on_most_timed_calls_fails(monkeypatch):
    """Only a few timed outputs are kept whole; the projections of 16 more, drawn after the
    timing, catch a kernel that returns zeros on most timed calls. The late calls before
    timing are held at their fewest (48, an unpredictable 48 to 600 otherwise), so the
    cheat's hundred honest calls end inside the timed ones."""
    from autotriton_jupyter.verify import judge

    monkeypatch.setattr(judge, "_late_calls", lambda: 48)
    task = Task.from_source(ADD_RELU, "add_relu_2048")
    with Verifier(VerifyOptions(device="cuda", seed=8)) as v:
        r = v.verify(task, Candidate(SKIPPER, "skipper"))
    print(r.verdict, r.reasons)
    assert r.verdict == "fail"
    assert any(x["check"] == "timed_outputs" for x in r.reasons), r.reasons
