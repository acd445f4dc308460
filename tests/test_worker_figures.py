"""What a worker says about where its first call's time went (figures only, never a verdict)."""

from __future__ import annotations

import os
import time

from autotriton_jupyter.verify import worker


def test_the_first_calls_triton_steps_are_read_off_the_workers_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    since = time.time() - 10
    files = {
        "a1/cuda_utils.cpython-312-x86_64-linux-gnu.so": 0.4,
        "b2/softmax_kernel.cubin": 1.5,
        "b2/softmax_kernel.json": 1.6,  # not a step of its own
        "c3/__triton_launcher.cpython-312-x86_64-linux-gnu.so": 1.7,
        "d4/other_kernel.cubin": 1.1,  # the later of two kernels counts
        "e5/old.cubin": -3.0,  # from before the call: not its work
    }
    for name, after in files.items():
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"")
        os.utime(path, (since + after, since + after))
    got = worker._triton_steps(since)
    assert set(got) == {"driver", "kernel", "launcher"}
    assert abs(got["driver"] - 0.4) < 0.01
    assert abs(got["kernel"] - 1.5) < 0.01
    assert abs(got["launcher"] - 1.7) < 0.01


def test_no_cache_folder_gives_no_steps(monkeypatch):
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    assert worker._triton_steps(time.time()) == {}


def test_a_gpu_workers_triton_warm_up_that_fails_changes_nothing(tmp_path, capfd):
    """Here there is no GPU, so Triton's warm-up fails: the worker says so in its log and
    goes on (its candidate's first launch then pays for it, as without a warm-up)."""
    w = worker.WorkerState("cuda", str(tmp_path), 0.0)
    w.warm_up()
    assert w.warming is not None
    w._await_warm_up()
    assert w.warming is None and w.warm_s is None
    assert "Triton's warm-up failed" in capfd.readouterr().out


def test_a_cpu_worker_does_not_warm_triton_up(tmp_path, monkeypatch):
    import sys

    import torch._dynamo  # noqa: F401  (as a CPU pool's fork server leaves it)

    assert "torch._dynamo" in sys.modules
    w = worker.WorkerState("cpu", str(tmp_path), 0.0)
    w.warm_up()
    assert w.warming is None  # nothing left to do on a thread


def test_a_figure_past_floats_range_is_no_figure():
    """A reply's integer too large for a float (10**400 survives the wire) is dropped, not
    raised in the judge."""
    from autotriton_jupyter.verify.timed import _number

    assert _number(10**400) is None and _number(-1) is None and _number(float("nan")) is None
    assert _number(True) is None and _number("3") is None
    assert _number(3) == 3.0 and _number(0.5) == 0.5
