"""The judge's comparison on the GPU gives what it gives on the CPU (verify/checks.py)."""

from __future__ import annotations

import pytest
import torch

from autotriton_jupyter.verify import checks


def _cases():
    g = torch.Generator().manual_seed(11)
    for k in range(40):
        r = torch.randn(k * 977 + 3, generator=g) * 10.0 ** (k % 5 - 2)
        o = r + torch.randn(r.shape, generator=g) * 10.0 ** (-(k % 6))
        if k % 4 == 1:
            r[:: k + 2] = float("nan")
            o[:: k + 2] = float("nan")
        if k % 4 == 2:
            o = o.half().float()
        if k % 7 == 3:
            o[k] = float("inf")
        yield r, o
    big = torch.randn(3 << 23, generator=g)  # more than one device chunk
    off = big.clone()
    off[(3 << 23) - 5] += 1.0
    yield big, off
    yield big.reshape(3, -1), big.reshape(3, -1).clone()


@pytest.mark.parametrize("atol,rtol", [(1e-2, 1e-2), (1e-5, 0.0), (0.0, 0.0)])
def test_same_verdicts_messages_and_errors_on_the_gpu(atol, rtol):
    for r, o in _cases():
        for quick in (False, True):
            cpu = checks.compare(o, r, atol, rtol, quick=quick)
            gpu = checks.compare(o, r, atol, rtol, quick=quick, device="cuda")
            assert gpu.ok == cpu.ok
            assert gpu.message == cpu.message
            if not quick:
                assert (gpu.max_abs, gpu.max_rel) == (cpu.max_abs, cpu.max_rel) or (
                    gpu.max_abs != gpu.max_abs and cpu.max_abs != cpu.max_abs  # both NaN
                )


def test_tuples_integers_and_complex_on_the_gpu():
    i = torch.arange(1000)
    j = i.clone()
    j[7] = 0
    c = torch.randn(500, dtype=torch.complex64)
    d = c.clone()
    d[3] += 1
    for out, ref in (((j, c), (i, c)), ((i, d), (i, c)), (i, i), (c, c)):
        gpu = checks.compare(out, ref, 1e-4, 1e-4, device="cuda")
        cpu = checks.compare(out, ref, 1e-4, 1e-4)
        # The same verdict and words; a complex magnitude may differ in its last bit
        # between the CPU's and CUDA's abs (seen on an H100: exact equality failed).
        assert (gpu.ok, gpu.message) == (cpu.ok, cpu.message)
        assert gpu.max_abs == pytest.approx(cpu.max_abs, rel=1e-12)
        assert gpu.max_rel == pytest.approx(cpu.max_rel, rel=1e-12)
