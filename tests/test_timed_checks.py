"""The judge's side of the timed calls' checks, on the CPU: the reference's worker remakes a
timed call's varied inputs and answers with its outputs and projections, and the judge
refuses a worker's reply that leaves calls out or numbers them wrongly."""

from __future__ import annotations

import pytest
import torch

from autotriton_jupyter.task import Task
from autotriton_jupyter.verify import Verifier, VerifyOptions, checks, fingerprint, timed, vary
from autotriton_jupyter.verify.timed import _check_kept, _check_prints


def test_the_reference_worker_judges_the_kept_timed_calls_where_its_outputs_are(corpus):
    """The reference's worker remakes the varied inputs of the kept calls, compares the
    candidate's outputs with its own there (only the verdicts come back), and projects the
    checked calls' outputs."""
    task = Task.from_file(corpus / "softmax" / "task.py")
    with Verifier(VerifyOptions(device="cpu", seed=3, timing=False)) as v:
        ref = v.prepare(task)
        assert v._vary_mode(ref) == "elements"  # asked of the reference's worker, once
        sets = [ref.sets[i]["inputs"] for i in ref.timed]
        variation = vary.Variation(11, sets)
        want = torch.softmax(vary.varied_copy(sets[0], variation, 0, 5)[0], dim=1)
        unvaried = torch.softmax(sets[0][0], dim=1)
        assert not torch.allclose(want, unvaried)  # the inputs are varied
        got = ref.worker.call(
            "varied_outputs",
            60,
            "the reference",
            sets=[ref.sets[i]["worker_index"] for i in ref.timed],
            seed=11,
            calls=[[0, 5], [0, 6]],
            # The right output of call 5; for call 6, call 5's (kept from another call).
            candidate=[want.clone(), want.clone()],
            checks=[[len(sets) - 1, 9], [0, 5]],
            projection_seed=4,
            atol=1e-5,  # softmax's outputs are about 1/100: a tolerance well under them
            rtol=1e-3,
        )
    right, stale_copy = got["kept"]
    assert right == {"ok": True, "message": "", "finite": True, "stale": False}
    assert not stale_copy["ok"] and "differs from the reference in" in stale_copy["message"]
    assert not stale_copy["stale"]  # the reference's own output moves with the variation
    # The candidate's projection of the same output agrees with the reference's.
    mine = [t.tolist() for t in fingerprint.Projection(4).take(want)]
    assert fingerprint.agrees(mine, got["prints"][1]) is None
    assert fingerprint.agrees(mine, got["prints"][0]) is not None  # another call's inputs


def test_only_outputs_laid_out_as_the_reference_reach_its_worker(corpus, monkeypatch):
    """A kept output of another layout (deeply nested lists, another dtype, a tuple where
    the reference returns a tensor) is wrong whatever its values: it never travels to the
    reference's worker, which could otherwise be made to fail (and a failure there means
    no check of the timed outputs), and the judge says what is wrong with it."""
    task = Task.from_file(corpus / "softmax" / "task.py")
    with Verifier(VerifyOptions(device="cpu", seed=3, timing=False)) as v:
        ref = v.prepare(task)
        v._vary_mode(ref)
        sets = [ref.sets[i]["inputs"] for i in ref.timed]
        right = torch.softmax(vary.varied_copy(sets[0], vary.Variation(11, sets), 0, 5)[0], dim=1)
        deep: list = []
        for _ in range(2000):
            deep = [deep]
        outputs = [right, deep, right.double(), (right,)]
        kept = [{"set": ref.timed[0], "position": 0, "call": 5 + i, "outputs": o} for i, o in enumerate(outputs)]
        kept[0]["call"] = 5
        sent: list = []
        real_call = ref.worker.call

        limits: list[float] = []

        def call(op, *a, **kw):
            sent.extend(kw.get("candidate", []))
            limits.append(a[0])
            return real_call(op, *a, **kw)

        monkeypatch.setattr(ref.worker, "call", call)
        got = v._varied_reference(ref, kept, 11, [], 4)
        # Its time limit grows with what it may compare on its CPU (4 calls, 3 passes each).
        extra = limits[0] - v.options.timeout
        assert extra == pytest.approx(3 * 4 * right.numel() * 4 / timed.CPU_COMPARE_BYTES_S)
    assert not isinstance(got, str)
    verdicts, _ = got
    assert sent[0] is kept[0]["outputs"] and sent[1:] == [None, None, None]
    assert verdicts[0]["ok"] and not any(x["ok"] for x in verdicts[1:])
    assert "forward returned a tuple" in verdicts[1]["message"]  # a list, 2000 deep
    assert "dtype torch.float64" in verdicts[2]["message"]
    assert "tuple" in verdicts[3]["message"]
    assert checks.layout_problem((right,), (right,)) is None
    assert checks.layout_problem([right], (right,)) is None
    # Sizes may differ (an output shaped by its input's values): compare judges them.
    assert checks.layout_problem(right[:1], right) is None
    assert "3 dimensions" in checks.layout_problem(right[None], right)
    assert "output 1 is not a tensor" in checks.layout_problem((right, "x"), (right, right))


def test_a_reference_returning_a_named_tuple_has_its_timed_outputs_judged():
    """The reference's own output, compared in its worker, may be a named tuple: the
    comparison takes it as a tuple (a wrong kept output still fails there)."""
    import collections

    pair = collections.namedtuple("pair", "a b")
    x = torch.rand(8, 8, generator=torch.Generator().manual_seed(4)) + 1
    want, base = pair(x, x * 2), pair(x * 3, x * 4)
    assert checks.kept_call((x.clone(), x * 2), want, base, 1e-3, 1e-3)["ok"]
    wrong = checks.kept_call((x.clone(), x * 5), want, base, 1e-3, 1e-3)
    assert not wrong["ok"] and "output 1 differs" in wrong["message"]
    quiet = checks.kept_call((x.clone(), x * 5), want, base, 1e-3, 1e-3, explain=False)
    assert not quiet["ok"] and quiet["message"] == ""


def test_a_kept_call_is_stale_where_the_variation_hardly_moves_the_reference():
    base = torch.rand(16, 16, generator=torch.Generator().manual_seed(1)) + 1
    got = checks.kept_call(base.clone(), base * 1.0001, base, 1e-2, 1e-2)
    assert got["ok"] and got["stale"] and got["finite"]
    nan = base.clone()
    nan[0, 0] = float("nan")
    assert not checks.kept_call(nan.clone(), nan, base, 1e-2, 1e-2)["finite"]
    wrong = checks.kept_call(torch.zeros_like(base), base * 0.5, base, 1e-2, 1e-2)
    assert not wrong["ok"] and not wrong["stale"] and "max abs error" in wrong["message"]


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


class _Judge:
    """The Verifier's steps after timing (TimedChecks) with the real comparison, and no
    worker: what `_timing` decides from a candidate's timed calls and the reference's."""

    from autotriton_jupyter.verify.timed import TimedChecks as _T

    _timing = _T._timing
    _timed_problem = _T._timed_problem

    def __init__(self) -> None:
        from autotriton_jupyter.verify.judge import Verifier

        self.options = VerifyOptions(device="cpu")
        self.device = "cpu"
        self._compare = Verifier._compare.__get__(self)
        self._allowed = Verifier._allowed.__get__(self)

    def _tampering(self, changed, r) -> None:
        assert not changed

    def _observation(self, obs, where, r, first=True) -> None:
        pass


def _decide(timed_out: torch.Tensor, ref_timed: torch.Tensor, base: torch.Tensor, *, printed=None,
            ref_printed=None):
    """The report `_timing` writes for one kept timed call (the candidate's output
    `timed_out`, the reference's on the same varied inputs `ref_timed`, the reference's on
    the unvaried set `base`) and one projected call."""
    from types import SimpleNamespace

    from autotriton_jupyter.verify.report import Report

    proj = fingerprint.Projection(5)
    want_print = proj.reference(ref_printed if ref_printed is not None else ref_timed, 1e-2, 1e-2)
    got_print = [t.tolist() for t in proj.take(printed if printed is not None else timed_out)]
    t = {"median_ms": 1.0, "wall_median_ms": 1.1, "reps": 10, "warmup": 3, "audited": 2, "calls": 15,
         "b2b_ms": 0.5, "prints": [[7, 0, got_print]]}
    timed = {"timing": t, "tampered": [], "kept": [{"set": 0, "outputs": timed_out}],
             "after": {"obs": {}, "outputs": None, "set": 0}}
    ref = SimpleNamespace(sets=[{"outputs": base, "finite": bool(torch.isfinite(base).all())}], timed=[0],
                          vary_mode="elements")
    r = Report(device="cuda")
    judge = _Judge()
    o = judge.options
    kept = [checks.kept_call(timed_out, ref_timed, base, o.atol, o.rtol)]  # the reference's worker's
    judge._timing(ref, {"eager_ms": 2.0, "eager_b2b_ms": 1.0}, timed, (kept, [want_print]), r, [7])
    return r


def test_timed_outputs_right_wrong_or_unable_to_tell():
    """Right and moved by the varied inputs: a pass with figures. Wrong (kept, or a drawn
    call's projection): a failure that says so. Right but the varied output is within
    tolerance of the unvaried one: a pass with no figures, since a kept output would pass."""
    g = torch.Generator().manual_seed(0)
    base = torch.rand(64, 64, generator=g) + 1
    varied = base * 0.7
    right = _decide(varied.clone(), varied, base)
    checks = {c.name: c.status for c in right.checks}
    assert checks["timed_outputs"] == "pass" and right.failed() == []
    assert right.timing["speedup_vs_eager"] == 2.0 and right.timing["candidate_b2b_ms"] == 0.5
    kept = _decide(base.clone(), varied, base)  # an output kept from an unvaried call
    assert [c.name for c in kept.failed()] == ["timed_outputs"]
    assert "An output produced while timing was wrong" in kept.failed()[0].message
    drawn = _decide(varied.clone(), varied, base, printed=torch.zeros_like(varied))
    assert [c.name for c in drawn.failed()] == ["timed_outputs"]
    assert "Timed call 8 of 1 returned a wrong output" in drawn.failed()[0].message
    stale = _decide(base.clone(), base * 1.0001, base)
    assert {c.name: c.status for c in stale.checks}["timed_outputs"] == "pass"
    assert stale.timing is None and any("no speed figures" in n for n in stale.notes)


def test_nan_that_only_the_varied_inputs_bring_leaves_those_calls_unjudged():
    """The reference gives NaN on a timed call's varied inputs and never on the task's own:
    that call is not judged (an honest kernel may give another value there), the others
    still are, and with none left there are no figures. Where the task's own outputs
    already hold NaN, a difference is a failure."""
    g = torch.Generator().manual_seed(2)
    base = torch.rand(32, 32, generator=g) + 1
    varied = base * 0.7
    ref_nan = varied.clone()
    ref_nan[3, 4] = float("nan")
    r = _decide(varied.clone(), ref_nan, base)  # both checked calls NaN in the reference
    assert r.failed() == [] and r.timing is None
    assert any("2 of the checked timed calls were not judged" in n for n in r.notes)
    r = _decide(varied.clone(), varied, base, ref_printed=ref_nan)  # the kept call still judged
    assert r.failed() == [] and r.timing is not None
    assert any("1 of the checked timed calls were not judged" in n for n in r.notes)
    r = _decide(base.clone(), varied, base, ref_printed=ref_nan)  # and a wrong one still fails
    assert [c.name for c in r.failed()] == ["timed_outputs"]
    base_nan = base.clone()
    base_nan[0, 0] = float("nan")
    r = _decide(varied.clone(), ref_nan, base_nan)
    assert [c.name for c in r.failed()] == ["timed_outputs"]
