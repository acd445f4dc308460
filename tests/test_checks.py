"""The judge's output comparison (verify/checks.py), against a plain whole-tensor oracle."""

from __future__ import annotations

import pytest
import torch

from autotriton_jupyter.verify import checks


def _oracle(o: torch.Tensor, r: torch.Tensor, atol: float, rtol: float) -> tuple[bool, int, int]:
    """ok, the number of elements out of tolerance, and the first of them (flat), in one go."""
    o64, r64 = o.double().reshape(-1), r.double().reshape(-1)
    finite = torch.isfinite(r64)
    diff = (o64 - r64).abs()
    bad = finite & (diff > atol + rtol * r64.abs())
    n = int(bad.sum())
    return n == 0, n, int(torch.nonzero(bad)[0]) if n else -1


@pytest.fixture(params=[7, 1000, 1 << 20], ids=["chunk7", "chunk1000", "chunk1M"])
def chunk(request, monkeypatch):
    monkeypatch.setattr(checks, "_CHUNK", request.param)
    return request.param


def test_counts_and_first_index_do_not_depend_on_chunks(chunk):
    g = torch.Generator().manual_seed(0)
    r = torch.randn(37, 53, generator=g)
    o = r.clone()
    o[5, 7] += 0.5
    o[30, 1] -= 0.2
    o[36, 52] += 1.0
    ok, n, first = _oracle(o, r, 1e-2, 1e-2)
    c = checks.compare(o, r, 1e-2, 1e-2)
    assert (c.ok, ok) == (False, False)
    assert f"in {n} of {r.numel()} elements" in c.message
    assert "first at index [5, 7]" in c.message and first == 5 * 53 + 7
    assert c.max_abs == pytest.approx(1.0, rel=1e-6)
    assert not checks.compare(o, r, 1e-2, 1e-2, quick=True).ok


def test_non_finite_elements_are_skipped_across_chunks(chunk):
    g = torch.Generator().manual_seed(1)
    r = torch.randn(2000, generator=g)
    r[::3] = float("nan")
    r[1::7] = float("inf")
    o = r.clone()
    assert checks.compare(o, r, 1e-3, 0).ok
    o[1999] += 1  # the last element is finite (1999 % 3 == 1, 1999 % 7 == 4): out of tolerance
    c = checks.compare(o, r, 1e-3, 0)
    assert not c.ok and "first at index [1999]" in c.message and "in 1 of 2000" in c.message
    o[0] = 0.0  # a NaN the reference has, now missing
    assert "lacks 1 NaNs" in checks.compare(o, r, 1e-3, 0).message


def test_dropped_small_elements_fail_on_the_total_whatever_the_chunks(chunk):
    r = torch.full((5000,), 1e-3)  # every element within atol of zero
    zeros = torch.zeros_like(r)
    c = checks.compare(zeros, r, 1e-2, 1e-2)
    assert not c.ok and "of the reference's total magnitude" in c.message
    assert not checks.compare(zeros, r, 1e-2, 1e-2, quick=True).ok
    assert checks.null_control([{"inputs": [r], "outputs": r}], 1e-2, 1e-2) == "a copy of the input"


def test_quick_agrees_with_the_full_comparison_on_random_cases(chunk):
    g = torch.Generator().manual_seed(2)
    for k in range(60):
        r = torch.randn(k * 31 + 1, generator=g) * (10.0 ** (k % 5 - 2))
        o = r + torch.randn(r.shape, generator=g) * 10.0 ** (-(k % 6))
        for atol, rtol in ((1e-2, 1e-2), (1e-5, 0.0), (0.0, 0.0)):
            full = checks.compare(o, r, atol, rtol)
            assert checks.compare(o, r, atol, rtol, quick=True).ok == full.ok
            assert full.ok == (_oracle(o, r, atol, rtol)[0] and (
                float(r.abs().sum()) <= atol
                or float((o - r).double().abs().sum()) <= max(0.05, 5 * rtol) * float(r.double().abs().sum())
            ))


def test_complex_half_and_integer_outputs(chunk):
    c = torch.tensor([1 + 1j, 2 - 1j, 3j], dtype=torch.complex64)
    worse = c.clone()
    worse[2] = 5j
    got = checks.compare(worse, c, 1e-3, 0)
    assert not got.ok and "first at index [2]" in got.message  # a complex value, formatted
    h = torch.randn(300).half()
    assert checks.compare(h.clone(), h, 0, 0).ok
    i = torch.arange(10)
    j = i.clone()
    j[4] = -1
    assert "in 1 of 10 elements" in checks.compare(j, i, 0, 0).message
    assert checks.compare(torch.empty(0, 3), torch.empty(0, 3), 0, 0).ok
    assert checks.compare(torch.tensor(2.0), torch.tensor(2.0), 0, 0).ok


def test_a_device_that_runs_out_of_memory_leaves_the_comparison_to_the_cpu(monkeypatch):
    r = torch.randn(1000, generator=torch.Generator().manual_seed(3))
    o = r.clone()
    o[10] += 1
    seen = []

    def full(x, device):
        seen.append(device)
        raise torch.OutOfMemoryError("no room")

    monkeypatch.setattr(checks, "_on", full)
    c = checks.compare(o, r, 1e-3, 0, device="cuda")
    assert seen == ["cuda"]  # it tried the device first
    assert not c.ok and "first at index [10]" in c.message
    assert checks.compare(o, r, 1e-3, 0, device="cpu") == c  # the CPU itself is no detour


def test_outputs_of_another_shape_or_dtype_never_go_to_the_device(monkeypatch):
    monkeypatch.setattr(checks, "_on", lambda x, device: pytest.fail("copied to the device"))
    r = torch.randn(10)
    assert "has shape (9,)" in checks.compare(torch.randn(9), r, 1e-3, 0, device="cuda").message
    assert "has dtype" in checks.compare(r.double(), r, 1e-3, 0, device="cuda").message
    assert "returned 2 outputs" in checks.compare((r, r), (r,), 1e-3, 0, device="cuda").message
    monkeypatch.setattr(checks, "_DEVICE_BYTES", 16)  # too large for the device: the CPU
    assert checks.compare(r, r, 1e-3, 0, device="cuda").ok
