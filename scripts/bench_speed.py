"""Issue 17's figures on a GPU: launch overhead, both timing figures, and the tuning pass.

    python scripts/bench_speed.py OUT.json [--pairs N] [--skip K] [--kernels-only | --launch-only
        | --harness] [--tune-variants K]

1. Launch overhead per call of a trivial kernel: an empty-ish Triton kernel against the
   same work in eager PyTorch, one call at a time (synchronised) and back to back; and
   a small add launched three ways (as model-written code does, with its grid and output
   made once, through Triton's compiled-kernel runner): what cheaper launches could save.
2. For each (task, passing kernel) pair, the GPU example tasks first, then the real-world
   corpus (tests/realworld/*/task.py + kernel.py): the verifier's per-call and
   back-to-back figures for the kernel, eager and torch.compile; then the tuning pass
   (every variant verified in full) and the best variant's figures.
3. How many kernels beat eager and torch.compile on each figure, before and after tuning.
4. `--harness` alone: where a figure comes from. Each GPU example's candidate and eager
   model, in this process, timed as a user would (a call at a time, back to back), by the
   verifier's timing loop alone, and by that loop with the timed calls' variation and
   output projections; then the verifier's own figures for the same pair. From one step
   to the next: the method, the judge's checks, the worker (probes, sandbox); and the
   verifier's figures without the OS sandbox. `--harness-steps`: the worker's instruments
   added in this process one at a time (see harness_steps).

Everything is written to OUT.json, and a markdown summary is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GPU_PAIRS = [
    ("examples/gpu_tasks/softmax.py", "examples/candidates/softmax/rowwise.py"),
    ("examples/gpu_tasks/add_relu.py", "examples/candidates/add_relu/pass_masked.py"),
    ("examples/gpu_tasks/row_sum.py", "examples/candidates/row_sum/pass_loop.py"),
]


def launch_overhead() -> dict:
    """Per-call cost of a trivial kernel (one element), Triton against eager PyTorch."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def bump(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr) + 1.0)

    x = torch.zeros(1, device="cuda")

    def triton_call() -> None:
        bump[(1,)](x)

    def eager_call() -> None:
        x.add_(1.0)

    out = {}
    for name, fn in (("triton", triton_call), ("eager", eager_call)):
        got = _per_call_ms(fn, n=2000, warmup=50)
        out[name] = {"one_call_synchronised_ms": got["one_call_ms"], "back_to_back_ms": got["back_to_back_ms"]}
    out["launch_paths"] = launch_paths()
    return out


def launch_paths() -> dict:
    """What host work an accepted kernel's forward could shed (issue 17's cheaper launches):
    a small add (4096 elements: launch-bound) launched as model-written code does (output
    allocated, grid a lambda), with its output and grid made once, and through the compiled
    kernel Triton returns from warmup (no argument binding, cache key or global check)."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    n = 4096
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    kept = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024), 1, 1)

    def as_written() -> None:
        out = torch.empty_like(x)
        add[lambda meta: (triton.cdiv(out.numel(), meta["BLOCK"]),)](x, y, out, out.numel(), BLOCK=1024)

    def made_once() -> None:
        add[grid](x, y, kept, n, BLOCK=1024)

    paths = {"as_written": as_written, "grid_and_output_made_once": made_once}
    try:
        compiled = add.warmup(x, y, kept, n, BLOCK=1024, grid=grid)
        runner = compiled[grid]

        def precompiled() -> None:
            runner(x, y, kept, n, 1024)

        precompiled()
        torch.cuda.synchronize()
        if not torch.allclose(kept, x + y):
            raise RuntimeError("the compiled kernel's output is wrong")
        paths["compiled_kernel_runner"] = precompiled
    except Exception as e:  # another Triton's API: said, not measured
        paths_error = f"{type(e).__name__}: {e}"[:300]
    else:
        paths_error = None
    out: dict = {"eager": _per_call_ms(lambda: x + y, n=2000, warmup=50)}
    for name, fn in paths.items():
        out[name] = _per_call_ms(fn, n=2000, warmup=50)
    if paths_error:
        out["compiled_kernel_runner"] = {"error": paths_error}
    return out


def _load(path: Path, name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def harness() -> list[dict]:
    """Section 4 (see the docstring): the GPU examples only, whose files are ours."""
    import random

    import torch

    from autotriton_jupyter.task import Candidate, Task
    from autotriton_jupyter.verify import Verifier, VerifyOptions, fingerprint, timing, vary

    rows = []
    for task_path, kernel_path in GPU_PAIRS:
        task_mod = _load(ROOT / task_path, "harness_task")
        kernel_mod = _load(ROOT / kernel_path, "harness_kernel")
        torch.manual_seed(0)
        init = task_mod.get_init_inputs()
        models = {"eager": task_mod.Model(*init).cuda(), "candidate": kernel_mod.ModelNew(*init).cuda()}
        models["candidate"].load_state_dict(models["eager"].state_dict(), strict=False)
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task_mod.get_inputs()]
        row: dict = {"task": task_path, "kernel": kernel_path}
        with torch.no_grad():
            for name, model in models.items():
                got: dict = {"as_a_user_would": _per_call_ms(lambda model=model, inputs=inputs: model(*inputs), n=500)}
                for label, checked in (("timing_loop", False), ("timing_loop_checked", True)):
                    buffers = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
                    projection = fingerprint.Projection(11)
                    r = timing.bench(
                        model, buffers, [inputs], budget_s=0.3, rng=random.Random(5), back_to_back=True,
                        vary=vary.Variation(13, [inputs]) if checked else None,
                        check=(lambda call, pos, out, p=projection: p.take(out)) if checked else None,
                    )
                    got[label] = {k: r[k] for k in ("median_ms", "q1_ms", "q3_ms", "b2b_ms", "reps")}
                row[name] = got
        with Verifier(VerifyOptions(device="cuda", trials=1, seed=7, reference_cache=False)) as v:
            row["verifier"] = figures(v.verify(Task.from_file(ROOT / task_path), Candidate.from_file(ROOT / kernel_path)))
        # The same without the OS sandbox: whether the one-call gap of a candidate's worker
        # (20-24 us on the H100 of 2026-12-05) is the sandbox's or the worker's own.
        options = VerifyOptions(device="cuda", trials=1, seed=7, reference_cache=False, sandbox=False)
        with Verifier(options) as v:
            row["verifier_no_sandbox"] = figures(
                v.verify(Task.from_file(ROOT / task_path), Candidate.from_file(ROOT / kernel_path))
            )
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def harness_steps() -> list[dict]:
    """`--harness-steps`: the one-call gap of a candidate's worker, rebuilt in this process
    one of its instruments at a time. Each GPU example's candidate timed by the verifier's
    checked timing loop, one call at a time: as imported plainly; then with the worker's
    Triton launch probe installed (counting launches, as while timed); then also imported
    as the worker imports it (every method guarded); then with the worker's GPU memory
    fraction. The verifier's own figure (and the wall time of its calls) comes last."""
    import random

    import torch

    from autotriton_jupyter.task import Candidate, Task
    from autotriton_jupyter.verify import (
        Verifier,
        VerifyOptions,
        fingerprint,
        probes,
        timing,
        vary,
        worker,
    )

    def loop(model, inputs) -> dict:
        buffers = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        projection = fingerprint.Projection(11)
        with torch.no_grad():
            r = timing.bench(
                model, buffers, [inputs], budget_s=0.3, rng=random.Random(5), back_to_back=True,
                vary=vary.Variation(13, [inputs]), check=lambda call, pos, out, p=projection: p.take(out),
            )
        return {k: r[k] for k in ("median_ms", "wall_median_ms", "b2b_ms", "reps")}

    rows = []
    prepared = []
    for task_path, kernel_path in GPU_PAIRS:
        task_mod = _load(ROOT / task_path, "steps_task")
        torch.manual_seed(0)
        init = task_mod.get_init_inputs()
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task_mod.get_inputs()]
        prepared.append((task_path, kernel_path, task_mod, init, inputs))
    steps: dict[str, dict] = {k: {} for _, k, *_ in prepared}

    def each(label: str, make) -> None:
        for _task, kernel_path, task_mod, init, inputs in prepared:
            model = make(kernel_path, init).cuda()
            model.load_state_dict(task_mod.Model(*init).cuda().state_dict(), strict=False)
            steps[kernel_path][label] = loop(model, inputs)
            print(kernel_path, label, json.dumps(steps[kernel_path][label]), flush=True)

    each("plain", lambda k, init: _load(ROOT / k, "steps_plain").ModelNew(*init))
    probe = probes.LaunchProbe(str(ROOT / GPU_PAIRS[0][1]))  # one probe, as a worker has
    probe.install()
    probe.recording, probe.full = True, False
    each("launch_probe", lambda k, init: _load(ROOT / k, "steps_probed").ModelNew(*init))
    probes.register_classes("steps_guarded")

    def guarded(k, init):
        mod = worker._import_file(ROOT / k, "steps_guarded", guard=True)
        return mod.ModelNew(*init)

    each("and_guarded", guarded)
    torch.cuda.set_per_process_memory_fraction(0.9 / 3)
    each("and_memory_fraction", guarded)
    probe.recording = False
    with Verifier(VerifyOptions(device="cuda", trials=1, seed=7, reference_cache=False)) as v:
        for task_path, kernel_path, *_ in prepared:
            report = v.verify(Task.from_file(ROOT / task_path), Candidate.from_file(ROOT / kernel_path))
            t = report.timing or {}
            steps[kernel_path]["verifier"] = {
                k: t.get(k) for k in ("candidate_ms", "candidate_wall_ms", "candidate_b2b_ms", "eager_ms")
            }
            print(kernel_path, "verifier", json.dumps(steps[kernel_path]["verifier"]), flush=True)
    for kernel_path, got in steps.items():
        rows.append({"kernel": kernel_path, **got})
    return rows


def _per_call_ms(fn, n: int = 1000, warmup: int = 20) -> dict:
    """Wall time per call, host included: one synchronised call at a time, and back to back."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
        torch.cuda.synchronize()
    one = (time.perf_counter() - t0) / n * 1e3
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return {"one_call_ms": one, "back_to_back_ms": (time.perf_counter() - t0) / n * 1e3}


def pairs(limit: int) -> list[tuple[str, str]]:
    found = [(t, c) for t, c in GPU_PAIRS if (ROOT / c).exists()]
    for d in sorted((ROOT / "tests/realworld").iterdir()):
        if (d / "task.py").exists() and (d / "kernel.py").exists():
            found.append((str(d.relative_to(ROOT) / "task.py"), str(d.relative_to(ROOT) / "kernel.py")))
    return found[:limit]


def figures(report) -> dict:
    t = report.timing or {}
    keys = ("candidate_ms", "eager_ms", "compile_ms", "candidate_b2b_ms", "eager_b2b_ms", "compile_b2b_ms",
            "speedup_vs_eager", "speedup_vs_compile", "speedup_vs_eager_b2b", "speedup_vs_compile_b2b")
    return {k: t.get(k) for k in keys}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--pairs", type=int, default=14)
    ap.add_argument("--tune-variants", type=int, default=6)
    ap.add_argument("--skip", type=int, default=0, help="start at this pair (a run cut short goes on)")
    ap.add_argument("--kernels-only", action="store_true", help="no launch-overhead section")
    ap.add_argument("--launch-only", action="store_true", help="only the launch-overhead section")
    ap.add_argument("--harness", action="store_true", help="only where the figures come from (section 4)")
    ap.add_argument("--harness-steps", action="store_true",
                    help="only the one-call gap of a candidate's worker, one instrument at a time")
    args = ap.parse_args()
    if args.harness:
        Path(args.out).write_text(json.dumps({"harness": harness()}, indent=1))
        return 0
    if args.harness_steps:
        Path(args.out).write_text(json.dumps({"harness_steps": harness_steps()}, indent=1))
        return 0

    from autotriton_jupyter import tuning
    from autotriton_jupyter.task import Candidate, Task
    from autotriton_jupyter.verify import Verifier, VerifyOptions

    result: dict = {"kernels": []}
    if not args.kernels_only:
        result["launch"] = launch_overhead()
        print("launch overhead per call (ms):", json.dumps(result["launch"]), flush=True)
    if args.launch_only:
        Path(args.out).write_text(json.dumps(result, indent=1))
        return 0
    with Verifier(VerifyOptions(device="cuda", trials=1, seed=7, reference_cache=False)) as v:
        for task_path, kernel_path in pairs(args.pairs)[args.skip:]:
            t0 = time.perf_counter()
            task, cand = Task.from_file(ROOT / task_path), Candidate.from_file(ROOT / kernel_path)
            row: dict = {"task": task_path, "kernel": kernel_path}
            try:
                report = v.verify(task, cand)
            except Exception as e:  # a task that cannot run here: recorded, the run goes on
                row["error"] = f"{type(e).__name__}: {e}"
                result["kernels"].append(row)
                continue
            row["verdict"] = report.verdict
            row["before"] = figures(report)
            got = tuning.tune(cand, report, lambda cs, task=task: v.verify_many(task, cs), args.tune_variants)
            row["tuning"] = got.to_dict()
            best = got.best.report if got.best is not None else report
            row["after"] = figures(best)
            row["seconds"] = time.perf_counter() - t0
            result["kernels"].append(row)
            print(f"{kernel_path}: {report.verdict}, {json.dumps(row['before'])}; tuning: "
                  f"{row['tuning']['best'] or row['tuning']['skipped'] or 'no better variant'} "
                  f"({row['seconds']:.0f} s)", flush=True)
            Path(args.out).write_text(json.dumps(result, indent=1))
    timed = [k for k in result["kernels"] if k.get("verdict") == "pass" and k["before"].get("candidate_ms")]
    lines = [f"kernels passed and timed: {len(timed)} of {len(result['kernels'])}", "",
             "| figure | beats eager (before → after tuning) | beats torch.compile (before → after) |",
             "|---|---|---|"]
    for label, suffix in (("one call", ""), ("back to back", "_b2b")):
        cells = []
        for base in ("speedup_vs_eager", "speedup_vs_compile"):
            key = base + suffix
            before = sum(1 for k in timed if (k["before"].get(key) or 0) > 1)
            after = sum(1 for k in timed if (k["after"].get(key) or 0) > 1)
            cells.append(f"{before} → {after}")
        lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
    result["summary"] = lines
    Path(args.out).write_text(json.dumps(result, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
