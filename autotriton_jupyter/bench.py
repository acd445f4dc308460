"""`autotriton bench pipeline`: what a `%%autotriton` cell costs apart from generation.

The model is `files:DIR` (known candidates replayed, so generation takes ~0 s); each
run does what the magic does after the cell: build the Task, tritonize (extract, verify
in parallel, time one at a time, rank), store the result in a library, and render the
result view's HTML. The first run pays the verifier's fork server and the reference's
`torch.compile`; later runs in the same process are what later cells cost.
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
) -> dict[str, Any]:
    """Seconds from cell run to result view, per run, with generation replayed from files."""
    from .model.generator import GenerationParams
    from .model.registry import ModelOptions, load
    from .pipeline import TritonizeOptions, tritonize
    from .store import Store
    from .task import Task
    from .ui.html import result_html
    from .verify import Verifier, VerifyOptions

    emit = on_event or (lambda _m: None)
    vo = verify or VerifyOptions()
    source = Path(reference).read_text()
    generator = load(f"files:{candidates}", ModelOptions())
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, Verifier(vo) as verifier:
        library = Path(tmp) / "library.sqlite"
        for r in range(repeats):
            t0 = time.perf_counter()
            task = Task.from_cell(source, name=Path(reference).stem)
            result = tritonize(
                task,
                generator,
                TritonizeOptions(n=n, params=GenerationParams(max_tokens=1), verify=vo),
                verifier=verifier,
            )
            t1 = time.perf_counter()
            with Store(library) as store:
                store.save_result(task.name, task.source, result)
            t2 = time.perf_counter()
            html = result_html(result, task.source)
            t3 = time.perf_counter()
            best = result.best
            timing = (best.report.timing or {}) if best and best.report else {}
            run = {
                "run": r + 1,
                "total_s": t3 - t0,
                "tritonize_s": t1 - t0,
                "store_s": t2 - t1,
                "render_s": t3 - t2,
                "generation_s": sum(c.seconds for c in result.candidates),
                "candidates": len(result.candidates),
                "passed": sum(c.passed for c in result.candidates),
                "best_speedup_vs_eager": timing.get("speedup_vs_eager"),
                "best_speedup_vs_compile": timing.get("speedup_vs_compile"),
                "html_chars": len(html),
            }
            runs.append(run)
            emit(
                f"run {r + 1}: {run['total_s']:.2f} s ({run['passed']}/{run['candidates']} passed)"
            )
    lines = [
        f"pipeline cost for {reference} with {n} replayed candidates from {candidates} "
        f"(device {vo.device}, timing {'on' if vo.timing else 'off'})"
    ]
    for run in runs:
        eager, comp = run["best_speedup_vs_eager"], run["best_speedup_vs_compile"]
        speed = (
            f", best {eager:.2f}x eager / {comp:.2f}x compile"
            if eager is not None and comp is not None
            else ""
        )
        lines.append(
            f"  run {run['run']}: {run['total_s']:.2f} s to the result view (tritonize "
            f"{run['tritonize_s']:.2f} s, store {run['store_s'] * 1000:.0f} ms, render "
            f"{run['render_s'] * 1000:.0f} ms); {run['passed']}/{run['candidates']} passed{speed}"
        )
    return {
        "reference": reference,
        "candidates": candidates,
        "n": n,
        "runs": runs,
        "text": "\n".join(lines),
    }
