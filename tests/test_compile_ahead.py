"""The reference's torch.compile, built before its timing (reference._compile_ahead and the
worker's compile_reference), on the CPU: when it starts, what waits for it, what a failure
does, and that its timing reuses the build. The build itself on a GPU: tests/gpu."""

from __future__ import annotations

import threading

import pytest

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions, refcache, reference, worker
from autotriton_jupyter.verify.sandbox import WorkerFailure


def test_the_workers_build_ahead_and_what_its_timing_compiles_again(tmp_path, monkeypatch):
    """compile_reference calls the compiled reference once, without autograd, on a copy of
    the first timed set (so the set itself is never written). Its timing then compiles
    anew, with Dynamo's compiled code dropped first, so that the kernels' autotuning runs
    again there, and Inductor keeps no autotuning choice on disk in between. After a
    failed build, nothing is dropped and no build time is reported."""
    import torch._dynamo
    import torch._inductor.config as inductor

    made: list[dict] = []
    resets: list[int] = []

    def compile_(model):
        entry = {"calls": []}
        made.append(entry)

        def call(*args):
            entry["calls"].append((torch.is_grad_enabled(), args))
            return model(*args)

        return call

    monkeypatch.setattr(torch, "compile", compile_)
    monkeypatch.setattr(torch._dynamo, "reset", lambda: resets.append(1))
    monkeypatch.setattr(inductor, "autotune_local_cache", True)
    w = worker.WorkerState("cpu", str(tmp_path), 0.0)
    w.model = torch.nn.Softmax(dim=1)
    kept = torch.randn(4, 8)
    w.sets = [[torch.zeros(2, 2)], [kept]]
    got = w.op_compile_reference({"sets": [1]})
    assert "error" not in got and got["seconds"] >= 0
    assert inductor.autotune_local_cache is False
    (entry,) = made
    ((grad, args),) = entry["calls"]
    assert not grad and torch.equal(args[0], kept) and args[0] is not kept
    assert resets == []
    compiled, seconds = w._compiled_reference()
    assert seconds == got["seconds"] and len(made) == 2 and resets == [1]

    def broken(model):
        raise RuntimeError("inductor is unwell")

    monkeypatch.setattr(torch, "compile", broken)
    got = w.op_compile_reference({"sets": [1]})
    assert "inductor is unwell" in got["error"]
    monkeypatch.setattr(torch, "compile", compile_)
    compiled, seconds = w._compiled_reference()
    assert seconds is None and len(made) == 3 and resets == [1]  # compiled as if no build


@pytest.fixture
def prepared(corpus):
    task = Task.from_file(corpus / "softmax" / "task.py")
    with Verifier(VerifyOptions(device="cpu", seed=5, timing=False, reference_cache=False)) as v:
        yield v, v.prepare(task)


def test_the_reference_is_timed_only_once_its_ahead_build_is_done(prepared, monkeypatch):
    """The build holds ref.lock from its start to the worker's answer: the reference's
    timing (which takes it) waits, so nothing is timed beside the build. It starts once;
    a failed build leaves the lock free and no figure."""
    v, ref = prepared
    asked: list[str] = []
    go = threading.Event()

    def call(op, *args, **kw):
        asked.append(op)
        if op == "compile_reference":
            assert kw["sets"] == [ref.sets[i]["worker_index"] for i in ref.timed]
            assert go.wait(30)
            return {"seconds": 2.5}
        assert op == "time_reference"
        return {"eager_ms": 1.0, "compile_ms": 0.5}

    monkeypatch.setattr(ref.worker, "call", call)
    v.device = "cuda"  # (the build is a GPU verifier's with timing on; the worker is stood in for)
    v.options.timing = True
    ref.vary_mode = "elements"
    ref.compile_wanted = True
    v._compile_ahead(ref)
    assert ref.lock.locked() and not ref.compile_wanted
    v._compile_ahead(ref)  # started already: nothing more
    timed = threading.Thread(target=v._reference_timing, args=(ref,))
    timed.start()
    timed.join(0.5)
    assert timed.is_alive() and asked == ["compile_reference"]  # waiting for the build
    go.set()
    timed.join(30)
    assert asked == ["compile_reference", "time_reference"]
    assert ref.compile_ahead_s == 2.5 and not ref.lock.locked()

    # A build whose worker dies: the lock is let go, nothing raised, no figure kept, and
    # the reference's candidates are told why they get no speed figures.
    ref.timing, ref.compile_ahead_s, ref.compile_wanted = None, None, True
    lost_calls: list[str] = []

    def lost(op, *args, **kw):
        lost_calls.append(op)
        raise WorkerFailure("crash", "the worker died", op=op)

    monkeypatch.setattr(ref.worker, "call", lost)
    v._compile_ahead(ref)
    assert ref.lock.acquire(timeout=30)  # taken once the thread let it go
    ref.lock.release()
    assert lost_calls == ["compile_reference"] and ref.compile_ahead_s is None
    assert "torch.compile could not be built (crash: the worker died)" in ref.timing_failure


def test_a_verify_many_returns_once_a_build_it_started_is_done(prepared, monkeypatch):
    """Its caller's next GPU work (a training step) has the GPU to itself; and a verifier
    whose timing is off (a view of the same pool, say) starts none."""
    v, ref = prepared
    go = threading.Event()
    monkeypatch.setattr(ref.worker, "call", lambda op, *a, **k: go.wait(30) and {"seconds": 1.0})
    ref.compile_wanted = True
    v.device = "cuda"
    v.options.timing = False
    v._compile_ahead(ref)
    assert ref.build is None and ref.compile_wanted
    v.options.timing = True
    v._compile_ahead(ref)
    assert ref.build is not None and ref.build.is_alive()
    threading.Timer(0.3, go.set).start()
    v._await_builds(30)
    assert not ref.build.is_alive() and ref.compile_ahead_s == 1.0 and not ref.lock.locked()


def test_a_closed_gpu_lock_opens_no_file_again(tmp_path):
    """A thread that takes the lock after its pool closed (a build ending) leaks no descriptor."""
    from autotriton_jupyter.verify.gpulock import GpuLock

    lock = GpuLock(tmp_path / "gpu.lock")
    with lock.shared():
        assert lock._fd is not None
    lock.close()
    with lock.shared():
        assert lock._fd is None
    assert lock._fd is None


def test_no_build_starts_while_the_reference_is_being_timed_or_is_timed(prepared, monkeypatch):
    v, ref = prepared
    asked: list[str] = []
    monkeypatch.setattr(ref.worker, "call", lambda op, *a, **k: asked.append(op) or {"seconds": 1.0})
    v.device = "cuda"
    v.options.timing = True
    ref.compile_wanted = True
    with ref.lock:  # the timing (or the vary probe) holds it: it compiles there itself
        v._compile_ahead(ref)
    assert ref.compile_wanted and asked == [] and ref.build is None
    ref.timing = {"eager_ms": 1.0}
    v._compile_ahead(ref)
    assert asked == [] and ref.build is None and not ref.lock.locked()


def test_a_build_is_wanted_on_a_gpu_with_timing_unless_its_timings_are_on_disk(prepared, tmp_path, monkeypatch):
    v, ref = prepared
    monkeypatch.setenv("AUTOTRITON_CACHE", str(tmp_path))
    assert not v._compiles_ahead(ref)  # a CPU verifier times nothing
    v.device = "cuda"
    v.options.timing = False
    assert not v._compiles_ahead(ref)
    v.options.timing = True
    v.options.reference_cache = True
    ref.machine = ref.machine or {"gpu": "a test's"}
    assert v._compiles_ahead(ref)
    # On disk for one way of varying its inputs (which one is probed later): no build.
    refcache.ReferenceTimings().put(v._timing_key(ref, "tensor"), {"eager_ms": 1.0, "compile_ms": 1.0})
    assert not v._compiles_ahead(ref)
    v.options.reference_cache = False  # the cache not read: its timing compiles it anyway
    assert v._compiles_ahead(ref)


@pytest.mark.parametrize("name,starts", [("pass_rowwise", True), ("fail_wrong_axis", False)])
def test_the_build_starts_once_a_candidate_is_right_on_a_fresh_set(corpus, monkeypatch, name, starts):
    """A candidate wrong at once (a failing one-shot verify's) starts no build; one right
    on a fresh input set does, while its other runs go on."""
    started: list[reference.Reference] = []
    monkeypatch.setattr(Verifier, "_compiles_ahead", lambda self, ref: True)
    monkeypatch.setattr(Verifier, "_compile_ahead", lambda self, ref: started.append(ref))
    task = Task.from_file(corpus / "softmax" / "task.py")
    with Verifier(VerifyOptions(device="cpu", seed=5, timing=False, reference_cache=False)) as v:
        report = v.verify(task, Candidate.from_file(corpus / "softmax" / f"{name}.py"))
    assert report.verdict == ("pass" if starts else "fail"), report.reasons
    assert bool(started) == starts
