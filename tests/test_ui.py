"""The result view's room (ui/), driven directly with a hand-made Result and a real
library file: what the static HTML shows (and escapes), and what Accept, Insert and Retry
do, including their refusals, without a notebook or a model."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from autotriton_jupyter.pipeline import Attempt, Result
from autotriton_jupyter.store import Store
from autotriton_jupyter.task import Task
from autotriton_jupyter.ui.html import result_html, summary_line
from autotriton_jupyter.ui.widget import ResultView
from autotriton_jupyter.verify.report import FAIL, PASS, Report

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = "<script>alert(1)</script>"


def _attempt(sample: int, verdict: str, code: str | None, *, note: str = "") -> Attempt:
    r = Report(device="cpu")
    if verdict == "pass":
        r.add("correctness", PASS)
    elif verdict == "conditional":
        r.add("correctness", PASS)
        r.add("judge_inputs", "conditional", f"wrong on inputs the judge made {HOSTILE}")
    else:
        r.add("correctness", FAIL, f"Output differs {HOSTILE}")
    if note:
        r.notes.append(note)
    return Attempt(0, sample, "prompt", f"reasoning {HOSTILE}", "stop", 10, 1.0, code, None, r.finish())


@pytest.fixture
def task() -> Task:
    return Task.from_file(ROOT / "examples/tasks/add_relu.py")


@pytest.fixture
def good_code() -> str:
    return (ROOT / "examples/candidates/add_relu/pass_masked.py").read_text()


def _view(task, result, tmp_path, **kw) -> ResultView:
    return ResultView(result, task, user_ns={}, name="my_add", library=str(tmp_path / "lib.sqlite"), **kw)


def test_the_static_view_escapes_everything_the_model_or_its_findings_wrote(task, good_code):
    res = Result("add_relu", HOSTILE, [_attempt(0, "fail", good_code, note=HOSTILE)])
    page = result_html(res, task.source)
    assert HOSTILE not in page and "&lt;script&gt;" in page
    assert summary_line(res) == "no candidate passed (1 tried)"
    cond = Result("add_relu", "m", [_attempt(0, "conditional", good_code)])
    assert summary_line(cond).startswith("CONDITIONAL") and HOSTILE not in result_html(cond, task.source)


def test_accept_keeps_only_a_passing_kernel_and_a_conditional_one_after_a_second_click(
    task, good_code, tmp_path, monkeypatch
):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # no GPU: the kernel loads in the interpreter
    res = Result("add_relu", "m", [_attempt(0, "conditional", good_code), _attempt(1, "fail", good_code)])
    view = _view(task, res, tmp_path)
    assert not view.accept() and "Press Accept again" in view.status.value
    assert view.accept() and "my_add" in view.user_ns
    with Store(tmp_path / "lib.sqlite") as s:
        assert s.get("my_add").code == good_code
    view.picker.value = 1
    assert view.accept_button.disabled and not view.accept()
    assert "Only a candidate that passed" in view.status.value


def test_a_library_that_cannot_be_written_refuses_accept_with_a_message_and_binds_nothing(
    task, good_code, tmp_path
):
    bad = tmp_path / "lib.sqlite"
    bad.write_text("this is not a kernel library")
    view = _view(task, Result("add_relu", "m", [_attempt(0, "pass", good_code)]), tmp_path)
    assert not view.accept()
    assert "Not accepted" in view.status.value and "my_add" not in view.user_ns
    assert bad.read_text() == "this is not a kernel library"  # untouched
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(bad).execute("select 1 from sqlite_master").fetchall()


def test_insert_and_retry(task, good_code, tmp_path):
    res = Result("add_relu", "m", [_attempt(0, "pass", good_code), _attempt(1, "fail", None)])
    alone = _view(task, res, tmp_path)
    assert not alone.insert() and "no code to insert" in alone.status.value  # nowhere to put it
    given: list[str] = []
    retried: list[int] = []
    view = _view(task, res, tmp_path, set_next_input=given.append, on_retry=lambda: retried.append(1))
    assert view.insert() and given[0].endswith(good_code)
    assert "TRITON_INTERPRET" in given[0]  # the inserted cell also runs without a GPU
    view.picker.value = 1
    assert view.insert_button.disabled and not view.insert()
    view.retry()
    assert retried == [1] and view.widget.children == (view.rerun,)
    bundle = view.mimebundle()
    assert bundle["text/plain"].startswith("autotriton: PASS") and "text/html" in bundle


def test_progress_folds_the_streamed_text_per_sample():
    from autotriton_jupyter.model.generator import Event
    from autotriton_jupyter.pipeline import PipelineEvent
    from autotriton_jupyter.ui.progress import ProgressView

    def token(sample: int, text: str, tokens: int) -> PipelineEvent:
        ev = Event("token", sample=sample, text=text, tokens=tokens, tokens_per_s=10.0)
        return PipelineEvent("token", sample=sample, data={"event": ev})

    p = ProgressView()
    p.model("loaded tiny")
    for i, piece in enumerate(["<think>", "tile ", "by 128", "</think>"]):
        p.event(token(0, piece, i + 1))
    p.event(token(1, "x", 1))
    p.event(PipelineEvent("verified", "pass", sample=0))
    p.close()
    assert "loaded tiny" in p.status.value and "sample 1: pass" in p.status.value
    assert len(p.folds.children) == 2 and p.folds.get_title(0).startswith("sample 1")
    assert "tile by 128" in p.folds.children[0].value
