"""graphed() off the GPU and its bookkeeping: where no graph can serve, the module runs as
it is, with the very same results (tests/gpu/test_gpu_cuda_graphs.py replays real ones)."""

from __future__ import annotations

import pytest
import torch

from autotriton_jupyter import graphed
from autotriton_jupyter.cuda_graphs import Graphed, _outputs, _signature


class Scale(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.full((4,), 2.0))

    def forward(self, x, shift=0.0):
        return x * self.w + shift


def test_off_the_gpu_the_module_runs_as_it_is():
    m = Scale()
    fast = graphed(m)
    x = torch.randn(3, 4)
    with torch.no_grad():
        assert torch.equal(fast(x, 1.0), m(x, 1.0))
    assert fast.replays == 0 and not fast._recorded
    assert isinstance(fast, torch.nn.Module) and fast.module is m


def test_what_a_recording_is_keyed_on():
    """Shapes, strides, dtypes and devices of tensors on a GPU, and the other arguments'
    values; anything else (a list, an object) cannot be recorded (tests/gpu has the rest)."""
    cpu = torch.randn(3, 4)
    assert _signature((cpu,)) is None  # not on a GPU
    assert _signature((1, 2.0)) is None  # no tensor on a GPU: nothing to record for
    assert _signature(([1, 2],)) is None and _signature((object(),)) is None
    with pytest.raises(ValueError, match="max_graphs"):
        Graphed(Scale(), max_graphs=0)
    with pytest.raises(TypeError, match=r"build it first"):
        graphed(Scale)  # the class, not a module


def test_only_tensors_or_plain_tuples_of_them_can_come_out_of_a_graph():
    import collections

    pair = collections.namedtuple("pair", "a b")
    t = torch.zeros(2)
    assert _outputs(t) == [t] and _outputs((t, t)) == [t, t] and _outputs([t]) == [t]
    assert _outputs(pair(t, t)) is None and _outputs((t, 1)) is None and _outputs({"a": t}) is None
