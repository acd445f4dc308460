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
        assert fast.replays == 3 and fast.recordings == 1
        for n in (1000, 2000, 3000):  # three more signatures, two kept
            a = torch.randn(n, device="cuda")
            assert torch.equal(fast(a, a), kernel(a, a))
        assert len(fast._recorded) == 2 and fast.recordings == 4
        a = torch.randn(3000, device="cuda")
        fast(a, a)  # still kept: replayed
        assert fast.recordings == 4
        b = torch.randn(1000, device="cuda")
        assert torch.equal(fast(b, b), kernel(b, b))  # dropped (least recently used): again
        assert fast.recordings == 5
        # Views at other offsets of one tensor share a signature (their values are copied).
        rows = torch.randn(4, 3000, device="cuda")
        for i in range(4):
            assert torch.equal(fast(rows[i], rows[i]), kernel(rows[i], rows[i]))
        assert fast.recordings == 5


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
    before = torch.cuda.current_stream()
    with warnings.catch_warnings(record=True) as seen, torch.no_grad():
        warnings.simplefilter("always")
        assert torch.allclose(slow(a), a * float(a.sum()))
        assert torch.allclose(slow(a), a * float(a.sum()))
    assert sum("could not be recorded" in str(w.message) for w in seen) == 1
    assert slow.replays == 0
    # The failed capture left the caller on its own stream, and the GPU usable.
    assert torch.cuda.current_stream() == before
    with torch.no_grad():
        c = torch.randn(512, device="cuda")
        assert torch.equal(fast(c, c), kernel(c, c)) and fast.replays == 1


def test_what_a_recording_is_keyed_on():
    from autotriton_jupyter.cuda_graphs import _signature

    t = torch.randn(4, 8, device="cuda")
    assert _signature((t, 1)) == _signature((torch.randn(4, 8, device="cuda"), 1))
    assert _signature((t, 1)) != _signature((t, 2)) and _signature((t, 1)) != _signature((t, 1.0))
    assert _signature((t,)) != _signature((t.T,))  # strides
    assert _signature((t[1:],)) == _signature((t[:3],))  # offsets are not part of it
    assert _signature((t[:, :1].expand(4, 8),)) is None  # overlapping: run as it is
    assert _signature((t, t.cpu())) is None


def test_expanded_inputs_inference_mode_and_weights_under_grad_mode():
    base = _kernel("examples/candidates/add_relu/pass_masked.py")

    class WithWeight(base):  # a parameter it does not use: its outputs need no autograd
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(1))

    kernel = WithWeight().cuda()
    fast = graphed(kernel)
    x = torch.randn(1, device="cuda").expand(1024)  # every element is one memory location
    y = torch.randn(1024, device="cuda")
    assert torch.equal(fast(x, y), kernel(x, y)) and fast.recordings == 0
    # Grad mode on, a module with a parameter: its first call of a signature runs as it is,
    # and shows that the output needs no autograd; later calls replay.
    y2 = torch.randn(1024, device="cuda")
    for _ in range(3):
        assert torch.equal(fast(y, y2), kernel(y, y2))
    assert fast.replays == 2
    # Recorded under inference mode, replayed under no_grad, and the other way round.
    fresh = graphed(base().cuda())
    with torch.inference_mode():
        first = fresh(y, y2)
    with torch.no_grad():
        again = fresh(y, y2)
    assert torch.equal(first, again) and fresh.replays == 2


@pytest.mark.parametrize("path", ["examples/candidates/softmax/rowwise.py", "examples/candidates/row_sum/pass_loop.py"])
def test_the_other_shipped_kernels_replay_too(path):
    kernel = _kernel(path)().cuda()
    fast = graphed(kernel)
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(512, 1000, device="cuda")
            assert torch.allclose(fast(x), kernel(x))
    assert fast.replays == 2


def test_parameters_moved_under_live_graphs_are_noticed_and_keywords_run_as_they_are():
    base = _kernel("examples/candidates/add_relu/pass_masked.py")

    class WithBuffer(base):
        def __init__(self):
            super().__init__()
            self.register_buffer("unused", torch.zeros(4))

    m = WithBuffer().cuda()
    fast = graphed(m)
    x = torch.randn(256, device="cuda")
    with torch.no_grad():
        fast(x, x)
        assert fast.recordings == 1
        m.unused = torch.ones(4, device="cuda")  # a buffer replaced: the graph is stale
        assert torch.equal(fast(x, x), m(x, x)) and fast.recordings == 2
        before = fast.replays
        assert torch.equal(fast(x, y=x), m(x, y=x)) and fast.replays == before  # keywords
