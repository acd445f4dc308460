"""The judge-made input sets made on the GPU (a CUDA worker makes them there): the same
promises as on the CPU, and (printed) what it costs at a GPU-sized shape."""

from __future__ import annotations

import time
import types

import pytest
import torch

from autotriton_jupyter.verify import worker
from tests.test_input_variants import VARIANTS, check_variant


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_on_the_gpu(variant):
    check_variant("cuda", variant)


def test_a_gpu_sized_set_is_made_on_the_gpu():
    def get_inputs():
        return [torch.randn(8192, 4096)]

    spent = {}
    for device in ("cpu", "cuda"):
        w = worker.WorkerState.__new__(worker.WorkerState)
        w.module, w.device = types.SimpleNamespace(get_inputs=get_inputs), device
        w._draw(1, "signed")  # the first call on a device pays for its start
        t0 = time.perf_counter()
        for k, v in enumerate(VARIANTS):
            (x,) = w._draw(10 + k, v)
            assert x.device.type == device  # made where the worker runs, not moved there after
        torch.cuda.synchronize()
        spent[device] = time.perf_counter() - t0
    print("six judge-made sets of 8192x4096:", {k: round(v, 2) for k, v in spent.items()}, "s")
