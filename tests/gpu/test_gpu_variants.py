"""The judge-made input sets made on the GPU (a CUDA worker makes them there): the same
promises as on the CPU, and (printed) what it costs at a GPU-sized shape."""

from __future__ import annotations

import time

import pytest
import torch

from autotriton_jupyter.verify import worker
from tests.test_input_variants import VARIANTS, _numpy_inputs, _worker, check_variant


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_on_the_gpu(variant):
    check_variant("cuda", variant)


def _seconds_on_each_device(get_inputs, draw, calls) -> tuple[dict, worker.WorkerState]:
    """Seconds of `calls` draws (draw(w, k)) on a CPU worker and on a GPU worker, each after
    a first one that pays for the device's start; every tensor made where the worker runs,
    not moved there after. Returns the GPU worker too."""
    spent = {}
    for device in ("cpu", "cuda"):
        w = _worker(device, get_inputs)
        draw(w, 0)
        t0 = time.perf_counter()
        for k in range(calls):
            (x,) = draw(w, k)
            assert x.device.type == device
        torch.cuda.synchronize()
        spent[device] = round(time.perf_counter() - t0, 3)
    return spent, w


def _gpu_sized():
    return [torch.randn(8192, 4096)]


def test_a_gpu_sized_set_is_made_on_the_gpu():
    spent, _ = _seconds_on_each_device(_gpu_sized, lambda w, k: w._draw(10 + k, VARIANTS[k]), len(VARIANTS))
    print("six judge-made sets of 8192x4096:", spent, "s")


def test_the_task_inputs_are_drawn_on_the_gpu_and_cost_milliseconds():
    spent, w = _seconds_on_each_device(_gpu_sized, lambda w, k: w._task_inputs(k), 9)
    (a,), (b,) = w._task_inputs(5), w._task_inputs(5)
    assert torch.equal(a, b)  # one seed, one set
    print("nine draws of get_inputs() at 8192x4096:", spent, "s")


def test_a_task_that_cannot_draw_on_the_gpu_draws_on_the_cpu():
    got = _worker("cuda", _numpy_inputs)._task_inputs(11)
    want = _worker("cpu", _numpy_inputs)._task_inputs(11)
    assert got[1].device.type == "cpu" and torch.equal(got[1], want[1])
    assert (got[0] == want[0]).all()


def test_a_get_inputs_that_refills_its_own_buffer_gives_each_set_its_own_values():
    buf = {}

    def get_inputs():
        x = buf.setdefault("x", torch.empty(1024, 512))
        return [x.normal_()]

    w = _worker("cuda", get_inputs)
    (a,) = w._task_inputs(1)
    kept = a.clone()
    (b,) = w._task_inputs(2)
    assert a.device.type == "cuda" and torch.equal(a, kept) and not torch.equal(a, b)
