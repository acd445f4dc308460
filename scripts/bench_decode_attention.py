"""Time decode_attention's tuning choices on the GPU (AutoTriton's shape: 32 query heads,
8 KV heads, head size 128, bf16) and print the best; used to pick the defaults.

    PYTHONPATH=$PWD python3 scripts/bench_decode_attention.py
"""

from __future__ import annotations

import functools
import itertools
import json
import sys

import torch

from autotriton_jupyter.model.decode_attention import decode_attention


def time_us(fn, reps: int = 200) -> float:
    """GPU microseconds per call, replayed from a CUDA graph as in the decode loop."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / reps


def main() -> None:
    length, rows = 8704, []
    for batch, pos in [(1, 640), (1, 8000), (8, 640), (8, 8000)]:
        q = torch.randn(batch, 32, 128, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(batch, 8, length, 128, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        p = torch.tensor([pos], device="cuda")
        configs = [("vec", c, b, w) for c, b, w in [(32, 16, 1), (64, 16, 1), (128, 16, 1)]]
        configs += [
            ("dot", c, b, w)
            for c, b, w in itertools.product((32, 64, 128, 256), (16, 32, 64), (1, 2, 4))
            if b <= c
        ]
        for kind, chunk, block, warps in configs:
            us = time_us(
                functools.partial(
                    decode_attention, q, k, v, p, 128**-0.5, chunk, block, warps, kind
                )
            )
            rows.append(
                {
                    "batch": batch,
                    "pos": pos,
                    "kind": kind,
                    "chunk": chunk,
                    "block": block,
                    "warps": warps,
                    "us": us,
                }
            )
    # the best config by total time over the four cases
    score: dict[tuple, float] = {}
    for r in rows:
        key = (r["kind"], r["chunk"], r["block"], r["warps"])
        score[key] = score.get(key, 0.0) + r["us"]
    best = min(score, key=score.get)
    for key in sorted(score, key=score.get)[:8]:
        cases = [
            f"{r['us']:.1f}" for r in rows if (r["kind"], r["chunk"], r["block"], r["warps"]) == key
        ]
        print(
            f"{key[0]} chunk {key[1]:>3} block {key[2]:>2} warps {key[3]}: "
            f"us per call {' / '.join(cases)}"
        )
    json.dump(
        {"rows": rows, "best": best}, sys.stdout if len(sys.argv) < 2 else open(sys.argv[1], "w")
    )
    print(f"\nbest: {','.join(map(str, best))}")


if __name__ == "__main__":
    main()
