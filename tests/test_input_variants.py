"""The judge-made input sets: each variant does what worker.py's _draw says it does, whether
made on the CPU or on the worker's device (tests/gpu/test_gpu_variants.py runs the same
checks with CUDA)."""

from __future__ import annotations

import types

import pytest
import torch

from autotriton_jupyter.verify import worker

VARIANTS = ("signed", "scaled", "extreme", "zeros", "offset", "tiny")


def _inputs() -> list:
    return [
        torch.randn(40, 72),
        torch.randint(-5, 5, (24, 9), dtype=torch.int8),
        torch.randint(0, 100, (16, 5), dtype=torch.int32),
        torch.randint(0, 1000, (64,), dtype=torch.int64),
        torch.rand(12, 6) > 0.5,
        0.75,
        torch.randn(4, 16, 8).half(),
    ]


def _worker(device: str, get_inputs) -> worker.WorkerState:
    """A worker's state with only what drawing needs: its device and the task's get_inputs."""
    w = worker.WorkerState.__new__(worker.WorkerState)
    w.module, w.device = types.SimpleNamespace(get_inputs=get_inputs), device
    return w


def drawn(device: str, seed: int, variant: str) -> list:
    """_draw of a worker on `device`, with the task's own inputs for that seed."""
    return _worker(device, _inputs)._draw(seed, variant)


def check_variant(device: str, variant: str, seed: int = 7) -> None:
    """Every property of `variant` the docstring promises, on inputs drawn for `seed`."""
    # The task's own set as this worker draws it (a GPU worker draws it on the GPU).
    base = [x.cpu() if isinstance(x, torch.Tensor) else x for x in drawn(device, seed, "none")]
    got = drawn(device, seed, variant)
    assert len(got) == len(base)
    again = drawn(device, seed, variant)  # the same seed: the same set, exactly
    for a, b in zip(got, again):
        assert torch.equal(a.cpu(), b.cpu()) if isinstance(a, torch.Tensor) else a == b
    for x, y in zip(base, got):
        if isinstance(x, torch.Tensor):
            assert y.dtype == x.dtype and y.shape == x.shape
    f, i8, i32, i64, flags, scalar, half = (v.cpu() if isinstance(v, torch.Tensor) else v for v in got)
    f0, i8_0, i32_0, i64_0, flags0, _, half0 = base
    if variant == "signed":
        assert torch.equal(f.abs()[~worker._lines(f.shape, 3) & ~worker._lines(f.shape, 5)],
                           f0.abs()[~worker._lines(f.shape, 3) & ~worker._lines(f.shape, 5)])
        assert (torch.sign(f) != torch.sign(f0)).any()  # flipped at random
        assert (f[worker._lines(f.shape, 3)] < 0).all()  # whole lines negative
        same = f[worker._lines(f.shape, 5) & ~worker._lines(f.shape, 3)]
        assert (same == same[0]).all()  # and whole lines of one value
        assert torch.equal(i8.abs(), i8_0.abs()) and not torch.equal(i8, i8_0)
        assert not torch.equal(flags, flags0)
    elif variant == "scaled":
        assert torch.allclose(f, f0 * 4.0 - f0.mean(), atol=1e-5)
        assert scalar == 0.75 * 2.5
    elif variant == "extreme":
        assert torch.equal(f, f0 * 64.0)
        assert i8.min() < -64 and i8.max() > 64  # the whole range of int8
        assert i32.abs().max() > 2**24
        assert torch.equal(i64, i64_0 * 4096)
        assert scalar == 0.75 * -3.0
    elif variant == "zeros":
        assert (f == 0).float().mean() > 0.1 and (f[worker._lines(f.shape, 1)] == 0).all()
        assert torch.equal(f[f != 0], ((f0 * 2).round() / 2)[f != 0])  # half steps: ties
        assert (half == 0).any() and (i32 == 0).float().mean() > 0.1
    elif variant == "offset":
        assert f.min() > 0 and torch.allclose(f - f.mean(), f0 - f0.mean(), atol=0.05)
    elif variant == "tiny":
        assert torch.equal(f, f0 * 2.0**-10) and torch.equal(half, half0 * 2.0**-10)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_on_the_cpu(variant):
    """On several seeds: a promise that holds on one draw may fail on another (where the
    signed variant's negative lines crossed its lines of one value, that value's sign was
    the draw's, and on the GPU's draw the crossings were positive)."""
    for seed in range(8):
        check_variant("cpu", variant, seed)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_device_path_makes_the_same_kinds_of_set(variant):
    """What a GPU worker runs (its own generator, every tensor moved first), run on the CPU:
    the same promises hold, with other random draws."""
    torch.manual_seed(3)
    base = _inputs()
    got = worker._made(list(base), variant, torch.Generator().manual_seed(99), torch.device("cpu"))
    cpu = drawn("cpu", 3, variant)
    for x, y, z in zip(base, got, cpu):
        if isinstance(x, torch.Tensor):
            assert y.dtype == z.dtype and y.shape == z.shape
    if variant in ("tiny", "offset"):  # no random draw changes these: identical
        for y, z in zip(got, cpu):
            assert torch.equal(y, z) if isinstance(y, torch.Tensor) else y == z


def test_a_plain_set_is_the_task_own_inputs():
    torch.manual_seed(5)
    base = _inputs()
    got = drawn("cpu", 5, "none")
    for x, y in zip(base, got):
        assert torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y


def _numpy_inputs() -> list:
    import numpy as np

    return [torch.randn(6, 5).numpy() * 0 + np.arange(5), torch.randn(3)]


def test_a_task_that_cannot_draw_on_the_device_draws_on_the_cpu(monkeypatch):
    """A GPU worker runs get_inputs() with torch's default device set to its GPU; one that
    cannot run there (here: this CPU build has no CUDA at all, as .numpy() of a GPU tensor
    would fail) is run again on the CPU from the same seed: a CPU worker's values."""
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)  # the device still works
    got = _worker("cuda", _numpy_inputs)._task_inputs(11)
    want = _worker("cpu", _numpy_inputs)._task_inputs(11)
    assert got[1].device.type == "cpu" and torch.equal(got[1], want[1])
    assert (got[0] == want[0]).all()


def test_a_draw_that_broke_the_device_is_not_drawn_again():
    """Where the device itself no longer works after the failed draw (a device-side assert
    ends a CUDA context; here: no CUDA in this build), get_inputs()'s error is raised."""
    calls = []

    def get_inputs():
        calls.append(1)
        return [torch.randn(3)]

    with pytest.raises(worker.DeviceLost, match=r"get_inputs\(\) raised .*CUDA"):
        _worker("cuda", get_inputs)._task_inputs(2)
    assert len(calls) == 1


def test_a_variant_whose_draw_broke_the_device_ends_the_reference_not_just_the_variant(
    tmp_path, monkeypatch
):
    """A judge-made set the reference cannot take is left out; one whose draw broke the
    device is not: every set after it would fail on a dead device."""
    w = worker.WorkerState("cpu", str(tmp_path), 0.0)
    w.op_load_reference({"source": NESTED, "seed": 1})

    def lost(seed):
        raise worker.DeviceLost("get_inputs() raised RuntimeError: device-side assert triggered")

    monkeypatch.setattr(w, "_task_inputs", lost)
    with pytest.raises(worker.DeviceLost):
        w.op_trials({"sets": [{"label": "signed", "seed": 4, "variant": "signed"}]})


def test_a_device_worker_runs_get_inputs_on_its_device_and_copies_what_it_keeps():
    """A get_inputs() that refills one buffer of its own: each set gets its own tensor, as
    the move of a CPU draw to the GPU gave it ("meta" stands for the GPU here)."""
    buf = {}

    def refilled():
        x = buf.setdefault("x", torch.empty(6, 5))
        return [x.normal_(), x.t()]

    got = _worker("meta", refilled)._task_inputs(3)
    assert all(x.device.type == "meta" for x in got)
    assert got[0] is not buf["x"] and got[0]._base is None
    assert got[1].stride() == buf["x"].t().stride()  # the layout kept, as .to(device) keeps it
    mixed = _worker("meta", _inputs)._task_inputs(3)
    assert all(x.device.type == "meta" for x in mixed if isinstance(x, torch.Tensor))


TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, idx):
        x.add_(1.0)  # changes its inputs in place
        return x[idx.clamp(0, x.shape[0] - 1)]


def get_inputs():
    return [torch.randn(16, 8), torch.randint(0, 16, (5,))]


def get_init_inputs():
    return []
'''


def _reference_worker(tmp_path) -> worker.WorkerState:
    w = worker.WorkerState("cpu", str(tmp_path), 0.0)
    w.op_load_reference({"source": TASK, "seed": 1})
    return w


def test_a_variant_that_cannot_be_made_is_left_out_not_the_task(tmp_path, monkeypatch):
    w = _reference_worker(tmp_path)
    real = worker._made

    def made(inputs, variant, gen, dev):
        if variant == "zeros":
            raise TypeError("no zeros for this dtype")
        return real(inputs, variant, gen, dev)

    monkeypatch.setattr(worker, "_made", made)
    specs = [{"label": "fresh-1", "seed": 1, "variant": "none"},
             {"label": "zeros", "seed": 2, "variant": "zeros"},
             {"label": "tiny", "seed": 3, "variant": "tiny"}]
    got = w.op_trials({"sets": specs})["sets"]
    assert [s["label"] for s in got] == ["fresh-1", "zeros", "tiny"]
    assert "no zeros for this dtype" in got[1]["skipped"] and "outputs" in got[2]


def test_the_cpu_check_of_an_index_set_runs_on_copies(tmp_path):
    """The CPU trial run before a signed integer set goes to the GPU must not change the set
    (this reference adds 1 to its input in place)."""
    w = _reference_worker(tmp_path)
    torch.manual_seed(0)
    x, idx = torch.randn(16, 8), torch.randint(0, 16, (5,))
    keep = x.clone()
    assert w._fails_on_cpu([x, idx]) is None
    assert torch.equal(x, keep)


NESTED = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, pair):
        a, b = pair
        a.mul_(2.0)  # changes a tensor inside its list argument, in place
        return a + b


def get_inputs():
    return [[torch.randn(6, 4), torch.randn(6, 4)]]


def get_init_inputs():
    return []
'''


def test_a_reference_that_changes_a_nested_input_leaves_the_kept_set_as_drawn(tmp_path):
    w = worker.WorkerState("cpu", str(tmp_path), 0.0)
    w.op_load_reference({"source": NESTED, "seed": 1})
    (got,) = w.op_trials({"sets": [{"label": "fresh-1", "seed": 4, "variant": "none"}]})["sets"]
    (a, b), = got["inputs"]
    assert torch.equal(got["outputs"], a * 2.0 + b)  # the judge's inputs give its outputs
    (ka, kb), = w.sets[0]
    assert torch.equal(ka, a) and torch.equal(kb, b)  # and the worker kept the same set
