"""Job progress files: what a run writes for the panel, and how the list treats old, dead and broken ones."""

from __future__ import annotations

import json
import os
import time

import pytest

from autotriton_jupyter import jobs
from autotriton_jupyter.jobs import JobLog, jobs_dir, list_jobs


@pytest.fixture
def folder(tmp_path, monkeypatch):
    d = tmp_path / "jobs"
    monkeypatch.setenv("AUTOTRITON_JOBS", str(d))
    return d


def on_disk(log: JobLog) -> dict:
    return json.loads(log.path.read_text())


def test_jobs_dir_is_next_to_the_default_library_else_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("AUTOTRITON_JOBS", raising=False)
    monkeypatch.delenv("AUTOTRITON_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("AUTOTRITON_LIBRARY", str(tmp_path / "lib" / "library.sqlite"))
    assert jobs_dir() == tmp_path / "lib" / "jobs"  # the default library's own folder
    # A library elsewhere (a project folder) gets nothing beside it: its side folder is in
    # the cache, one per library path.
    other = jobs_dir(tmp_path / "project" / "x.sqlite")
    assert other.is_relative_to(tmp_path / "cache" / "autotriton") and other.name == "jobs"
    assert jobs_dir(tmp_path / "project2" / "x.sqlite") != other
    assert jobs_dir(tmp_path / "project" / "x.sqlite") == other
    monkeypatch.setenv("AUTOTRITON_JOBS", str(tmp_path / "j"))
    assert jobs_dir() == tmp_path / "j"


def test_a_job_file_follows_the_run(folder, monkeypatch):
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/me/work.ipynb")
    log = JobLog("AddRelu")
    first = on_disk(log)
    assert first["state"] == "running" and first["task"] == "AddRelu"
    assert first["notebook"] == "/home/me/work.ipynb" and first["pid"] == os.getpid()
    log.update(stage="verifying", lines=["model: tiny", "sample 1: pass"], force=True)
    assert on_disk(log)["lines"] == ["model: tiny", "sample 1: pass"]
    log.finish("done")
    assert on_disk(log)["state"] == "done"
    assert [j["id"] for j in list_jobs()] == [log.data["id"]]
    assert [p.name for p in folder.iterdir()] == [log.path.name]  # no temp file left behind


def test_unforced_updates_are_throttled(folder, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(jobs.time, "monotonic", lambda: clock[0])
    log = JobLog("t")
    for i in range(50):
        log.update(lines=[f"{i} tokens"])
    assert on_disk(log)["lines"] == []  # within a quarter second of the last write: none
    clock[0] += 0.3
    log.update(lines=["50 tokens"])
    assert on_disk(log)["lines"] == ["50 tokens"]
    log.update(lines=["final"], force=True)
    assert on_disk(log)["lines"] == ["final"]


def test_no_notebook_outside_jupyter(folder, monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert on_disk(JobLog("t"))["notebook"] is None


def test_an_unwritable_folder_warns_once_and_the_run_goes_on(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("AUTOTRITON_JOBS", str(blocker / "jobs"))  # mkdir under a file fails
    log = JobLog("t")
    log.update(stage="x", force=True)
    log.finish("failed")
    err = capsys.readouterr().err
    assert err.count("cannot write progress") == 1 and "AUTOTRITON_JOBS" in err


def test_old_finished_jobs_are_dropped_and_deleted_but_running_ones_kept(folder, monkeypatch):
    old = JobLog("old")
    old.finish("done")
    running = JobLog("long")
    later = time.time() + jobs.KEEP_FINISHED_S + 10
    monkeypatch.setattr(jobs.time, "time", lambda: later)
    assert [j["task"] for j in list_jobs()] == ["long"]
    assert not old.path.exists() and running.path.exists()


def test_broken_files_are_skipped(folder):
    log = JobLog("good")
    (folder / "empty.json").write_text("")
    (folder / "list.json").write_text("[1, 2]")
    (folder / "partial.json").write_text(json.dumps({"id": "x", "task": "t"}))
    (folder / "weird.json").write_text(json.dumps({**log.data, "id": "w", "state": "exploded"}))
    assert [j["task"] for j in list_jobs()] == ["good"]


def test_no_folder_is_no_jobs(tmp_path):
    assert list_jobs(tmp_path / "never_made") == []


# through the magic, in a bare IPython shell (as tests/test_magic.py does) ------------------


@pytest.fixture(scope="module")
def ip():
    from IPython.testing import globalipapp

    first = not hasattr(globalipapp.start_ipython, "already_called")
    shell = globalipapp.start_ipython() or globalipapp.get_ipython()
    if first:
        # start_ipython answers None after its first call, and tests/test_magic.py's fixture
        # expects the shell from it; its setup is idempotent on the same singleton shell.
        del globalipapp.start_ipython.already_called
    shell.run_line_magic("load_ext", "autotriton_jupyter")
    return shell


@pytest.fixture
def library(tmp_path, ip, monkeypatch):
    monkeypatch.delenv("AUTOTRITON_JOBS", raising=False)
    path = tmp_path / "lib.sqlite"
    monkeypatch.setattr(ip.magics_manager.registry["AutotritonMagics"], "library", str(path))
    return path


def test_the_magic_writes_a_job_file_and_finishes_it(ip, library, corpus, monkeypatch):
    from tests.test_magic import fenced, scripted

    scripted(monkeypatch, [fenced(corpus / "add_relu" / "pass_masked.py")])
    cell = (corpus / "add_relu" / "task.py").read_text()
    ip.run_cell_magic("autotriton", "--device cpu --seed 4 -n 1 --name fast_add", cell)
    [job] = list_jobs(jobs_dir(library))
    assert job["task"] == "fast_add" and job["state"] == "done"
    assert any("sample 1: pass" in line for line in job["lines"])
    assert job["stage"]


def test_a_model_that_cannot_load_marks_the_job_failed(ip, library, corpus):
    cell = (corpus / "add_relu" / "task.py").read_text()
    ip.run_cell_magic("autotriton", "--device cpu --model no-such-model", cell)
    [job] = list_jobs(jobs_dir(library))
    assert job["state"] == "failed"


def test_kernel_state(ip, monkeypatch, tmp_path):
    from autotriton_jupyter import kernel_state
    from autotriton_jupyter.model import registry

    monkeypatch.setenv("AUTOTRITON_CONFIG", str(tmp_path / "none.toml"))
    magics = ip.magics_manager.registry["AutotritonMagics"]
    monkeypatch.setattr(magics, "model", "tiny")
    fake = type("G", (), {"name": "tiny"})()
    monkeypatch.setitem(registry._loaded, ("fake",), fake)
    state = json.loads(kernel_state())
    assert state == {
        "extension_loaded": True,
        "busy": False,
        "model": "tiny",
        "adapter": "",
        "loaded": ["tiny"],
    }


def test_an_interrupted_run_marks_the_job_cancelled(ip, library, corpus, monkeypatch):
    from tests.test_magic import fenced, scripted

    scripted(monkeypatch, [fenced(corpus / "add_relu" / "pass_masked.py")] * 3, delay=1.0,
             interrupt_after=1)
    cell = (corpus / "add_relu" / "task.py").read_text()
    ip.run_cell_magic("autotriton", "--device cpu --seed 4 -n 3", cell)
    [job] = list_jobs(jobs_dir(library))
    from tests.test_magic import interrupts

    assert job["state"] == "cancelled", interrupts
    assert any("interrupted" in line for line in job["lines"])
