"""Verification overlapped with generation (issue 14): a sample is judged as soon as it is
complete, while later samples are still being generated; a broken reference stops generation."""

from __future__ import annotations

import threading

import pytest

from autotriton_jupyter.config import TritonizeOptions
from autotriton_jupyter.model.generator import Completion, Event
from autotriton_jupyter.pipeline import tritonize
from autotriton_jupyter.task import Task, TaskError
from autotriton_jupyter.verify import Verifier, VerifyOptions


def fenced(path) -> str:
    return "Here is the kernel.\n```python\n" + path.read_text() + "```\n"


class SlowSecondSample:
    """Stands in for a model (tests only): sample 1 is done at once; sample 2 is "still
    generating" until the pipeline reports sample 1's verdict, or a timeout passes."""

    name = "slow-second"

    def __init__(self, texts: list[str], events: list) -> None:
        self.texts, self.events = texts, events
        self.verdict_seen_while_generating = threading.Event()
        self.saw_cancel = False

    def generate(self, chats, n, params, on_event=None, cancel=None):
        out = []
        for i, text in enumerate(self.texts[:n]):
            if i == 1:
                for _ in range(1200):  # up to 120 s for sample 1's verdict
                    if cancel is not None and cancel.cancelled:
                        self.saw_cancel = True
                        return out
                    if any(e.kind == "verified" and e.sample == 0 for e in self.events):
                        self.verdict_seen_while_generating.set()
                        break
                    threading.Event().wait(0.1)
            on_event(Event("done", sample=i, tokens=10, message="stop", text=text))
            out.append(Completion(text, 10, "stop", 0.01, chat=0, sample=i))
        return out


@pytest.fixture(scope="module")
def verifier():
    with Verifier(VerifyOptions(device="cpu", seed=31, timing=False)) as v:
        yield v


def test_a_complete_sample_is_judged_while_others_generate(verifier, corpus):
    task = Task.from_file(corpus / "add_relu" / "task.py")
    events: list = []
    gen = SlowSecondSample(
        [fenced(corpus / "add_relu" / "pass_masked.py"), fenced(corpus / "add_relu" / "fail_sub.py")],
        events,
    )
    res = tritonize(
        task,
        gen,
        TritonizeOptions(n=2, verify=verifier.options),
        verifier=verifier,
        on_event=events.append,
    )
    assert gen.verdict_seen_while_generating.is_set()
    verdicts = {c.sample: c.report.verdict for c in res.candidates}
    assert verdicts == {0: "pass", 1: "fail"}
    # Each sample was judged once: the early verdict was used, not judged again.
    assert sorted(e.sample for e in events if e.kind == "verified") == [0, 1]


def test_a_broken_reference_stops_generation(verifier, tmp_path, corpus):
    src = (corpus / "add_relu" / "task.py").read_text()
    src = src.replace(
        "def forward(self, x, y):",
        "def forward(self, x, y):\n        raise ValueError('broken reference')",
    )
    broken = Task.from_cell(src, name="broken")
    gen = SlowSecondSample([fenced(corpus / "add_relu" / "pass_masked.py")] * 2, [])
    with pytest.raises(TaskError, match="broken reference"):
        tritonize(broken, gen, TritonizeOptions(n=2, verify=verifier.options), verifier=verifier)
    assert gen.saw_cancel


class Instant:
    """Stands in for a model (tests only): every sample is done at once, from a script of
    answers per generate() call."""

    name = "instant"

    def __init__(self, rounds: list[list[str]]) -> None:
        self.rounds, self.calls = rounds, 0

    def generate(self, chats, n, params, on_event=None, cancel=None):
        texts = self.rounds[self.calls][: len(chats) * n]
        self.calls += 1
        out = []
        for i, text in enumerate(texts):
            on_event(Event("done", sample=i, tokens=10, message="stop", text=text))
            out.append(Completion(text, 10, "stop", 0.01, chat=0, sample=i))
        return out


@pytest.fixture
def judgings(verifier, monkeypatch):
    """The codes the verifier was asked to judge (the real verifier judges them)."""
    asked: list[str] = []
    real = verifier.verify

    def spy(task, candidate, **kw):
        asked.append(candidate.source)
        return real(task, candidate, **kw)

    monkeypatch.setattr(verifier, "verify", spy)
    return asked


def test_the_same_code_twice_is_judged_once_and_each_sample_gets_its_verdict(verifier, corpus, judgings):
    d = corpus / "add_relu"
    good, bad = fenced(d / "pass_masked.py"), fenced(d / "fail_sub.py")
    commented = good.replace("```python\n", "```python\n# the same kernel, with a comment\n", 1)
    events: list = []
    res = tritonize(
        Task.from_file(d / "task.py"),
        Instant([[good, good, bad, commented, bad]]),
        TritonizeOptions(n=5, verify=verifier.options),
        verifier=verifier,
        on_event=events.append,
    )
    # Three different texts, three judgings; a comment makes another text, judged on its own.
    assert len(judgings) == 3 and len(set(judgings)) == 3
    by = {c.sample: c.report for c in res.candidates}
    assert [by[i].verdict for i in range(5)] == ["pass", "pass", "fail", "pass", "fail"]
    assert [by[i].candidate for i in range(5)] == [f"round1-sample{i + 1}" for i in range(5)]
    copies = {i for i in range(5) if any("character for character" in n for n in by[i].notes)}
    assert copies == {1, 4}
    assert any("round1-sample1" in n for n in by[1].notes)
    assert any("round1-sample3" in n for n in by[4].notes)
    assert by[4].reasons == by[2].reasons and by[1].correctness == by[0].correctness
    assert by[1] is not by[0]  # a copy: the library and the view may change one alone
    assert sorted(e.sample for e in events if e.kind == "verified") == [0, 1, 2, 3, 4]


def test_a_sample_with_the_same_code_hears_the_first_verdict_whenever_it_comes():
    """The first verdict ("checked") only comes with timing on a GPU: its relay to the
    samples that wrote the same code, before and after it came; and the verdict, which a
    front end's error does not keep from them."""
    from concurrent.futures import Future

    from autotriton_jupyter.pipeline.run import _Judging
    from autotriton_jupyter.verify import Report

    j = _Judging("round1-sample1")
    j.future = Future()
    heard: list[tuple[str, str]] = []

    def broken_view(rep):
        heard.append(("verified", rep.verdict))
        raise RuntimeError("the view broke")

    early = j.follow(lambda m: heard.append(("early", m)), lambda rep: rep, broken_view)
    assert heard == [] and not early.done()
    j.on_checked("correct; timing")
    late = j.follow(lambda m: heard.append(("late", m)), lambda rep: rep, broken_view)
    assert heard == [("early", "correct; timing"), ("late", "correct; timing")]
    early.cancel()  # an interrupted run cancels what it waits for
    rep = Report()
    j.future.set_result(rep)
    assert late.result() is rep and early.cancelled()
    assert heard[2:] == [("verified", "fail")]  # only the sample still waiting
    failed = _Judging("round1-sample2")
    failed.future = Future()
    follower = failed.follow(lambda m: None, lambda rep: rep, lambda rep: None)
    failed.future.set_exception(RuntimeError("the reference broke"))
    with pytest.raises(RuntimeError, match="the reference broke"):
        follower.result()


def test_a_judging_that_may_have_failed_through_the_machine_is_not_reused():
    from concurrent.futures import Future

    from autotriton_jupyter.pipeline.run import _Judging
    from autotriton_jupyter.verify import Report

    def judged(check: str) -> _Judging:
        j = _Judging("round1-sample1")
        j.future = Future()
        r = Report()
        r.add(check, "fail", "what happened")
        j.future.set_result(r.finish())
        return j

    assert judged("correctness").reusable()
    assert not judged("timeout").reusable() and not judged("lost").reusable()
    running = _Judging("round1-sample1")
    running.future = Future()
    assert running.reusable()  # a judging under way: its copies wait for it
    running.future.cancel()
    assert not running.reusable()


def test_a_repair_that_gives_back_the_same_code_is_not_judged_again(verifier, corpus, judgings):
    d = corpus / "add_relu"
    bad = fenced(d / "fail_sub.py")
    res = tritonize(
        Task.from_file(d / "task.py"),
        Instant([[bad], [bad]]),
        TritonizeOptions(n=1, rounds=1, verify=verifier.options),
        verifier=verifier,
    )
    assert len(judgings) == 1
    first, repair = sorted(res.candidates, key=lambda c: c.round)
    assert repair.round == 1 and repair.report.verdict == "fail"
    assert repair.report.reasons == first.report.reasons
    assert any("round1-sample1" in n for n in repair.report.notes)


class _LostOnce:
    """The real verifier, whose first judging is reported as a worker that ran out of time
    under load (tests only: a timeout that is the machine's, not the code's)."""

    def __init__(self, real) -> None:
        self.real, self.calls = real, 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    def verify(self, task, candidate, **kw):
        self.calls += 1
        if self.calls == 1:
            from autotriton_jupyter.verify import Report

            r = Report(candidate=candidate.name)
            r.add("timeout", "fail", "Running the candidate did not finish within 60 s and was stopped.")
            return r.finish()
        return self.real.verify(task, candidate, **kw)


def test_samples_that_copied_a_judging_the_machine_failed_are_judged_again(verifier, corpus):
    d = corpus / "add_relu"
    good = fenced(d / "pass_masked.py")
    lost = _LostOnce(verifier)
    res = tritonize(
        Task.from_file(d / "task.py"),
        Instant([[good, good, good]]),
        TritonizeOptions(n=3, verify=verifier.options),
        verifier=lost,
    )
    by = {c.sample: c.report for c in res.candidates}
    # The first sample keeps its own (timed-out) judging; the two that copied it get one more,
    # shared between them.
    assert lost.calls == 2
    assert [by[i].verdict for i in range(3)] == ["fail", "pass", "pass"]


def test_an_interrupt_stops_the_judgings_under_way_and_keeps_the_verdicts_given(corpus):
    """Ctrl-C while candidates are judged: a judging under way stops at once (its worker is
    killed; a candidate that hangs would otherwise hold the run until its timeout), and
    its sample, with the samples that wrote the same code, is marked interrupted, not
    failed; a verdict given before the interrupt is kept. The reference stays usable."""
    import time

    from autotriton_jupyter.model.generator import Cancel

    d = corpus / "add_relu"
    good = fenced(d / "pass_masked.py")
    hangs = fenced(corpus / "crash" / "cheat_hang.py")
    interrupt = Cancel()  # the user's Ctrl-C
    judged_first = threading.Event()

    class InterruptedWhileJudging:
        name = "interrupted"

        def generate(self, chats, n, params, on_event=None, cancel=None):
            on_event(Event("done", sample=0, tokens=1, message="stop", text=good))
            assert judged_first.wait(300)  # sample 1's verdict is in
            for i in (1, 2):  # the same hanging code twice: one judging, and a copy of it
                on_event(Event("done", sample=i, tokens=1, message="stop", text=hangs))
            threading.Event().wait(1.0)  # its judging is under way
            interrupt.set()
            return [
                Completion(good, 1, "stop", 0.01, chat=0, sample=0),
                *(Completion(hangs, 1, "stop", 0.01, chat=0, sample=i) for i in (1, 2)),
            ]

    verified: list[int] = []

    def on_event(e) -> None:
        if e.kind == "verified":
            verified.append(e.sample)
            if e.sample == 0:
                judged_first.set()

    options = VerifyOptions(device="cpu", seed=31, timing=False, timeout=300)
    v = Verifier(options)  # its own (not a view): an interrupt must not outlive its run
    t0 = time.monotonic()
    res = tritonize(
        Task.from_file(d / "task.py"),
        InterruptedWhileJudging(),
        TritonizeOptions(n=3, verify=options),
        verifier=v,
        on_event=on_event,
        cancel=interrupt,
    )
    took = time.monotonic() - t0
    assert res.cancelled
    by = {c.sample: c.report for c in res.candidates}
    assert by[0].verdict == "pass"
    for i in (1, 2):
        assert [(c.name, c.status) for c in by[i].checks] == [("judging", "inconclusive")], by[i].reasons
        assert "interrupted before this sample was judged" in by[i].reasons[0]["message"]
    assert took < 120  # not its 300 s timeout
    assert verified == [0]  # the stopped judging and its copy told no verdict
    # The verifier goes on: the next verify on it is judged to the end.
    from autotriton_jupyter.task import Candidate

    try:
        again = v.verify(Task.from_file(d / "task.py"), Candidate.from_file(d / "pass_masked.py"))
    finally:
        v.close()
    assert again.verdict == "pass", again.reasons
