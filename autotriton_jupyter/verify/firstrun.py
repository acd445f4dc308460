"""A candidate started on the reference's first input set while the reference draws the others.

When a candidate's verify is the one that runs its task's reference, the reference hands
over its first input set and outputs as soon as they exist (ReferencePrep.prepare's
first_set). A thread of this module then takes the candidate's worker, loads the candidate
and runs it on that set, as the first part of the plan would (judge.py; the plan's first part
is that set alone), while the reference goes on. Its kernels are compiled then, not after the
reference: on an H100 host the first call took 0.5-0.8 s of a one-shot verify.

Nothing is judged here. The judge takes the outcome at the point where it would have loaded
and run the candidate itself: the worker is sent the commands of the plan's first part, in
the plan's order, and an error is raised where the judge's own command would have raised it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .reference import Reference
    from .sandbox import Pool, Worker


class Cancelled(Exception):
    """The verify that started it no longer wants it (its reference failed, say)."""


class FirstRun:
    """One candidate's load and first part, on a thread of its own; `work(ref, self)` does
    them (it calls `hold` once it has a worker) and returns what the judge takes.

    Only its own thread uses its worker while it runs: cancel() kills the worker's process
    (the command under way ends) and the thread releases it, never another thread while
    the thread may still read its descriptors."""

    def __init__(self, pool: Pool, work: Callable[[Reference, FirstRun], dict[str, Any]]) -> None:
        self._pool = pool
        self._work = work
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._worker: Worker | None = None
        self._cancelled = False
        self._killed = False  # its worker's process, once (a second kill could race its release)
        self._done = False
        self._result: dict[str, Any] | None = None
        self._error: BaseException | None = None

    @property
    def started(self) -> bool:
        """Started, and not cancelled since: the judge takes its outcome."""
        return self._thread is not None and not self._cancelled

    def start(self, ref: Reference) -> bool:
        """The reference's first set is there (prepare's first_set): start on it. False when
        no thread could be had (the judge then loads and runs it after the reference)."""
        thread = threading.Thread(target=self._run, args=(ref,), name="autotriton-first-run", daemon=True)
        try:
            thread.start()
        except RuntimeError:
            return False
        self._thread = thread
        return True

    def _run(self, ref: Reference) -> None:
        try:
            self._result = self._work(ref, self)
        except BaseException as e:  # raised again by take(), where the judge would have met it
            self._error = e
        with self._lock:
            self._done = True
            w = self._worker if self._cancelled else None
            if w is not None:
                self._worker = None
        if w is not None:
            self._pool.release(w)

    def hold(self, w: Worker) -> None:
        """The worker `work` took: released by this thread once cancelled, else the judge's
        after take()."""
        with self._lock:
            if not self._cancelled:
                self._worker = w
                return
        self._pool.release(w)
        raise Cancelled

    def take(self) -> tuple[Worker, dict[str, Any]]:
        """Wait for the thread; its worker (the caller's to release now) and what it did, or
        the error it met before it had them."""
        if self._thread is None:
            raise RuntimeError("FirstRun.take() before start()")
        self._thread.join()
        with self._lock:
            w, self._worker = self._worker, None
        if self._error is not None:
            if w is not None:
                self._pool.release(w)
            raise self._error
        if w is None or self._result is None:
            raise RuntimeError("the candidate's first part ended without its worker")
        return w, self._result

    def cancel(self, wait_s: float = 0.0) -> None:
        """Not wanted (or already taken): the worker it still holds is killed, and released
        by its thread (or here, when the thread is done with it); waits up to wait_s for the
        thread to end."""
        with self._lock:
            self._cancelled = True
            w = self._worker
            if w is not None and self._done:
                self._worker = None
            elif w is not None:
                if not self._killed:
                    self._killed = True
                    w.proc.kill()  # its command ends now; its thread releases it
                w = None
        if w is not None:
            self._pool.release(w)
        if wait_s and self._thread is not None:
            self._thread.join(wait_s)
