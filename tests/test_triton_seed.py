"""tritonwarm's seed: made by a child of the fork server, copied into each worker's cache.
On a machine without a GPU the child's warm-up fails and no seed is made; the GPU half
is in tests/gpu/test_gpu_sandbox.py."""

from __future__ import annotations

import os

import torch

from autotriton_jupyter.verify import tritonwarm


def test_a_seed_that_cannot_be_made_is_empty_and_leaves_nothing(tmp_path):
    if torch.cuda.is_available():  # (there, the GPU test covers what it makes)
        return
    seed = tritonwarm.Seed(str(tmp_path))
    assert seed.pid > 0
    assert seed.files(timeout_s=120) == {}
    assert list(tmp_path.iterdir()) == []  # its folder is gone
    assert not torch.cuda.is_initialized()


def test_a_seed_that_hangs_is_killed_and_empty(tmp_path, monkeypatch):
    monkeypatch.setattr(tritonwarm, "warm_up", lambda: __import__("time").sleep(600))
    seed = tritonwarm.Seed(str(tmp_path))
    assert seed.files(timeout_s=1.0) == {}
    try:
        os.kill(seed.pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError("the hung child is still there")
    assert list(tmp_path.iterdir()) == []


def test_a_made_seed_comes_back_whole_and_is_planted_in_a_workers_cache(tmp_path, monkeypatch):
    def fake_warm_up():  # stands in for Triton's: writes its cache as Triton would
        root = os.environ["TRITON_CACHE_DIR"]
        os.makedirs(os.path.join(root, "AB"), exist_ok=True)
        with open(os.path.join(root, "AB", "k.cubin"), "wb") as f:
            f.write(b"\x7fELF" + bytes(range(256)))

    monkeypatch.setattr(tritonwarm, "warm_up", fake_warm_up)
    (tmp_path / "s").mkdir()
    got = tritonwarm.Seed(str(tmp_path / "s")).files(timeout_s=60)
    assert got == {os.path.join("AB", "k.cubin"): b"\x7fELF" + bytes(range(256))}
    cache = tmp_path / "worker-cache"
    tritonwarm.plant(got, str(cache))
    assert (cache / "AB" / "k.cubin").read_bytes() == got[os.path.join("AB", "k.cubin")]
    assert list((tmp_path / "s").iterdir()) == []  # the child's folder is gone
