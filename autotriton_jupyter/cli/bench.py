"""`autotriton bench`: benchmarks of this tool itself."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from .args import EXIT_PASS, _setting, _then, existing_dir, source_file
from .common import _add_verify_flags, _options, _progress


def cmd_bench_verify(args: argparse.Namespace) -> int:
    from ..bench.verify import run_benchmark

    result = run_benchmark(
        args.reference, args.candidates, _options(args), on_event=_progress(args.quiet)
    )
    print(json.dumps(result, indent=2) if args.json else result["text"])
    return EXIT_PASS


def cmd_bench_generate(args: argparse.Namespace) -> int:
    from ..bench.generate import bench_generate

    result = bench_generate(
        args.shape,
        batches=args.batches,
        prompt_tokens=args.prompt_tokens,
        new_tokens=args.new_tokens,
        static_cache=not args.no_static_cache,
        fused=args.decoder == "fused",
        temperature=args.temperature,
        top_p=args.top_p,
        budget_tokens=args.budget_tokens,
        profile=args.profile,
        profile_first=args.profile_first,
        on_event=_progress(args.quiet),
    )
    print(json.dumps(result, indent=2) if args.json else result["text"])
    return EXIT_PASS


def cmd_bench_finetune(args: argparse.Namespace) -> int:
    from ..bench.finetune import bench_finetune

    result = bench_finetune(
        args.shape,
        examples=args.examples,
        seq_tokens=args.seq_tokens,
        rank=args.rank,
        on_event=_progress(args.quiet),
    )
    print(json.dumps(result, indent=2) if args.json else result["text"])
    return EXIT_PASS


def cmd_bench_pipeline(args: argparse.Namespace) -> int:
    from ..bench.pipeline import bench_pipeline

    then = list(args.then or [])  # (REF.py, DIR) pairs, checked by _then
    result = bench_pipeline(
        args.reference,
        args.candidates,
        n=args.n,
        repeats=args.repeats,
        verify=_options(args),
        on_event=_progress(args.quiet),
        then=then,
    )
    print(json.dumps(result, indent=2) if args.json else result["text"])
    return EXIT_PASS


def register(sub: Any, T: dict[str, Callable[[str], Any]], sampling: Any, run: Any) -> None:
    """The `bench` subcommand and its own subcommands."""
    b = sub.add_parser("bench", help="benchmarks of this tool itself")
    bsub = b.add_subparsers(dest="what", required=True)
    bv = bsub.add_parser("verify", help="fixed cost per candidate and wall time for N candidates")
    bv.add_argument("reference", type=source_file)
    bv.add_argument(
        "candidates", nargs="+", type=source_file, help="candidate files (repeat one to get N)"
    )
    bv.add_argument("--json", action="store_true", help="one JSON object on stdout")
    _add_verify_flags(bv)
    bv.set_defaults(func=cmd_bench_verify)
    bg = bsub.add_parser(
        "generate",
        help="decode tok/s of the transformers backend (random "
        "weights of AutoTriton's shape by default)",
    )
    bg.add_argument("--shape", choices=["autotriton", "tiny"], default="autotriton",
                    help="the model's shape, random weights (default %(default)s: the 8B model's)")
    bg.add_argument("--batches", type=T["batches"], default="1,8",
                    help="batch sizes to time, comma-separated (default %(default)s)")
    bg.add_argument("--prompt-tokens", type=T["tokens"], default=512,
                    help="prompt length (default %(default)s)")
    bg.add_argument("--new-tokens", type=T["tokens"], default=256,
                    help="tokens decoded and timed per batch (default %(default)s)")
    bg.add_argument("--no-static-cache", action="store_true",
                    help="decode without the static KV cache (and its compiled step)")
    bg.add_argument(
        "--temperature", type=T["temperature"], default=0.0, help="0 (default): greedy; >0 samples"
    )
    bg.add_argument("--top-p", type=T["top_p"], default=sampling.top_p,
                    help="nucleus sampling's mass, when --temperature > 0 (default %(default)s)")
    bg.add_argument(
        "--profile", action="store_true", help="add the GPU kernels of 16 decode steps (CUDA)"
    )
    bg.add_argument(
        "--profile-first",
        action="store_true",
        help="add the Python calls of each batch size's first run, heaviest first (on CUDA that "
        "run compiles the decode step; its seconds are then measured under the profiler)",
    )
    bg.add_argument(
        "--decoder",
        choices=["fused", "hf"],
        default="fused",
        help="fused: this project's Llama decoder; hf: transformers' forward + StaticCache",
    )
    bg.add_argument(
        "--budget-tokens",
        type=T["tokens"],
        help="size the KV cache for this many new tokens (as a real 8k-token answer "
        "does) while timing only --new-tokens",
    )
    bg.add_argument("--json", action="store_true", help="one JSON object on stdout")
    bg.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    bg.set_defaults(func=cmd_bench_generate)
    bf = bsub.add_parser(
        "finetune",
        help="LoRA training tokens/s and peak memory (random weights of AutoTriton's shape)",
    )
    bf.add_argument("--shape", choices=["autotriton", "tiny"], default="autotriton",
                    help="the model's shape, random weights (default %(default)s: the 8B model's)")
    bf.add_argument("--examples", type=T["count"], default=8,
                    help="training examples (default %(default)s)")
    bf.add_argument("--seq-tokens", type=T["tokens"], default=2048,
                    help="tokens per example (default %(default)s)")
    bf.add_argument("--rank", type=_setting("finetune", "rank"), default=16,
                    help="LoRA rank (default %(default)s)")
    bf.add_argument("--json", action="store_true", help="one JSON object on stdout")
    bf.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    bf.set_defaults(func=cmd_bench_finetune)
    bp = bsub.add_parser(
        "pipeline",
        help="seconds from a cell run to its result view, generation excluded "
        "(known candidates replayed from a folder)",
    )
    bp.add_argument("reference", type=source_file)
    bp.add_argument(
        "candidates", type=existing_dir, help="folder of candidate files (replayed as the model)"
    )
    bp.add_argument("-n", type=T["samples"], default=run.n,
                    help=f"candidates per cell, replayed from the folder (default {run.n})")
    bp.add_argument("--repeats", type=T["count"], default=2,
                    help="cells of this task in one session, the first included (default %(default)s)")
    bp.add_argument(
        "--then",
        type=_then,
        action="append",
        metavar="REF.py:DIR",
        help="after the repeats, a cell for another task in the same session (repeatable)",
    )
    bp.add_argument("--json", action="store_true", help="one JSON object on stdout")
    _add_verify_flags(bp)
    bp.set_defaults(func=cmd_bench_pipeline)
