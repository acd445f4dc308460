"""`autotriton generate`'s room (pipeline/samples.py), driven directly: answers from a real
replaying model become Attempts made as the tritonize loop makes them, and are written
whole, with a summary, without mixing with an earlier run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotriton_jupyter.model.backends.replay import ReplayGenerator
from autotriton_jupyter.model.generator import Completion, GenerationParams
from autotriton_jupyter.pipeline import Attempt
from autotriton_jupyter.pipeline.samples import (
    earlier_samples,
    generate_candidates,
    sample_record,
    write_samples,
)
from autotriton_jupyter.task import Task, TaskError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    folder = tmp_path / "answers"
    folder.mkdir()
    (folder / "a.py").write_text((ROOT / "examples/candidates/add_relu/pass_masked.py").read_text())
    (folder / "b.md").write_text("I think the answer is to use torch.\n\nNo code here, sorry.")
    return folder


def test_answers_become_attempts_and_are_written_with_a_summary(tmp_path, answers):
    task = Task.from_file(ROOT / "examples/tasks/add_relu.py")
    got = generate_candidates(task, ReplayGenerator(str(answers)), 2, GenerationParams(max_tokens=64))
    assert [type(a) for a in got] == [Attempt, Attempt] and [a.sample for a in got] == [0, 1]
    assert got[0].code and "class ModelNew" in got[0].code and got[0].problem is None
    assert got[1].code is None and "no code block" in got[1].problem
    assert got[0].chat and got[0].chat[-1]["role"] == "user"  # the chat as sent is kept
    out = tmp_path / "out"
    summary, written = write_samples(got, out, "files:answers")
    data = json.loads(summary.read_text())
    assert data["model"] == "files:answers" and data["samples"] == written
    assert written[0]["code"] == str(out / "sample-1.py") and written[1]["code"] is None
    assert (out / "sample-1.py").read_text() == got[0].code
    assert (out / "sample-2.md").read_text() == got[1].completion
    assert not (out / "sample-2.py").exists()
    record = sample_record(got[0], written[0])
    assert record["code_path"] == written[0]["code"] and record["completion"]["sample"] == 1
    json.dumps(record)
    assert [p.name for p in earlier_samples(out)] == ["sample-1.md", "sample-1.py", "sample-2.md", "summary.json"]
    assert earlier_samples(tmp_path / "nothing-here") == []


def test_a_cut_off_or_interrupted_answer_is_no_candidate():
    chat = [{"role": "user", "content": "task"}]
    cut = Attempt.from_completion(Completion("```python\nclass ModelNew:\n", 9, "length", 1.0), chat)
    assert cut.code is None and cut.truncated and "cut off" in cut.problem
    stopped = Attempt.from_completion(
        Completion("```python\nclass ModelNew: pass\n```", 9, "cancelled", 1.0), chat
    )
    assert stopped.code is None and "interrupted" in stopped.problem
    assert cut.tokens_per_s == 9.0


def test_a_folder_that_cannot_be_made_is_a_clear_refusal(tmp_path, answers):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    task = Task.from_file(ROOT / "examples/tasks/add_relu.py")
    got = generate_candidates(task, ReplayGenerator(str(answers)), 1, GenerationParams(max_tokens=8))
    with pytest.raises(TaskError, match="could not be made.*-o DIR"):
        write_samples(got, blocker / "out", "m")


def test_force_leaves_no_sample_of_the_earlier_run(tmp_path, answers, capsys):
    """generate --force into a folder of an earlier run: its samples are gone, so none of
    them mixes with this run's (a replay of the folder would take them for this run's)."""
    from autotriton_jupyter.cli import main

    task = str(ROOT / "examples/tasks/add_relu.py")
    out = tmp_path / "gen"
    assert main(["generate", task, "--model", f"files:{answers}", "-n", "2", "-o", str(out), "-q"]) == 0
    assert (out / "sample-2.md").exists()
    assert main(["generate", task, "--model", f"files:{answers}", "-n", "1", "-o", str(out), "-q"]) == 2
    assert main(["generate", task, "--model", f"files:{answers}", "-n", "1", "-o", str(out), "--force", "-q"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in out.iterdir()) == ["sample-1.md", "sample-1.py", "summary.json"]
