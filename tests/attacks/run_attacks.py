"""Run attack candidates through the verifier, one Verifier per task (the reference is reused).

    PYTHONPATH=. python tests/attacks/run_attacks.py [--device cpu|cuda] [--no-timing]
        [--out RESULTS.json] [FILE ...]

With no FILE, every tests/attacks/<class>__<name>.py is run. Prints one line per file
(verdict and failing checks) and writes the full reports to --out. The README's CPU
table was made with the CLI (`autotriton verify ... --device cpu --no-timing --json`),
one file at a time; this script is what the GPU confirmation run used.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "corpus"


def header(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines()[:3]:
        key, _, value = line.lstrip("# ").partition(":")
        out[key.strip()] = value.strip()
    return out


def task_path(path: Path, task: str) -> Path:
    return path.with_name(path.stem + ".task.py") if task == "inline" else CORPUS / task / "task.py"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--no-sandbox", action="store_true")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)

    from autotriton_jupyter.task import Candidate, Task
    from autotriton_jupyter.verify import Verifier
    from autotriton_jupyter.verify.judge import VerifyOptions

    files = [Path(f) for f in args.files] or sorted(
        p for p in HERE.glob("*__*.py") if not p.name.endswith(".task.py")
    )
    by_task: dict[Path, list[Path]] = defaultdict(list)
    for f in files:
        by_task[task_path(f, header(f)["task"])].append(f)
    opts = VerifyOptions(
        device=args.device, timing=not args.no_timing, sandbox=not args.no_sandbox, timeout=120.0
    )
    results = {}
    with Verifier(opts) as v:
        for tp, cands in by_task.items():
            task = Task.from_file(tp)
            for f in cands:
                t0 = time.perf_counter()
                rep = v.verify(task, Candidate.from_file(f))
                d = rep.to_dict()
                results[f.name] = d
                failing = sorted({r["check"] for r in d["reasons"]})
                speed = (d.get("timing") or {}).get("speedup_vs_eager")
                extra = f" speedup_vs_eager={speed:.2f}" if speed else ""
                print(
                    f"{f.name}: {d['verdict']} [{', '.join(failing)}]{extra} "
                    f"({time.perf_counter() - t0:.0f}s)",
                    flush=True,
                )
                for r in d["reasons"][:2]:
                    print(f"    {r['check']}: {r['message'][:200]}", flush=True)
                if args.out:
                    Path(args.out).write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
