"""On a GPU: an accepted kernel replayed from CUDA graphs gives what it gives as it is, for
new inputs every call, with outputs of its own; one recording per signature, the least
recently used dropped; autograd and unrecordable forwards run as they are."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import pytest
import torch

from autotriton_jupyter import graphed

ROOT = Path(__file__).resolve().parents[2]


def _kernel(path: str):
    spec = importlib.util.spec_from_file_location("graphed_kernel", ROOT / path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # from its file, which Triton reads
    return mod.ModelNew


def test_replays_match_the_kernel_on_new_inputs_and_keep_their_outputs():
    kernel = _kernel("examples/candidates/add_relu/pass_masked.py")().cuda()
    fast = graphed(kernel, max_graphs=2)
    outs = []
    with torch.no_grad():
        for _ in range(3):
            x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
            got = fast(x, y)
            assert torch.equal(got, kernel(x, y))
            outs.append((got, x, y))
        # Each call's output is its own: later replays did not overwrite it.
        for got, x, y in outs:
            assert torch.equal(got, torch.relu(x + y))
        assert fast.replays == 3 and len(fast._recorded) == 1
        for n in (1000, 2000, 3000):  # three more signatures, two kept
            a = torch.randn(n, device="cuda")
            assert torch.equal(fast(a, a), kernel(a, a))
        assert len(fast._recorded) == 2


def test_autograd_and_a_forward_that_cannot_be_recorded_run_as_they_are():
    kernel = _kernel("examples/candidates/add_relu/pass_masked.py")().cuda()
    fast = graphed(kernel)
    x = torch.randn(256, device="cuda", requires_grad=True)
    y = torch.randn(256, device="cuda")
    assert torch.equal(fast(x, y), kernel(x, y)) and fast.replays == 0

    class Syncs(torch.nn.Module):
        def forward(self, a):
            return a * float(a.sum())  # waits on the device: no graph can hold it

    slow = graphed(Syncs())
    a = torch.randn(64, device="cuda")
    with warnings.catch_warnings(record=True) as seen, torch.no_grad():
        warnings.simplefilter("always")
        assert torch.allclose(slow(a), a * float(a.sum()))
        assert torch.allclose(slow(a), a * float(a.sum()))
    assert sum("could not be recorded" in str(w.message) for w in seen) == 1
    assert slow.replays == 0


@pytest.mark.parametrize("path", ["examples/candidates/softmax/rowwise.py", "examples/candidates/row_sum/pass_loop.py"])
def test_the_other_shipped_kernels_replay_too(path):
    kernel = _kernel(path)().cuda()
    fast = graphed(kernel)
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(512, 1000, device="cuda")
            assert torch.allclose(fast(x), kernel(x))
    assert fast.replays == 2
