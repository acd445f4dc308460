"""The input sets' messages are encoded once a reference is ready, in the background: the
ones every candidate is sent, no others, and a candidate encodes nothing again."""

from __future__ import annotations

import time

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions
from autotriton_jupyter.verify.judge import _plan, _plan_parts, _set_ranges


def test_the_sets_a_candidate_is_sent_are_sealed_ahead(corpus):
    task = Task.from_file(corpus / "add_relu" / "task.py")
    honest = Candidate.from_file(corpus / "add_relu" / "pass_masked.py")
    with Verifier(VerifyOptions(device="cpu", seed=4, timeout=60, timing=False, parallel=1)) as v:
        ref = v.prepare(task)
        plan = _plan(ref)
        want = [r for r in _set_ranges(plan, _plan_parts(ref, plan, "cpu")) if r is not None]
        assert want[0][0] == 0 and want[-1][1] == len(ref.sets)  # every set, once
        assert all(a[1] == b[0] for a, b in zip(want, want[1:]))
        deadline = time.monotonic() + 30
        while len(ref.sealed) < len(want) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sorted(ref.sealed) == want
        made = dict(ref.sealed)
        r = v.verify(task, honest)
        assert r.verdict == "pass", r.reasons
        assert ref.sealed == made  # the same messages were sent: none encoded again


def test_a_range_already_made_is_not_held_up_by_one_being_made(corpus, monkeypatch):
    import threading

    from autotriton_jupyter.verify import reference

    task = Task.from_file(corpus / "add_relu" / "task.py")
    with Verifier(VerifyOptions(device="cpu", seed=4, timeout=60, timing=False, parallel=1)) as v:
        ref = v.prepare(task)
        made = ref.input_sets(0, 1)
        release, entered = threading.Event(), threading.Event()
        real = reference.wire.Sealed

        def slow(value):  # an encoding that takes until the test says so
            entered.set()
            release.wait(30)
            return real(value)

        monkeypatch.setattr(reference.wire, "Sealed", slow)
        other = threading.Thread(target=ref.input_sets, args=(1, 3))
        other.start()
        assert entered.wait(10)  # sets 1-2 are being encoded now
        got = []
        t = threading.Thread(target=lambda: got.append(ref.input_sets(0, 1)))
        t.start()
        t.join(5)
        release.set()
        other.join(30)
        assert got == [made]  # returned while the other range was still being made
