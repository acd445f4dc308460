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


def test_a_reference_in_use_is_not_released_when_other_tasks_push_it_out(corpus, monkeypatch):
    """References are kept per task, the oldest released beyond MAX_REFERENCES; one that a
    candidate is being judged against keeps its worker until that candidate is done (it
    was charged to the candidate before: its worker died under it)."""
    from autotriton_jupyter.verify import Verifier, reference

    monkeypatch.setattr(reference, "MAX_REFERENCES", 1)
    a = Task.from_file(corpus / "add_relu" / "task.py")
    b = Task.from_file(corpus / "softmax" / "task.py")
    with Verifier(VerifyOptions(device="cpu", seed=3, timing=False)) as v:
        held = v.prepare(a, hold=True)
        other = v.prepare(b)  # pushes a's reference out of the kept ones
        assert held.retired and held.users == 1 and held.worker.proc.is_alive()
        assert held.worker.call("probe_vary", 60, "the reference", sets=[held.timed[0]], seed=1)["mode"]
        v.drop(held)
        held.worker.proc.join(10)
        assert not held.worker.proc.is_alive()  # released by its last user
        v.prepare(a)  # and a's reference is made again when asked for
        assert not other.users and other.retired is False
        other.worker.proc.join(10)
        assert not other.worker.proc.is_alive()  # not in use: released when pushed out
