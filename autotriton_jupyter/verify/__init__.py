"""Judging candidates: `verify(ref, cand) -> Report`, and `Verifier` for many at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..task import Candidate, Task
from .judge import Verifier, VerifyOptions
from .report import Report, format_text

__all__ = ["Report", "Verifier", "VerifyOptions", "format_text", "verify"]


def verify(
    reference: str | Path | Task,
    candidate: str | Path | Candidate,
    options: VerifyOptions | None = None,
    **overrides: Any,
) -> Report:
    """Verify one candidate file (or Candidate) against a reference file (or Task)."""
    task = reference if isinstance(reference, Task) else Task.from_file(reference)
    cand = candidate if isinstance(candidate, Candidate) else Candidate.from_file(candidate)
    opts = options or VerifyOptions()
    for k, v in overrides.items():
        setattr(opts, k, v)
    with Verifier(opts) as v:
        return v.verify(task, cand)
