"""The kernel session's warm verifier (verify/session.py): started in the background,
shared by cells through views, replaced when a cell needs other workers, closed at exit."""

from __future__ import annotations

import pytest

from autotriton_jupyter.task import Candidate, Task
from autotriton_jupyter.verify import VerifyOptions, session


@pytest.fixture
def fresh_session():
    session.close()
    yield
    session.close()


def test_cells_share_the_background_start_and_its_references(fresh_session, corpus):
    opts = VerifyOptions(device="cpu", seed=3, timing=False)
    session.start(opts)
    first = session.get(opts)
    assert not session.starting()
    server = first.pool._server
    assert server is not None and server.alive  # the background start made the fork server
    task = Task.from_file(corpus / "add_relu" / "task.py")
    cand = Candidate.from_file(corpus / "add_relu" / "pass_masked.py")
    assert first.verify(task, cand).verdict == "pass"
    ref = first.prepare(task)
    first.close()  # a cell's view: closes nothing
    assert first.pool_alive()
    # Another cell with other tolerances: same workers, same reference.
    second = session.get(VerifyOptions(device="cpu", seed=3, timing=False, atol=1e-3))
    assert second.pool is first.pool and second.prepare(task) is ref
    assert second.verify(task, cand).verdict == "pass"
    # Another seed is another reference (new input sets), on the same workers.
    third = session.get(VerifyOptions(device="cpu", seed=4, timing=False))
    assert third.pool is first.pool and third.prepare(task) is not ref


def test_a_cell_that_needs_other_workers_replaces_them(fresh_session):
    a = session.get(VerifyOptions(device="cpu", timing=False))
    b = session.get(VerifyOptions(device="cpu", timing=False, memory_limit_gb=2.0))
    assert b.pool is not a.pool and not a.pool_alive()
    session.close()
    assert not b.pool_alive() and session.current() is None


def test_a_failed_background_start_is_reported_and_retried(fresh_session, monkeypatch):
    monkeypatch.setenv("AUTOTRITON_BWRAP", "/nonexistent/bwrap")
    session.start(VerifyOptions(device="cpu", timing=False))
    with pytest.raises(Exception, match="bwrap|sandbox"):
        session.get(VerifyOptions(device="cpu", timing=False))
    assert session.start_error() is not None
    monkeypatch.delenv("AUTOTRITON_BWRAP")
    assert session.get(VerifyOptions(device="cpu", timing=False)).pool_alive()
