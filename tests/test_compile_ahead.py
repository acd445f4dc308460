"""The reference's torch.compile, built before its timing (reference._compile_ahead and the
worker's compile_reference), on the CPU: when it starts, what waits for it, what a failure
does, and that its timing reuses the build. The build itself on a GPU: tests/gpu."""

from __future__ import annotations

import threading

import pytest
import torch

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions, refcache, reference, worker
from autotriton_jupyter.verify.sandbox import WorkerFailure


def test_the_workers_ahead_build_is_what_its_timing_uses(tmp_path, monkeypatch):
    """compile_reference calls the compiled reference once, without autograd, on a copy of
    the first timed set (so the set itself is never written); its timing then takes that
    build. After a failed build, the timing compiles anew."""
    made: list[dict] = []

    def compile_(model):
        entry = {"calls": []}
        made.append(entry)

        def call(*args):
            entry["calls"].append((torch.is_grad_enabled(), args))
            return model(*args)

        return call

    monkeypatch.setattr(torch, "compile", compile_)
    w = worker.WorkerState("cpu", str(tmp_path), 0.0)
    w.model = torch.nn.Softmax(dim=1)
    kept = torch.randn(4, 8)
    w.sets = [[torch.zeros(2, 2)], [kept]]
    got = w.op_compile_reference({"sets": [1]})
    assert "error" not in got and got["seconds"] >= 0
    (entry,) = made
    ((grad, args),) = entry["calls"]
    assert not grad and torch.equal(args[0], kept) and args[0] is not kept
    compiled, seconds = w._compiled_reference()
    assert seconds == got["seconds"] and len(made) == 1  # no second compile
    compiled(kept)
    assert len(entry["calls"]) == 2

    def broken(model):
        raise RuntimeError("inductor is unwell")

    monkeypatch.setattr(torch, "compile", broken)
    got = w.op_compile_reference({"sets": [1]})
    assert "inductor is unwell" in got["error"]
    monkeypatch.setattr(torch, "compile", compile_)
    compiled, seconds = w._compiled_reference()
    assert seconds is None and len(made) == 2  # compiled anew, as before this step existed


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

    # A build whose worker fails: the lock is let go, no figure is kept, nothing raised.
    ref.timing, ref.compile_ahead_s, ref.compile_wanted = None, None, True

    def lost(op, *args, **kw):
        raise WorkerFailure("crash", "the worker died", op=op)

    monkeypatch.setattr(ref.worker, "call", lost)
    v._compile_ahead(ref)
    with ref.lock:  # taken once the thread let it go
        assert ref.compile_ahead_s is None


def test_no_build_starts_while_the_reference_is_being_timed_or_is_timed(prepared, monkeypatch):
    v, ref = prepared
    asked: list[str] = []
    monkeypatch.setattr(ref.worker, "call", lambda op, *a, **k: asked.append(op) or {"seconds": 1.0})
    ref.compile_wanted = True
    with ref.lock:  # the timing (or the vary probe) holds it: it compiles there itself
        v._compile_ahead(ref)
    assert ref.compile_wanted and asked == []
    ref.timing = {"eager_ms": 1.0}
    v._compile_ahead(ref)
    with ref.lock:
        assert asked == [] and not ref.lock.acquire(blocking=False)


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
