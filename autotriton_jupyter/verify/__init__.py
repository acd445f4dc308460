"""Judging candidates: `verify(ref, cand) -> Report`, and `Verifier` for many at once.

The judge (and torch) is imported on first use of `Verifier`, so the options, reports and
the verifier service's client stay light: `autotriton verify` with a running service
never imports torch.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..task import Candidate, Task
from .options import VerifyOptions
from .report import Report, format_text

if TYPE_CHECKING:
    from .judge import Verifier

__all__ = ["Report", "Verifier", "VerifyOptions", "format_text", "verify"]


def __getattr__(name: str) -> Any:
    if name == "Verifier":
        return importlib.import_module(".judge", __name__).Verifier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def verify(
    reference: str | Path | Task,
    candidate: str | Path | Candidate,
    options: VerifyOptions | None = None,
    **overrides: Any,
) -> Report:
    """Verify one candidate file (or Candidate) against a reference file (or Task)."""
    from .judge import Verifier

    task = reference if isinstance(reference, Task) else Task.from_file(reference)
    cand = candidate if isinstance(candidate, Candidate) else Candidate.from_file(candidate)
    opts = options or VerifyOptions()
    for k, v in overrides.items():
        setattr(opts, k, v)
    with Verifier(opts) as v:
        return v.verify(task, cand)
