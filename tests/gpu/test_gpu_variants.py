"""The judge-made input sets made on the GPU (a CUDA worker makes them there): the same
promises as on the CPU, and (printed) what it costs at a GPU-sized shape."""

from __future__ import annotations

import time
import types

import pytest
import torch

from autotriton_jupyter.verify import worker
from tests.test_input_variants import VARIANTS, _numpy_inputs, check_variant


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


def test_the_task_inputs_are_drawn_on_the_gpu_and_cost_milliseconds():
    def get_inputs():
        return [torch.randn(8192, 4096)]

    spent = {}
    for device in ("cpu", "cuda"):
        w = worker.WorkerState.__new__(worker.WorkerState)
        w.module, w.device = types.SimpleNamespace(get_inputs=get_inputs), device
        w._task_inputs(0)
        t0 = time.perf_counter()
        for seed in range(9):
            (x,) = w._task_inputs(seed)
            assert x.device.type == device
        torch.cuda.synchronize()
        spent[device] = time.perf_counter() - t0
    (a,), (b,) = w._task_inputs(5), w._task_inputs(5)
    assert torch.equal(a, b)  # one seed, one set
    print("nine draws of get_inputs() at 8192x4096:", {k: round(v, 3) for k, v in spent.items()}, "s")


def test_a_task_that_cannot_draw_on_the_gpu_draws_on_the_cpu():
    w = worker.WorkerState.__new__(worker.WorkerState)
    w.module, w.device = types.SimpleNamespace(get_inputs=_numpy_inputs), "cuda"
    got = w._task_inputs(11)
    w.device = "cpu"
    want = w._task_inputs(11)
    assert got[1].device.type == "cpu" and torch.equal(got[1], want[1])
    assert (got[0] == want[0]).all()


def test_a_get_inputs_that_refills_its_own_buffer_gives_each_set_its_own_values():
    buf = {}

    def get_inputs():
        x = buf.setdefault("x", torch.empty(1024, 512))
        return [x.normal_()]

    w = worker.WorkerState.__new__(worker.WorkerState)
    w.module, w.device = types.SimpleNamespace(get_inputs=get_inputs), "cuda"
    (a,) = w._task_inputs(1)
    kept = a.clone()
    (b,) = w._task_inputs(2)
    assert a.device.type == "cuda" and torch.equal(a, kept) and not torch.equal(a, b)
