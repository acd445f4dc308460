"""Run long work in a thread so that Ctrl-C (or Kernel -> Interrupt) cancels it cleanly.

The first interrupt sets the Cancel flag; the work stops after its current step and
returns what finished. Completion is signalled with an Event rather than
Thread.is_alive(), which can report a still-running thread as finished once a
join() was interrupted (a CPython flaw).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from .model.generator import Cancel

T = TypeVar("T")


def run_interruptibly(
    work: Callable[[Cancel], T], on_interrupt: Callable[[], None] | None = None
) -> tuple[T, bool]:
    """(work's result, whether it was interrupted); work's exceptions are re-raised here."""
    cancel = Cancel()
    done = threading.Event()
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["result"] = work(cancel)
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e
        finally:
            done.set()

    threading.Thread(target=target, name="autotriton-work", daemon=True).start()
    interrupted = False
    while True:
        try:
            if done.wait(0.1):
                break
        except KeyboardInterrupt:
            interrupted = True
            cancel.set()
            if on_interrupt:
                on_interrupt()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"], interrupted  # type: ignore[return-value]
