"""`autotriton bench pipeline`: what a `%%autotriton` cell costs apart from generation.

The model is `files:DIR` (known candidates replayed, so generation takes ~0 s); each
run does what the magic does after the cell: build the Task, tritonize (extract, verify
in parallel, time one at a time, rank), store the result in a library, and render the
result view's HTML. The first run pays the verifier's start (as right after `%load_ext`)
and the reference's timing (unless cached on disk); later runs in the same process are
what later cells cost.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any


def bench_pipeline(
    reference: str,
    candidates: str,
    n: int = 4,
    repeats: int = 2,
    verify: Any = None,
    on_event: Any = None,
    then: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """Seconds from cell run to result view, per run, with generation replayed from files.

    It runs as a kernel session does: the session's verifier is started in the
    background first (what `%load_ext` does), and the first cell runs at once, so the
    first run pays for that start; later runs (the same task `repeats` times, then each
    of `then`'s tasks) use the warm verifier. Each run also gives the seconds from a
    sample's completion to its first verdict (correctness; timing follows).
    """
    from ..config import TritonizeOptions
    from ..model.registry import ModelOptions, load
    from ..pipeline import tritonize
    from ..store import Store
    from ..task import Task
    from ..ui.html import result_html
    from ..verify import VerifyOptions, session

    emit = on_event or (lambda _m: None)
    vo = verify or VerifyOptions()
    plan = [(reference, candidates)] * repeats + list(then or [])
    runs: list[dict[str, Any]] = []
    session.close()
    t_start = time.perf_counter()
    session.start(vo)  # %load_ext
    with tempfile.TemporaryDirectory() as tmp:
        library = Path(tmp) / "library.sqlite"
        for r, (ref_path, cand_dir) in enumerate(plan):
            from ..model.generator import GenerationParams

            generator = load(f"files:{cand_dir}", ModelOptions())
            t0 = t_start if r == 0 else time.perf_counter()
            task = Task.from_cell(Path(ref_path).read_text(), name=Path(ref_path).stem)
            done_at: dict[int, float] = {}
            first: dict[int, float] = {}

            def seen(e: Any, done_at=done_at, first=first) -> None:
                now = time.perf_counter()
                if e.kind == "token" and e.data["event"].kind == "done":
                    done_at.setdefault(e.sample, now)
                elif e.kind in ("checked", "verified") and e.sample is not None:
                    first.setdefault(e.sample, now)

            verifier = session.get(vo)
            result = tritonize(
                task,
                generator,
                # Tuning off: the latency targets are for the verdicts and figures; the tuning
                # pass takes its own budget (TritonizeOptions.tune_budget_s) after them.
                TritonizeOptions(n=n, params=GenerationParams(max_tokens=1), verify=vo, tune=False),
                verifier=verifier,
                on_event=seen,
            )
            t1 = time.perf_counter()
            with Store(library) as store:
                store.save_result(task.name, task.source, result)
            t2 = time.perf_counter()
            html = result_html(result, task.source)
            t3 = time.perf_counter()
            best = result.best
            timing = (best.report.timing or {}) if best and best.report else {}
            lags = [first[i] - done_at[i] for i in first if i in done_at]
            steps: dict[str, float] = {}  # the slowest candidate's seconds for each step
            for c in result.candidates:
                for k, v in ((c.report.seconds if c.report else None) or {}).items():
                    steps[k] = max(steps.get(k, 0.0), v)
            # The reference, where this run prepared it: its steps, and when it was ready.
            refs = [x for x in list(getattr(verifier, "_refs", {}).values()) if x.prepared_at >= t0]
            if refs:
                steps.update({f"reference_{k}": v for k, v in refs[-1].prep_seconds.items()})
                steps["reference_ready_at"] = refs[-1].prepared_at - t0
            run = {
                "run": r + 1,
                "task": ref_path,
                "kind": "first in a fresh kernel"
                if r == 0
                else ("same task again" if ref_path == plan[r - 1][0] else "another task"),
                "total_s": t3 - t0,
                "tritonize_s": t1 - t0,
                "store_s": t2 - t1,
                "render_s": t3 - t2,
                "first_verdict_s": max(lags) if lags else None,
                "generation_s": sum(c.seconds for c in result.candidates),
                "candidates": len(result.candidates),
                "passed": sum(c.passed for c in result.candidates),
                "best_speedup_vs_eager": timing.get("speedup_vs_eager"),
                "best_speedup_vs_compile": timing.get("speedup_vs_compile"),
                "reference_timing_cached": bool(timing.get("reference_timed_at")),
                "html_chars": len(html),
                "steps_s": steps,
            }
            runs.append(run)
            emit(
                f"run {r + 1} ({run['kind']}): {run['total_s']:.2f} s "
                f"({run['passed']}/{run['candidates']} passed)"
            )
    session.close()
    lines = [
        f"pipeline cost with {n} replayed candidates per cell, in one kernel session "
        f"(device {vo.device}, timing {'on' if vo.timing else 'off'})"
    ]
    for run in runs:
        eager, comp = run["best_speedup_vs_eager"], run["best_speedup_vs_compile"]
        speed = (
            f", best {eager:.2f}x eager / {comp:.2f}x compile"
            if eager is not None and comp is not None
            else ""
        )
        fv = run["first_verdict_s"]
        lag = f"first verdicts within {fv:.2f} s of the code; " if fv is not None else ""
        lines.append(
            f"  run {run['run']} ({run['kind']}: {run['task']}): {run['total_s']:.2f} s to the "
            f"result view (tritonize {run['tritonize_s']:.2f} s, store "
            f"{run['store_s'] * 1000:.0f} ms, render {run['render_s'] * 1000:.0f} ms); "
            + lag
            + f"{run['passed']}/{run['candidates']} passed{speed}"
            + (" (reference timings from the cache)" if run["reference_timing_cached"] else "")
        )
        if run["steps_s"]:
            lines.append(
                "    slowest candidate's steps: "
                + ", ".join(f"{k} {v:.2f} s" for k, v in run["steps_s"].items())
            )
    return {
        "reference": reference,
        "candidates": candidates,
        "n": n,
        "runs": runs,
        "text": "\n".join(lines),
    }
