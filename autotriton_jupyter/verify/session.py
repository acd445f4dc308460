"""A kernel session's warm verifier: started in the background, shared by every cell.

`%load_ext autotriton_jupyter` calls start(): a thread builds a Verifier (its sandboxed
fork server imports torch and triton) and starts one spare worker, while the user goes
on. Each `%%autotriton` cell then gets a view of it (get()): no fork server, spares or
reference to pay for again, and the reference of a task run before is still there. A
cell whose options need other workers (another device, no sandbox, another memory
limit) replaces it. Candidate crashes end only their own worker; a fork server that
dies is restarted by the pool. The verifier is closed when the kernel exits.

The background start is bounded: one fork server and one spare worker (one device
context on a GPU), nothing more until a cell asks for it. On a GPU the fork server then
imports torch._dynamo (CPU time and its own memory, no device), so that the workers it
forks for the cells' candidates start without that import, while a child of it builds
the Triton files those workers start with (a second device context for a second or
so: tritonwarm.Seed).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable

from .judge import Verifier, VerifyOptions

_lock = threading.Lock()
_verifier: Verifier | None = None
_error: BaseException | None = None
_ready = threading.Event()
_ready.set()


def start(options: VerifyOptions) -> None:
    """Start the session's verifier in the background; a start already made is kept."""
    global _error
    with _lock:
        if _verifier is not None or not _ready.is_set():
            return
        _ready.clear()
        _error = None

    def run() -> None:
        global _verifier, _error
        try:
            v = Verifier(options)
            try:
                v.pool.start_for_reference()
            except BaseException:
                v.close()  # its fork server and spare, not left for the kernel's exit
                raise
            with _lock:
                _verifier = v
        except BaseException as e:  # shown when a cell asks for the verifier
            _error = e
        finally:
            _ready.set()

    threading.Thread(target=run, name="autotriton-verifier-start", daemon=True).start()


def get(options: VerifyOptions, on_event: Callable[[str], None] | None = None) -> Verifier:
    """A verifier for one cell, using the session's warm workers where the options allow.

    Waits for a background start still under way. Closing what this returns closes
    nothing that the session keeps.
    """
    global _verifier
    _ready.wait()
    with _lock:
        if _verifier is not None and _verifier.pool_alive() and _verifier.shares_workers_with(options):
            return _verifier.view(options, on_event)
        old, _verifier = _verifier, None
    if old is not None:
        old.close()
    v = Verifier(options)
    with _lock:
        _verifier = v
    return v.view(options, on_event)


def current() -> Verifier | None:
    """The session's verifier, if one is started (for status lines)."""
    return _verifier if _ready.is_set() else None


def starting() -> bool:
    return not _ready.is_set()


def start_error() -> BaseException | None:
    """Why the background start failed, if it did (a cell starts one again)."""
    return _error


def close() -> None:
    """Stop the session's verifier (at kernel exit): every worker and the fork server."""
    global _verifier
    _ready.wait(timeout=60)
    with _lock:
        v, _verifier = _verifier, None
    if v is not None:
        v.close()


atexit.register(close)
