"""The tuning pass on a GPU: variants of a passing kernel are verified and timed in full."""

from __future__ import annotations

from pathlib import Path

from autotriton_jupyter import tuning
from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import Verifier, VerifyOptions

ROOT = Path(__file__).resolve().parents[2]


def test_tuning_add_relu_verifies_every_variant_and_never_picks_a_failing_one():
    task = Task.from_file(ROOT / "examples/gpu_tasks/add_relu.py")
    cand = Candidate.from_file(ROOT / "examples/candidates/add_relu/pass_masked.py")
    with Verifier(VerifyOptions(device="cuda", trials=1, seed=5)) as v:
        original = v.verify(task, cand)
        assert original.verdict == "pass" and original.timing
        got = tuning.tune(cand, original, lambda cs: v.verify_many(task, cs), limit=6)
    print(got.summary())
    assert got.tried and not got.skipped
    halved = [t for t in got.tried if "-> 512" in t.variant.describe()]
    assert halved and all(t.verdict == "fail" and t.ms is None for t in halved)  # half the grid
    assert all(t.ms is not None for t in got.tried if t.verdict == "pass")
    if got.best is not None:
        assert got.best.verdict == "pass" and got.best.ms < got.original_ms
