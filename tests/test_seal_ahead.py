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
        want = _set_ranges(plan, _plan_parts(ref, plan, "cpu"))
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
