"""Candidates that attack the judge itself (run past the lint on purpose) cannot crash, hang or fool it."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions
from autotriton_jupyter.verify.report import FAIL, Report

ATTACKS = Path(__file__).parent / "judge_attacks"


def judge_without_lint(v: Verifier, task: Task, cand: Candidate) -> Report:
    """The runtime half of verify(): what stands when a lint rule is missing."""
    r = Report(device=v.device, interpreted=v.device == "cpu")
    ref = v.prepare(task)
    w = v.pool.acquire()
    try:
        v._judge(ref, cand, w, r)
    except Exception as e:  # what verify() turns into checks; here we want the raw signal
        r.add(getattr(e, "kind", type(e).__name__), FAIL, str(e))
    finally:
        v.pool.release(w)
    return r.finish()


@pytest.fixture(scope="module")
def setup(corpus):
    task = Task.from_file(corpus / "add_relu" / "task.py")
    honest = Candidate.from_file(corpus / "add_relu" / "pass_masked.py")
    with Verifier(VerifyOptions(device="cpu", seed=5, timeout=15, timing=False)) as v:
        yield v, task, honest


@pytest.mark.parametrize(
    "attack,expected",
    [
        ("bad_reply_shape", {"tampering", "protocol", "TypeError"}),
        ("bad_reply_value", {"protocol"}),
        ("half_message", {"timeout"}),
        ("spill_bomb", {"protocol"}),
        ("forge_reply", {"tampering"}),
        ("patch_torch", {"tampering"}),
    ],
)
def test_attacks_fail_and_the_judge_carries_on(setup, attack, expected):
    v, task, honest = setup
    r = judge_without_lint(v, task, Candidate.from_file(ATTACKS / f"{attack}.py"))
    assert r.verdict == "fail"
    assert {c.name for c in r.failed()} & expected, r.reasons
    assert v.verify(task, honest).verdict == "pass"


def test_verify_turns_malformed_replies_into_a_failing_check(setup, monkeypatch):
    """verify() itself never raises for a candidate's sake (the batch must survive)."""
    v, task, honest = setup
    from autotriton_jupyter.verify import judge

    def broken(self, ref, candidate, w, r):
        raise TypeError("'int' object is not iterable")

    monkeypatch.setattr(judge.Verifier, "_judge", broken)
    r = v.verify(task, honest)
    assert [c.name for c in r.failed()] == ["protocol"]


def test_spares_are_not_over_started(corpus):
    task = Task.from_file(corpus / "add_relu" / "task.py")
    cands = [Candidate.from_file(corpus / "add_relu" / "pass_masked.py")] * 4
    with Verifier(VerifyOptions(device="cpu", seed=8, timing=False, parallel=2)) as v:
        v.verify_many(task, cands)
        assert len(v.pool._spare) <= v.pool.spares
        assert len(v.pool._live) <= v.pool.spares + 1  # spares + the reference worker


@pytest.mark.parametrize("fixture", ["pass_masked", "fail_sub"])
def test_large_tasks_are_judged_in_parts_with_the_same_verdict(corpus, monkeypatch, fixture):
    """Inputs and outputs over PART_BYTES travel in several messages; verdicts do not change."""
    from autotriton_jupyter.verify import judge, reference, sandbox

    task = Task.from_file(corpus / "add_relu" / "task.py")
    cand = Candidate.from_file(corpus / "add_relu" / f"{fixture}.py")
    with Verifier(VerifyOptions(device="cpu", seed=9, timeout=15, timing=False)) as v:
        whole = v.verify(task, cand)
    calls: list[tuple[str, int]] = []
    real_call = sandbox.Worker.call

    def counted(self, op, *a, **kw):
        calls.append((op, len(kw.get("sets", kw.get("runs", [])))))
        return real_call(self, op, *a, **kw)

    monkeypatch.setattr(sandbox.Worker, "call", counted)
    monkeypatch.setattr(judge, "PART_BYTES", 1)  # one input set, one run per message
    monkeypatch.setattr(reference, "PART_BYTES", 1)  # the reference's sets too
    with Verifier(VerifyOptions(device="cpu", seed=9, timeout=15, timing=False)) as v:
        parts = v.verify(task, cand)
    assert parts.verdict == whole.verdict
    assert [c.name for c in parts.failed()] == [c.name for c in whole.failed()]
    trials = [n for op, n in calls if op == "trials"]
    runs = [n for op, n in calls if op == "run"]
    assert len(trials) > 3 and set(trials) == {1}
    assert runs and set(runs) == {1}
    # Where the reference's preparation went, summed over its parts, in the report that
    # waited for it: a worker, its import, drawing the sets, the forward, the messages.
    steps = {k: v for k, v in parts.seconds.items() if k.startswith("reference_")}
    # (and of the drawing, the part spent in the task's own get_inputs()).
    assert set(steps) == {
        f"reference_{k}" for k in ("worker", "load", "draw", "draw_task", "forward", "messages")
    }
    assert all(v >= 0 for v in steps.values()) and steps["reference_draw"] > 0
    assert 0 < steps.pop("reference_draw_task") <= steps["reference_draw"]
    assert sum(steps.values()) <= parts.seconds["reference"] + 0.05
    if whole.verdict == "pass":  # every set, then the repeat, refill and late runs
        assert len(runs) == parts.correctness["input_sets"] + 3
    else:  # wrong on the first set the task draws: the rest, late calls included, skipped
        assert len(runs) == 1 and any("skipped" in n for n in parts.notes)


def test_a_reference_that_hangs_on_import_is_said_to_be_still_running(tmp_path):
    """The user hears within seconds that the reference is still importing, and how to
    change the limit, not only when the limit is reached."""
    from autotriton_jupyter.task import Task, TaskError
    from autotriton_jupyter.verify import Verifier, VerifyOptions

    task = tmp_path / "hang.py"
    task.write_text(
        "import torch\nimport torch.nn as nn\nwhile True:\n    pass\n"
        "class Model(nn.Module):\n    def forward(self, x):\n        return x\n"
        "def get_inputs():\n    return [torch.randn(4)]\n"
        "def get_init_inputs():\n    return []\n"
    )
    events: list[str] = []
    with Verifier(VerifyOptions(device="cpu", timing=False, timeout=14), on_event=events.append) as v:
        with pytest.raises(TaskError, match="did not finish within 14 s"):
            v.prepare(Task.from_file(task))
    still = [e for e in events if "still running after 10 s" in e]
    assert still and "--timeout" in still[0] and "[verify]" in still[0], events


@pytest.mark.parametrize(
    "attack",
    [
        "work_where_audit_is_off__input_method_via_self",
        "work_where_audit_is_off__output_detach_via_self",
        "work_where_audit_is_off__tensor_class_patch_via_self",
    ],
)
def test_tensor_methods_a_candidate_sets_fail_at_run_time(setup, attack):
    """The lint refuses these too; without it, the worker still removes attributes set on
    tensors and sees methods of torch's classes replaced during forward."""
    v, task, honest = setup
    r = judge_without_lint(v, task, Candidate.from_file(Path(__file__).parent / "attacks" / f"{attack}.py"))
    assert r.verdict == "fail"
    assert {c.name for c in r.failed()} & {"tampering", "output_type", "WorkerFailure", "runs"}, r.reasons
    assert v.verify(task, honest).verdict == "pass"


def test_the_judge_made_sets_are_compared_while_the_worker_runs_on(corpus, monkeypatch):
    """Every run's output is compared once: a set the task draws before the next part (a
    wrong one stops the run there), the judge's own sets, the repeat and the refill on the
    judge's comparison thread while the worker runs the next part. The report is the one
    those comparisons give: here wrong only on a judge-made set."""
    import threading

    from autotriton_jupyter.verify import judge

    seen: list[tuple[str, int, int]] = []
    real = judge.Verifier._compare

    def counted(self, out, want, quick=False):
        seen.append((threading.current_thread().name, id(out), id(want)))
        return real(self, out, want, quick)

    monkeypatch.setattr(judge.Verifier, "_compare", counted)
    task = Task.from_file(corpus / "relu_nonneg" / "task.py")
    cand = Candidate.from_file(corpus / "relu_nonneg" / "fail_identity.py")
    with Verifier(VerifyOptions(device="cpu", seed=9, timeout=15, timing=False)) as v:
        r = v.verify(task, cand)
    assert {c.name: c.status for c in r.checks}["judge_inputs"] == "conditional"
    behind = [s for s in seen if s[0].startswith("autotriton-compare")]
    assert behind and len(behind) < len(seen)  # the fresh sets' on the judging thread
    outputs = {o for _, o, _ in seen}
    # Against the reference's outputs, none twice (the repeat run is compared with the
    # candidate's first output, once for each judging of the runs, as before).
    pairs = [(o, w) for _, o, w in seen if w not in outputs]
    assert len(pairs) == len(set(pairs))


def test_checks_whose_runs_a_wrong_answer_cut_short_are_skipped_not_passed(corpus):
    """A candidate wrong on the first input set stops the plan there: the repeat, refill
    and judge-made runs never ran, so their checks say so rather than `pass`."""
    task = Task.from_file(corpus / "add_relu" / "task.py")
    wrong = Candidate.from_file(corpus / "add_relu" / "fail_sub.py")
    with Verifier(VerifyOptions(device="cpu", seed=5, timeout=60, timing=False)) as v:
        r = v.verify(task, wrong)
        sets = len(next(iter(v._refs.values())).sets)
    status = {c.name: c.status for c in r.checks}
    assert r.verdict == "fail" and status["correctness"] == FAIL
    assert len(r.correctness["detail"]) < sets  # it did stop early
    for name in ("judge_inputs", "stale_cache", "repeatability"):
        assert status[name] == "skip", (name, status)
    assert "runs" not in {c["check"] for c in r.reasons}


def test_judge_inputs_is_not_called_passed_when_a_wrong_answer_hid_its_failures():
    """Wrong on a set get_inputs() drew and on two the judge made: correctness fails, the
    judge-made failures become a note that counts them, and judge_inputs is `skip`."""
    import torch

    from autotriton_jupyter.verify.reference import Reference

    want = torch.ones(8)
    labels = ["fresh-1", "fresh-2", "signed", "scaled"]
    sets = [{"label": x, "inputs": [want], "outputs": want} for x in labels]
    ref = Reference(task=None, worker=None, seed=0, init_inputs=[], state={}, sets=sets)  # type: ignore[arg-type]
    obs = dict(
        output_problem=None, launches={"k": 1}, foreign_launches=[], compute_ops={},
        host_ops={}, aliased=False, mutated=[], py_threads=0, native_threads=0, streams=[],
    )
    outs = [want, want + 1, want + 1, want + 1]  # right on fresh-1 only
    plan = [{"set": i, "slot": i, "kind": "judge-made" if i > 1 else "fresh"} for i in range(4)]
    runs = [{"obs": obs, "outputs": o} for o in outs]
    with Verifier(VerifyOptions(device="cpu", timing=False)) as v:
        r = Report()
        v._runs(ref, plan, runs, r)
    status = {c.name: c.status for c in r.checks}
    assert status["correctness"] == FAIL and status["judge_inputs"] == "skip", status
    assert "also wrong on 2 input sets the judge made" in r.notes, r.notes
