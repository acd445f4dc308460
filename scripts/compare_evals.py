"""Compare two `autotriton eval` output folders: correctness must agree exactly, speedups are shown side by side.

python scripts/compare_evals.py RUN1 RUN2    (exit 1 when the correctness figures differ)
"""

import json
import sys
from pathlib import Path

EXACT = (
    "compiled",
    "ran",
    "correct",
    "tasks_with_a_correct_candidate",
    "pass_at_k",
    "failed_checks",
)


def main(a: str, b: str) -> int:
    s1, s2 = (json.loads((Path(d) / "summary.json").read_text()) for d in (a, b))
    differ = [k for k in EXACT if s1[k] != s2[k]]
    differ += [
        f"{t}.correct"
        for t in s1["per_task"]
        if s1["per_task"][t]["correct"] != s2["per_task"].get(t, {}).get("correct")
    ]
    print("task | vs eager, run 1 -> 2 | vs compile, run 1 -> 2 | eager ms 1 -> 2 | launch-bound")
    fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    for t, r1 in s1["per_task"].items():
        r2 = s2["per_task"].get(t, {})
        print(
            f"{t} | {fmt(r1['speedup_vs_eager'])} -> {fmt(r2.get('speedup_vs_eager'))} | "
            f"{fmt(r1['speedup_vs_compile'])} -> {fmt(r2.get('speedup_vs_compile'))} | "
            f"{fmt(r1.get('eager_ms'))} -> {fmt(r2.get('eager_ms'))} | {r1.get('launch_bound')}"
        )
    print("correctness: identical" if not differ else f"correctness DIFFERS: {', '.join(differ)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
