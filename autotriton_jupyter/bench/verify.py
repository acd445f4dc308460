"""`autotriton bench verify`: how much the verifier itself costs.

Figures: fork-server start (paid once per process), a cold worker start (fork plus
device initialisation: the fixed cost a candidate would pay without warm spares),
the wait for a worker when spares are warm, the reference preparation, and the wall
time to verify N candidates (correctness in parallel, timing one at a time).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from ..task import Candidate, Task
from ..verify.judge import Verifier, VerifyOptions


def run_benchmark(
    reference: str,
    candidates: list[str],
    options: VerifyOptions,
    on_event: Callable[[str], None] | None = None,
    cold_starts: int = 5,
) -> dict[str, Any]:
    """Measure the verifier on one task and its candidates; returns figures and a text summary."""
    emit = on_event or (lambda _m: None)
    task = Task.from_file(reference)
    cands = [Candidate.from_file(c) for c in candidates]
    # A fresh Triton cache: the first compile of each kernel is paid, as for new model output.
    cache = tempfile.TemporaryDirectory(prefix="autotriton-bench-triton-")
    os.environ["TRITON_CACHE_DIR"] = cache.name
    result: dict[str, Any] = {"task": reference, "candidates": len(cands)}
    t0 = time.perf_counter()
    with Verifier(options, on_event=emit) as v:
        result["device"] = v.device
        result["parallel"] = v.parallel
        w = v.pool.acquire()
        result["first_worker_s"] = time.perf_counter() - t0
        v.pool.release(w)
        starts = []
        for _ in range(cold_starts):
            s0 = time.perf_counter()
            w = v.pool._start()
            w.wait_ready(120)
            starts.append(time.perf_counter() - s0)
            v.pool.release(w, wait=True)  # each start measured alone, not beside an end
        result["cold_worker_start_s"] = statistics.median(starts)
        result["cold_worker_start_all_s"] = starts
        emit(
            f"bench: cold worker start {result['cold_worker_start_s']:.3f} s (median of {cold_starts})"
        )
        v.pool.warm()
        time.sleep(0)  # spares start in the background while the reference runs
        p0 = time.perf_counter()
        ref = v.prepare(task)
        result["reference_s"] = time.perf_counter() - p0
        if v.device == "cuda" and options.timing:
            r0 = time.perf_counter()
            v._reference_timing(ref)
            result["reference_timing_s"] = time.perf_counter() - r0
        m0 = time.perf_counter()
        reports = v.verify_many(task, cands)
        result["wall_s"] = time.perf_counter() - m0
    cache.cleanup()
    result["verdicts"] = [r.verdict for r in reports]
    result["per_candidate_s"] = [round(r.seconds.get("total", 0.0), 3) for r in reports]
    result["worker_wait_s"] = [round(r.seconds.get("worker_wait", 0.0), 3) for r in reports]
    result["timing"] = [r.timing for r in reports]
    lines = [
        f"verifier benchmark on {result['device']} ({len(cands)} candidates, {v.parallel} in parallel)",
        f"  first worker (fork server start + imports): {result['first_worker_s']:.2f} s (once per process)",
        f"  cold worker start (fork + device init):     {result['cold_worker_start_s']:.3f} s median",
        f"  wait for a worker with warm spares:         {statistics.median(result['worker_wait_s']):.3f} s median",
        f"  reference (load + outputs on all input sets): {result['reference_s']:.2f} s",
    ]
    if "reference_timing_s" in result:
        lines.append(
            f"  reference timing (eager + torch.compile):   {result['reference_timing_s']:.2f} s"
        )
    lines.append(
        f"  {len(cands)} candidates verified in {result['wall_s']:.2f} s wall "
        f"(per candidate median {statistics.median(result['per_candidate_s']):.2f} s); "
        f"verdicts: {', '.join(result['verdicts'])}"
    )
    result["text"] = "\n".join(lines)
    return result
