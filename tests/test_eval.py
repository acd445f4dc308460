"""`autotriton eval`: exact counts on known candidates, resume, broken tasks, and a real model run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autotriton_jupyter.cli import main
from autotriton_jupyter.evaluation import (
    EvalOptions,
    pass_at_k,
    render_html,
    render_markdown,
    run_eval,
    summarize,
)
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
    assert s["failed_checks"] == {
        # The wrong candidates are wrong on the judge's inputs too, but a candidate
        # already wrong on the task's own is not called conditional (a note says so).
        "correctness": 3,
        "launches": 2,
        "torch_ops": 2,
        "stale_cache": 1,
    }
    assert s["fast_1_vs_eager"] is None and s["geomean_speedup_vs_eager"] is None  # no GPU
    assert "pass@1 | 0.400" in (out / "summary.md").read_text()
    assert "<svg" in (out / "report.html").read_text()


def test_untimed_records_are_neither_launch_bound_nor_spread(full):
    out, s = full
    for line in (out / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        assert r["launch_bound"] is None and r["timing_spread"] is None
    assert (s["timed_tasks"], s["launch_bound_tasks"], s["launch_bound_candidates"]) == (0, [], 0)
    assert all(t["launch_bound"] is None for t in s["per_task"].values())
    assert s["excluding_launch_bound"]["fast_1_vs_eager"] is None
    assert "Launch-bound (" not in (out / "summary.md").read_text()


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


def timed(
    verdict: str, eager: float, cand: float, q: tuple[float, float] | None = None, b2b: float | None = None
) -> dict:
    """A report as the verifier writes it on a GPU (timing built by hand: no GPU here)."""
    timing = {"candidate_ms": cand, "eager_ms": eager, "compile_ms": None}
    timing |= {"speedup_vs_eager": eager / cand, "speedup_vs_compile": None}
    if q:
        timing |= {"candidate_q1_ms": q[0], "candidate_q3_ms": q[1]}
    if b2b:
        timing |= {"speedup_vs_eager_b2b": b2b, "speedup_vs_compile_b2b": None}
    return {"verdict": verdict, "checks": [], "reasons": [], "timing": timing}


GPU_RECORDS = [
    # 0.03 ms eager: launch time, whatever the candidate does.
    {"task": "tiny", "candidate": "a.py", "report": timed("pass", 0.03, 0.02)},
    # Eager is slow enough but the best candidate is not; a slower one alone would not be.
    {"task": "mid", "candidate": "a.py", "report": timed("pass", 0.5, 0.05)},
    {"task": "mid", "candidate": "b.py", "report": timed("pass", 0.5, 0.2)},
    {"task": "big", "candidate": "a.py", "report": timed("pass", 3.0, 1.0, (0.9, 1.1), b2b=2.5)},
    {"task": "failed", "candidate": "a.py", "report": {"verdict": "fail", "reasons": []}},
    {"task": "broken", "candidate": "", "error": "not valid Python"},
]


def test_launch_bound_tasks_are_counted_and_left_out_of_the_second_measures():
    s = summarize(GPU_RECORDS)
    assert s["timed_tasks"] == 3 and s["launch_bound_tasks"] == ["mid", "tiny"]
    assert s["launch_bound_candidates"] == 2  # mid/b.py (0.2 ms vs 0.5 ms) is not
    # All tasks, as KernelBench counts them: tiny 1.5x, mid 10x, big 3x, failed a miss.
    assert s["fast_1_vs_eager"] == 0.75 and s["fast_2_vs_eager"] == 0.5
    assert s["geomean_speedup_vs_eager"] == pytest.approx(45 ** (1 / 3))
    excluded = s["excluding_launch_bound"]
    assert excluded["tasks"] == 2  # big, and failed still counted as a miss
    assert excluded["fast_1_vs_eager"] == 0.5 and excluded["fast_2_vs_eager"] == 0.5
    assert excluded["fast_1_vs_compile"] == 0.0
    assert excluded["geomean_speedup_vs_eager"] == pytest.approx(3.0)
    big, failed = s["per_task"]["big"], s["per_task"]["failed"]
    assert big["launch_bound"] is False and big["timing_spread"] == pytest.approx(0.2)
    assert big["eager_ms"] == 3.0 and s["per_task"]["tiny"]["timing_spread"] is None
    assert failed["launch_bound"] is None and failed["eager_ms"] is None


def test_the_threshold_decides_what_is_launch_bound():
    s = summarize(GPU_RECORDS, launch_bound_ms=0.01)
    assert s["launch_bound_tasks"] == [] and s["launch_bound_candidates"] == 0
    excluded = s["excluding_launch_bound"]
    assert excluded["tasks"] == 4 and excluded["fast_1_vs_eager"] == s["fast_1_vs_eager"]
    assert "No timed task is launch-bound" in render_markdown(s)


def test_the_report_names_launch_bound_tasks_and_shows_spread():
    s = summarize(GPU_RECORDS)
    md = render_markdown(s)
    assert "Launch-bound (eager or candidate time under 0.1 ms per call): mid, tiny." in md
    assert "vary between runs" in md
    assert "| launch-bound tasks (under 0.1 ms) | 2 of 3 timed |" in md
    assert "| fast 1 vs eager | 0.750 |" in md
    assert "| fast 1 vs eager, excluding launch-bound | 0.500 |" in md
    assert "| big | 1 | 1 | 3.000 | not measured | 2.500 | not measured | 3.000 | 20% | no |" in md
    assert "| tiny | 1 | 1 | 1.500 | not measured | not measured | not measured | 0.030 | - | yes |" in md
    assert "| failed | 1 | 0 | not measured | not measured | not measured | not measured | - | - | - |" in md
    # Device time (calls back to back): only big beats eager by it.
    assert "| fast 1 vs eager, back to back | 0.250 |" in md
    assert "| geomean speedup vs eager, back to back | 2.500 |" in md
    page = render_html(s)
    assert "tiny (launch-bound)" in page and "mid, tiny. Their speedups measure" in page


def test_a_killed_eval_keeps_the_finished_candidates_of_the_task_in_flight(tmp_path):
    """Each record is written when its candidate is judged, not when its task ends."""
    import os
    import signal
    import subprocess
    import sys
    import time

    tasks, cands = tmp_path / "tasks", tmp_path / "cands"
    tasks.mkdir()
    shutil.copy(EXAMPLES / "tasks" / "add_relu.py", tasks)
    shutil.copytree(EXAMPLES / "candidates" / "add_relu", cands / "add_relu")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "autotriton_jupyter", "eval", str(tasks), "--candidates",
            str(cands), "--out", str(out), "--device", "cpu", "--no-timing", "-q"]
    p = subprocess.Popen(argv, cwd=Path(__file__).parent.parent, start_new_session=True)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and p.poll() is None:
        if results.exists() and len(results.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    kept = [json.loads(x)["candidate"] for x in results.read_text().splitlines() if x.endswith("}")]
    assert 2 <= len(kept) < 5, kept  # killed during the task, with some of it written
    s = run_eval(tasks, EvalOptions(out_dir=str(out), candidates_dir=str(cands), resume=True,
                                    verify=VerifyOptions(device="cpu", seed=3, timing=False)))
    assert s["skipped_as_done"] == len(kept)
    names = [json.loads(x)["candidate"] for x in results.read_text().splitlines()]
    assert sorted(names) == sorted(f.name for f in (cands / "add_relu").glob("*.py"))
    assert s["correct"] == 1 and s["candidates"] == 5


def test_a_model_run_resumed_mid_task_samples_only_what_is_missing(tmp_path):
    from autotriton_jupyter.model.registry import ModelOptions, load

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    shutil.copy(EXAMPLES / "tasks" / "row_sum.py", tasks)
    replay = tmp_path / "replay"
    replay.mkdir()
    shutil.copy(EXAMPLES / "candidates" / "row_sum" / "pass_loop.py", replay)
    out = tmp_path / "out"
    out.mkdir()
    earlier = {"task": "row_sum", "candidate": "round1-sample1", "source": "m",
               "report": {"verdict": "fail", "checks": [], "reasons": [], "timing": None}}
    (out / "results.jsonl").write_text(json.dumps(earlier) + "\n")
    gen = load(f"files:{replay}", ModelOptions())
    o = EvalOptions(out_dir=str(out), n=3, resume=True,
                    verify=VerifyOptions(device="cpu", seed=3, timing=False))
    s = run_eval(tasks, o, gen)
    names = [json.loads(x)["candidate"] for x in (out / "results.jsonl").read_text().splitlines()]
    assert names[0] == "round1-sample1" and sorted(names[1:]) == ["round1-sample2", "round1-sample3"]
    assert s["candidates"] == 3 and s["correct"] == 2


def test_an_untimed_run_says_once_why_it_has_no_speed_measures():
    """On the CPU nothing is timed: one line says why, instead of a row of "not measured"
    for every fast_p and geomean."""
    records = [{"task": "t", "candidate": "a.py", "report": {"verdict": "pass", "checks": [], "reasons": []}}]
    md = render_markdown(summarize(records))
    assert "no passing candidate was timed (timing runs on a GPU only" in md
    assert "fast 1 vs eager" not in md and "launch-bound tasks" not in md
    assert "| pass@1 | 1.000 |" in md
