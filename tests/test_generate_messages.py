"""What `autotriton generate` says: each sample's line names its problem and the files
that were written, Ctrl-C counts only the samples that finished, and a replay folder with
fewer answers than -n is pointed out."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from autotriton_jupyter.cli import main
from autotriton_jupyter.model.generator import Completion

ROOT = Path(__file__).resolve().parents[1]
TASK = str(ROOT / "examples/tasks/add_relu.py")
PASSING = (ROOT / "examples/candidates/add_relu/pass_masked.py").read_text()


def _answers(folder: Path, **files: str) -> Path:
    folder.mkdir()
    for name, text in files.items():
        (folder / name.replace("_", ".")).write_text(text)
    return folder


def test_each_line_says_the_problem_and_where_the_answer_is(tmp_path, capsys):
    answers = _answers(
        tmp_path / "answers",
        a_py=PASSING,
        b_md="Here is a helper:\n\n```python\ndef get_inputs():\n    return []\n```\n",
        c_md="I just want to know what you are using.",
    )
    out = tmp_path / "gen"
    assert main(["generate", TASK, "--model", f"files:{answers}", "-n", "3", "-o", str(out), "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(f"-> {out}/sample-1.py")  # a candidate: only its file
    assert lines[1].endswith(
        "-> no candidate (No code block defines class ModelNew.); its last code block: "
        f"{out}/sample-2.py, its answer: {out}/sample-2.md"
    )
    assert lines[2].endswith(
        f"-> no candidate (The answer has no code block.); its answer: {out}/sample-3.md"
    )
    written = json.loads((out / "summary.json").read_text())["samples"]
    assert [s["code"] for s in written] == [f"{out}/sample-1.py", f"{out}/sample-2.py", None]
    assert not (out / "sample-3.py").exists()


class _Interrupted:
    """A model that finishes `finished` answers, then is interrupted by a real SIGINT (as
    Ctrl-C sends) while it writes the next one, which comes back cancelled."""

    name = "interrupted"

    def __init__(self, finished: int) -> None:
        self.finished = finished

    def generate(self, chats, n, params, on_event=None, cancel=None):
        done = [Completion(f"```python\n{PASSING}```\n", 9, "stop", 1.0, sample=i) for i in range(self.finished)]
        os.kill(os.getpid(), signal.SIGINT)
        deadline = time.monotonic() + 10
        while not cancel.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cancel.cancelled
        return [*done, Completion("```python\nclass ModelNew", 3, "cancelled", 1.0, sample=self.finished)]


@pytest.mark.parametrize(
    "finished, said",
    [
        (0, "autotriton: interrupted; no sample had finished, so none was kept"),
        (1, "autotriton: interrupted; 1 finished sample was kept in"),
        (2, "autotriton: interrupted; 2 finished samples were kept in"),
    ],
)
def test_ctrl_c_counts_only_the_samples_that_finished(tmp_path, capsys, monkeypatch, finished, said):
    from autotriton_jupyter.model import registry

    monkeypatch.setattr(registry, "load", lambda *a, **k: _Interrupted(finished))
    out = tmp_path / "gen"
    assert main(["generate", TASK, "-n", "3", "-o", str(out), "-q"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(said), err
    if not finished:  # what this run wrote is there: a rerun needs --force
        assert "--force" in err[-1]
    codes = [s["code"] for s in json.loads((out / "summary.json").read_text())["samples"]]
    assert len(codes) == finished + 1 and codes[-1] is None


def test_a_replay_folder_with_fewer_answers_than_n_is_pointed_out(tmp_path, capsys):
    answers = _answers(tmp_path / "answers", a_py=PASSING)
    for n, repeats in [(1, None), (2, "the last sample repeats"), (3, "the last 2 samples repeat")]:
        out = tmp_path / f"gen{n}"
        assert main(["generate", TASK, "--model", f"files:{answers}", "-n", str(n), "-o", str(out), "-q"]) == 0
        err = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
        if repeats is None:
            assert err == []
            continue
        assert len(err) == 1, err
        assert f"holds only 1 answer file for -n {n}" in err[0] and repeats in err[0]
        assert "pass -n 1" in err[0] and str(answers) in err[0]


def test_tritonize_says_when_no_candidate_passed_and_its_output_file_is_not_written(tmp_path, capsys):
    failing = (ROOT / "examples/candidates/add_relu/fail_sub.py").read_text()
    answers = _answers(tmp_path / "answers", a_py=failing)
    best = tmp_path / "best.py"
    assert main(["tritonize", TASK, "--model", f"files:{answers}", "-n", "1", "--rounds", "0", "-q",
                 "--device", "cpu", "--library", str(tmp_path / "lib.sqlite"), "-o", str(best)]) == 1
    assert f"no candidate passed, so {best} was not written" in capsys.readouterr().out
    assert not best.exists()
