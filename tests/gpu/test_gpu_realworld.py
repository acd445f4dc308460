"""On a real GPU: the real-world corpus (tests/realworld) gets its expected verdicts, gpu-only cases too."""

from __future__ import annotations

import pytest

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions
from tests.test_realworld import CASES, _header


@pytest.fixture(scope="module")
def verifier():
    with Verifier(VerifyOptions(device="cuda", seed=17)) as v:
        yield v


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_realworld_on_gpu(verifier, case):
    expect = _header(case).get("expect", "pass").split()[0]
    report = verifier.verify(Task.from_file(case / "task.py"), Candidate.from_file(case / "kernel.py"))
    detail = "\n".join(f"{c['check']}: {c['message']}" for c in report.reasons)
    assert report.verdict == expect, detail
    assert report.sandboxed
    t = report.timing or {}
    print(f"{case.name}: {report.verdict}, candidate {t.get('candidate_ms')} ms, "
          f"eager {t.get('eager_ms')} ms, compile {t.get('compile_ms')} ms")
    if t.get("candidate_ms") is None:  # why there are no figures
        print("  notes:", "; ".join(report.notes)[:600])
