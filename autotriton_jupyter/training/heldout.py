"""The held-out comparison after fine-tuning: the base model and the fine-tuned one, each
run through the pipeline on the tasks training held out, scored by the strict verifier
(tasks passed, geomean speedup against eager).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..config import TritonizeOptions
from ..model.generator import GenerationParams
from ..task import Task, TaskError
from ..verify import Verifier, VerifyOptions


def before_after(
    held_out: list[dict[str, str]],
    base: Any,
    tuned: Any,
    verify: VerifyOptions,
    n: int = 1,
    max_tokens: int = GenerationParams.max_tokens,
    on_progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Verified pass counts and speedups of the base model and the fine-tuned one on held-out tasks."""
    from ..pipeline import tritonize

    emit = on_progress or (lambda _m: None)
    greedy = GenerationParams(temperature=0.0, max_tokens=max_tokens)
    scores: dict[str, dict[str, Any]] = {}
    with Verifier(verify) as verifier:
        for label, gen in (("before", base), ("after", tuned)):
            passed, speedups = 0, []
            for t in held_out:
                emit(f"held-out {label}: {t['name']}")
                try:
                    task = Task.from_source(t["source"], t["name"])
                except TaskError:
                    continue
                res = tritonize(
                    task,
                    gen,
                    TritonizeOptions(n=n, params=greedy, verify=verify, tune=False),
                    verifier=verifier,
                )
                if res.best:
                    passed += 1
                    s = (
                        (res.best.report.timing or {}).get("speedup_vs_eager")
                        if res.best.report
                        else None
                    )
                    if s:
                        speedups.append(s)
            scores[label] = {
                "tasks": len(held_out),
                "passed": passed,
                "geomean_speedup_vs_eager": math.exp(sum(map(math.log, speedups)) / len(speedups))
                if speedups
                else None,
            }
    return scores
