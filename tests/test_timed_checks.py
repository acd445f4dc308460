"""The judge's side of the timed calls' checks, on the CPU: the reference's worker remakes a
timed call's varied inputs and answers with its outputs and projections, and the judge
refuses a worker's reply that leaves calls out or numbers them wrongly."""

from __future__ import annotations

import pytest
import torch

from autotriton_jupyter.task import Task
from autotriton_jupyter.verify import Verifier, VerifyOptions, fingerprint, vary
from autotriton_jupyter.verify.timed import _check_kept, _check_prints


def test_the_reference_worker_answers_for_varied_timed_calls(corpus):
    task = Task.from_file(corpus / "softmax" / "task.py")
    with Verifier(VerifyOptions(device="cpu", seed=3, timing=False)) as v:
        ref = v.prepare(task)
        assert v._vary_mode(ref) == "elements"  # asked of the reference's worker, once
        sets = [ref.sets[i]["inputs"] for i in ref.timed]
        got = ref.worker.call(
            "varied_outputs",
            60,
            "the reference",
            sets=[ref.sets[i]["worker_index"] for i in ref.timed],
            seed=11,
            calls=[[0, 5]],
            checks=[[len(sets) - 1, 9], [0, 5]],
            projection_seed=4,
            atol=1e-5,  # softmax's outputs are about 1/100: a tolerance well under them
            rtol=1e-3,
        )
    variation = vary.Variation(11, sets)
    want = torch.softmax(vary.varied_copy(sets[0], variation, 0, 5)[0], dim=1)
    torch.testing.assert_close(got["outputs"][0], want)
    assert not torch.allclose(want, torch.softmax(sets[0][0], dim=1))  # the inputs were varied
    # The candidate's projection of the same output agrees with the reference's.
    mine = [t.tolist() for t in fingerprint.Projection(4).take(want)]
    assert fingerprint.agrees(mine, got["prints"][1]) is None
    assert fingerprint.agrees(mine, got["prints"][0]) is not None  # another call's inputs


def _timing(calls: int) -> dict:
    return {"warmup": 3, "reps": calls - 6, "audited": 3, "b2b_calls": 0}


def test_every_timed_call_must_have_its_projection():
    pairs = [[0.0] * 17]
    t = _timing(10) | {"prints": [[c, 0, pairs] for c in range(10)]}
    assert _check_prints(t, 1) == {c: [0, c] for c in range(10)}
    for broken, needle in (
        ([[c, 0, pairs] for c in range(9)], "not of all 10"),  # one call left out
        ([[c, 0, pairs] for c in [*range(9), 3]], "not of all 10"),  # one twice
        ([[c, 2, pairs] for c in range(10)], "numbered wrongly"),  # no such set
        ([[c, 0, "x"] for c in range(10)], "wrong shape"),
    ):
        with pytest.raises(ValueError, match=needle):
            _check_prints(_timing(10) | {"prints": broken}, 1)


def test_the_kept_calls_are_as_many_as_asked_and_distinct():
    _check_kept([{"call": 1}, {"call": 7}], 2)
    with pytest.raises(ValueError, match="kept 1 timed calls, not 2"):
        _check_kept([{"call": 1}], 2)
    with pytest.raises(ValueError, match="twice"):
        _check_kept([{"call": 1}, {"call": 1}], 2)


def test_a_reference_that_fails_on_its_varied_timed_inputs_is_timed_with_a_weaker_variation(corpus, monkeypatch):
    """The probe meets a few draws only; if the reference then raises on the varied inputs
    while it is timed, the judge times it again with the next weaker variation, which the
    candidates then use (and their notes name), instead of failing each of them. A worker
    that died, or the weakest mode failing, is still an error."""
    from autotriton_jupyter.verify.sandbox import WorkerFailure

    task = Task.from_file(corpus / "softmax" / "task.py")
    with Verifier(VerifyOptions(device="cpu", seed=3, timing=False, reference_cache=False)) as v:
        ref = v.prepare(task)
        ref.vary_mode = "elements"
        asked: list[str] = []
        real_call = ref.worker.call

        def call(op, *args, **kw):
            if op != "time_reference":
                return real_call(op, *args, **kw)
            asked.append(kw["vary_mode"])
            if kw["vary_mode"] in ("elements", "congruent"):
                raise WorkerFailure("error", "not positive definite", op=op)
            return {"eager_ms": 1.0}

        monkeypatch.setattr(ref.worker, "call", call)
        events: list[str] = []
        v.on_event = events.append
        assert v._reference_timing(ref) == {"eager_ms": 1.0}
        assert asked == ["elements", "congruent", "tensor"] and ref.vary_mode == "tensor"
        assert any("timing again with the inputs varied by tensor" in e for e in events)

        ref.timing, ref.vary_mode = None, "none"
        monkeypatch.setattr(ref.worker, "call", lambda op, *a, **k: (_ for _ in ()).throw(
            WorkerFailure("error", "fails however it is called", op=op)))
        with pytest.raises(WorkerFailure):
            v._reference_timing(ref)
        ref.vary_mode = "elements"
        monkeypatch.setattr(ref.worker, "call", lambda op, *a, **k: (_ for _ in ()).throw(
            WorkerFailure("crash", "the worker died", op=op)))
        with pytest.raises(WorkerFailure):
            v._reference_timing(ref)
        assert ref.vary_mode == "elements"
