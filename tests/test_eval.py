"""`autotriton eval`: exact counts on known candidates, resume, broken tasks, and a real model run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autotriton_jupyter.cli import main
from autotriton_jupyter.evaluation import EvalOptions, pass_at_k, run_eval
from autotriton_jupyter.model.generator import GenerationParams
from autotriton_jupyter.task import TaskError
from autotriton_jupyter.verify import VerifyOptions

EXAMPLES = Path(__file__).parent.parent / "examples"


def opts(out: Path, **kw) -> EvalOptions:
    return EvalOptions(
        out_dir=str(out),
        candidates_dir=str(EXAMPLES / "candidates"),
        verify=VerifyOptions(device="cpu", seed=3, timing=False),
        **kw,
    )


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "full"
    return out, run_eval(EXAMPLES / "tasks", opts(out))


def test_known_candidates_give_exactly_the_expected_counts(full):
    out, s = full
    expected_pass = {
        "add_relu": {"pass_masked.py"},
        "row_sum": {"pass_loop.py"},
        "softmax": {"rowwise.py"},
    }
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(lines) == s["candidates"] == 9
    for r in lines:
        assert (r["report"]["verdict"] == "pass") == (r["candidate"] in expected_pass[r["task"]])
    assert (s["correct"], s["tasks_with_a_correct_candidate"], s["compiled"]) == (3, 3, 9)
    assert s["pass_at_k"] == {"1": 0.4, "2": 0.8}
    assert s["failed_checks"] == {"correctness": 3, "launches": 2, "torch_ops": 2, "stale_cache": 1}
    assert s["fast_1_vs_eager"] is None and s["geomean_speedup_vs_eager"] is None  # no GPU
    assert "pass@1 | 0.400" in (out / "summary.md").read_text()
    assert "<svg" in (out / "report.html").read_text()


def test_resume_skips_finished_work_and_gives_the_same_numbers(full, tmp_path):
    out_full, s_full = full
    out = tmp_path / "resumed"
    out.mkdir()
    first = (out_full / "results.jsonl").read_text().splitlines()[:2]
    (out / "results.jsonl").write_text("\n".join(first) + '\n{"task": "softm')  # killed mid-write
    s = run_eval(EXAMPLES / "tasks", opts(out, resume=True))
    assert s["skipped_as_done"] == 2
    for key in ("candidates", "correct", "compiled", "ran", "pass_at_k", "failed_checks"):
        assert s[key] == s_full[key], key
    with pytest.raises(TaskError, match="pass --resume"):
        run_eval(EXAMPLES / "tasks", opts(out))


def test_a_broken_task_is_recorded_and_the_run_goes_on(tmp_path):
    tasks = tmp_path / "tasks"
    shutil.copytree(EXAMPLES / "tasks", tasks)
    (tasks / "broken.py").write_text("class Model(:\n")
    s = run_eval(tasks, opts(tmp_path / "out"))
    assert "broken" in s["task_errors"] and "not valid Python" in s["task_errors"]["broken"]
    assert s["correct"] == 3 and s["tasks"] == 4


def test_the_tiny_model_run_completes(tmp_path):
    from autotriton_jupyter.model.registry import ModelOptions, load

    gen = load("tiny", ModelOptions(n_ctx=4096))
    o = EvalOptions(
        out_dir=str(tmp_path / "m"),
        n=1,
        params=GenerationParams(max_tokens=48, seed=1),
        verify=VerifyOptions(device="cpu", seed=3, timing=False),
    )
    s = run_eval(EXAMPLES / "tasks", o, gen)
    assert s["candidates"] == 3 and s["correct"] <= s["ran"] <= s["compiled"] <= 3
    assert set(s["per_task"]) == {"add_relu", "row_sum", "softmax"}


def test_pass_at_k_estimator():
    assert pass_at_k(10, 0, 1) == 0.0 and pass_at_k(10, 10, 5) == 1.0
    assert abs(pass_at_k(5, 1, 2) - 0.4) < 1e-12 and pass_at_k(2, 1, 2) == 1.0


def test_cli_eval(tmp_path, capsys):
    code = main(
        [
            "eval",
            str(EXAMPLES / "tasks"),
            "--candidates",
            str(EXAMPLES / "candidates"),
            "--out",
            str(tmp_path / "cli"),
            "--device",
            "cpu",
            "--json",
            "-q",
        ]
    )
    assert code == 0 and json.loads(capsys.readouterr().out)["correct"] == 3
    assert main(["eval", str(tmp_path / "nowhere"), "--candidates", "x", "-q"]) == 2
