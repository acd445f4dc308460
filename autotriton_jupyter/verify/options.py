"""The verifier's options: a plain dataclass, importable without torch (the CLI's quick path)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class VerifyOptions:
    """How strictly and how long to verify (CLI flags, config and the API all fill this)."""

    device: str = "auto"
    trials: int = 3
    atol: float = 1e-2
    rtol: float = 1e-2
    allow_torch: tuple[str, ...] = ()
    timing: bool = True
    timeout: float = 120.0
    seed: int | None = None
    parallel: int = 0
    timing_budget_s: float = 0.3
    memory_limit_gb: float = 0.0
    shapes: tuple[str, ...] = ()  # extra input sets at other shapes (verify/shapes.py)
    sandbox: bool = True  # run workers in the OS sandbox; off only on the user's word
    strict: bool = False  # a candidate wrong only on inputs the judge made fails outright
    reference_cache: bool = True  # reuse the reference's timings kept on disk (refcache.py)
    warm_start: bool = True  # %load_ext starts the kernel session's verifier (session.py)
