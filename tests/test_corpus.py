"""Every corpus candidate gets the verdict its header expects, for the reason it expects."""

from __future__ import annotations

import pytest

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions
from tests.conftest import corpus_cases, expectation

CASES = corpus_cases()


@pytest.fixture(scope="module")
def verifier():
    with Verifier(VerifyOptions(device="cpu", seed=1234, timing=False)) as v:
        yield v


@pytest.mark.parametrize(
    "task_path,cand_path", CASES, ids=[f"{t.parent.name}/{c.stem}" for t, c in CASES]
)
def test_corpus_verdict(verifier, task_path, cand_path):
    verdict, checks = expectation(cand_path)
    report = verifier.verify(Task.from_file(task_path), Candidate.from_file(cand_path))
    failed = {c.name for c in report.failed()}
    detail = "\n".join(f"{c.name}: {c.message}" for c in report.failed())
    assert report.verdict == verdict, f"expected {verdict}, got {report.verdict}:\n{detail}"
    if verdict in ("fail", "conditional"):
        assert failed & checks, f"expected a failure of {checks}, got:\n{detail}"
        for c in report.failed():
            assert c.message, f"check {c.name} failed without saying why"
    else:
        assert report.correctness and report.correctness["runs"] >= 6
        assert report.kernels, "a passing candidate must have launched its own kernels"
        assert report.timing is None and report.interpreted


def test_corpus_covers_every_verify_item(corpus):
    """At least one cheating candidate per VERIFY.md item 1-16 (items 14 live in their own tasks)."""
    names = {p.stem for p in corpus.glob("*/cheat*.py")}
    numbered = {int(n[5:7]) for n in names if n[5:7].isdigit()}
    assert set(range(1, 17)) - {14} <= numbered
    assert (corpus / "relu_nonneg" / "fail_identity.py").exists()
    assert (corpus / "tiny_output" / "task.py").exists()
