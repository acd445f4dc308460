"""interrupt.run_interruptibly, driven directly with real SIGINTs: the first one sets the
work's Cancel flag (no KeyboardInterrupt in the work), what the work returns is kept,
the handler before is restored, and the work's own errors reach the caller."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from autotriton_jupyter.interrupt import run_interruptibly


def _interrupt_soon(delay: float = 0.3) -> None:
    threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGINT)).start()


def test_an_interrupt_cancels_the_work_and_keeps_what_finished():
    before = signal.getsignal(signal.SIGINT)
    told: list[str] = []

    def work(cancel):
        done = []
        for step in range(200):
            if cancel.cancelled:
                break
            done.append(step)
            time.sleep(0.02)
        return done

    _interrupt_soon()
    done, interrupted = run_interruptibly(work, on_interrupt=lambda: told.append("stop"))
    assert interrupted and told == ["stop"]
    assert 0 < len(done) < 200  # stopped early, after its current step
    assert signal.getsignal(signal.SIGINT) is before


def test_work_that_finishes_is_not_interrupted_and_its_errors_reach_the_caller():
    assert run_interruptibly(lambda cancel: 42) == (42, False)

    def broken(cancel):
        raise ValueError("the task is wrong")

    with pytest.raises(ValueError, match="the task is wrong"):
        run_interruptibly(broken)


def test_off_the_main_thread_it_runs_without_touching_signals():
    got = {}
    before = signal.getsignal(signal.SIGINT)

    def other() -> None:
        got["value"] = run_interruptibly(lambda cancel: "ok")

    t = threading.Thread(target=other)
    t.start()
    t.join(10)
    assert got["value"] == ("ok", False) and signal.getsignal(signal.SIGINT) is before


def test_signals_held_defers_ctrl_c_and_sigterm_to_the_end_of_the_block():
    import os
    import signal

    from autotriton_jupyter.interrupt import signals_held

    # As in a terminal (a background job inherits SIGINT ignored, which stays ignored).
    saved = signal.signal(signal.SIGINT, signal.default_int_handler), signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            steps = []
            with pytest.raises(KeyboardInterrupt):
                with signals_held():
                    os.kill(os.getpid(), sig)
                    steps.append("after the signal")  # the block runs on to its end
            assert steps == ["after the signal"]
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        with signals_held():  # no signal: nothing raised
            pass
    finally:
        signal.signal(signal.SIGINT, saved[0])
        signal.signal(signal.SIGTERM, saved[1])


def test_signals_held_keeps_an_ignored_signal_ignored():
    import os
    import signal

    from autotriton_jupyter.interrupt import signals_held

    before = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_second_signal_while_held_ends_the_process_with_the_status_given():
    """One Ctrl-C or SIGTERM waits for the held step (a KeyboardInterrupt after it); a
    second ends the process at once with `exit_on_second` (a one-shot verify's close)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import os, signal, sys, time
        from autotriton_jupyter.interrupt import signals_held
        try:
            with signals_held(exit_on_second=int(sys.argv[1])):
                for _ in range(int(sys.argv[2])):
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(0.2)
                print("held step over", flush=True)
        except KeyboardInterrupt:
            print("interrupted after it", flush=True)
            sys.exit(7)
    """)
    once = subprocess.run([sys.executable, "-c", code, "3", "1"], capture_output=True, text=True, timeout=120)
    assert once.returncode == 7 and once.stdout.split() == ["held", "step", "over", "interrupted", "after", "it"]
    twice = subprocess.run([sys.executable, "-c", code, "3", "2"], capture_output=True, text=True, timeout=120)
    assert twice.returncode == 3 and twice.stdout == ""
