"""Run long work in a thread so that Ctrl-C (or Kernel -> Interrupt) cancels it cleanly.

The first interrupt sets the Cancel flag; the work stops after its current step and
returns what finished. Completion is signalled with an Event rather than
Thread.is_alive(), which can report a still-running thread as finished once a
join() was interrupted (a CPython flaw).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
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

    # While the work runs, SIGINT only raises a flag: no KeyboardInterrupt that code on
    # this thread (a finaliser, a library) could swallow. The handler before is restored.
    # (A plain list, not an Event: a handler must not take a lock its thread may hold.)
    asked = [False]
    installed, previous = False, None
    if threading.current_thread() is threading.main_thread():
        try:
            previous = signal.signal(signal.SIGINT, lambda _s, _f: asked.__setitem__(0, True))
            installed = True
        except (ValueError, OSError):  # not the main interpreter: KeyboardInterrupt as before
            pass
    threading.Thread(target=target, name="autotriton-work", daemon=True).start()
    interrupted = False
    try:
        while True:
            try:
                if done.wait(0.1):
                    break
            except KeyboardInterrupt:
                asked[0] = True
            if asked[0]:
                asked[0] = False
                interrupted = True
                cancel.set()
                if on_interrupt:
                    on_interrupt()
    finally:
        if installed:  # a handler set outside Python reads as None: Python's default then
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"], interrupted  # type: ignore[return-value]


@contextlib.contextmanager
def signals_held(exit_on_second: int | None = None) -> Iterator[None]:
    """Ctrl-C and SIGTERM only raise a flag inside; a KeyboardInterrupt follows on leaving.

    For steps that break on an interrupt instead of unwinding: importing torch swallows
    one, or aborts the process from C++ (no finally runs, scratch folders stay). Outside
    the main thread, a plain block. `exit_on_second`: a second signal ends the process at
    once with this status (a step the user may not want to wait for to its end)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    asked = [False]
    previous = {}

    def on_signal(_sig: int, _frame: object) -> None:
        if asked[0] and exit_on_second is not None:
            os._exit(exit_on_second)
        asked[0] = True

    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is signal.SIG_IGN:
                continue  # ignored by whoever started us (nohup, a background job): still
            previous[sig] = signal.signal(sig, on_signal)
    except (ValueError, OSError):  # not the main interpreter
        pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                default = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
                signal.signal(sig, handler if handler is not None else default)
    if asked[0]:
        raise KeyboardInterrupt
