"""`autotriton eval`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from .args import EXIT_PASS, existing_dir, output_dir
from .common import _add_verify_flags, _model_options, _options, _progress, _TokenProgress, _warn

# Checks that need more than one argument, run by main() before the command does any work.


def _check_eval(args: argparse.Namespace) -> None:
    from ..evaluation import check_candidates, check_results, task_files

    # Refused here, before a model loads: folders without tasks or candidates, and a
    # results.jsonl that exists without --resume or that a resumed run could not continue.
    tasks = task_files(args.tasks)
    if args.candidates:
        check_candidates(args.candidates, tasks)
    check_results(args.out, args.resume)


def cmd_eval(args: argparse.Namespace) -> int:
    from ..evaluation import EvalOptions, render_markdown, run_eval
    from ..model.generator import GenerationParams

    verify = _options(args)
    generator = None
    if not args.candidates:
        from ..model.registry import load

        options = _model_options(args)
        generator = load(options.name, options, on_event=_TokenProgress(args.quiet))
    eo = EvalOptions(
        out_dir=args.out,
        candidates_dir=args.candidates,
        n=args.n,
        rounds=args.rounds,
        resume=args.resume,
        launch_bound_ms=args.launch_bound_ms,
        verify=verify,
        params=GenerationParams(max_tokens=args.max_tokens),
    )
    summary = run_eval(
        args.tasks, eo, generator, on_progress=_progress(args.quiet), on_warning=_warn
    )
    print(json.dumps(summary, indent=2) if args.json else render_markdown(summary))
    print(f"results in {args.out} (results.jsonl, summary.md, report.html)", file=sys.stderr)
    return EXIT_PASS


def register(sub: Any, T: dict[str, Callable[[str], Any]], sampling: Any, run: Any) -> None:
    """The `eval` subcommand."""
    from ..config import LAUNCH_BOUND_MS
    e = sub.add_parser(
        "eval",
        help="measure a model, or a folder of candidates, on a folder of tasks",
        description="Exit status: 0 the run finished (whatever the candidates' verdicts: they "
        "are in the results), 2 usage or input error, 130 interrupted (--resume continues).",
    )
    e.add_argument("tasks", type=existing_dir, help="folder of KernelBench-format task files")
    e.add_argument(
        "--candidates",
        type=existing_dir,
        help="score these files instead of generating: DIR/<task>/*.py",
    )
    e.add_argument("--model", type=T["name"], help="the model that generates (`autotriton model list`; default: the configured one)")
    e.add_argument("-n", type=T["samples"], default=run.n, help=f"samples per task (default {run.n})")
    e.add_argument("--rounds", type=T["rounds"], default=run.rounds,
                   help=f"repair rounds after the first samples (default {run.rounds})")
    e.add_argument("--max-tokens", type=T["tokens"], default=sampling.max_tokens,
                   help=f"tokens per answer at most (default {sampling.max_tokens})")
    e.add_argument(
        "--out",
        type=output_dir,
        default="autotriton-eval",
        help="results folder (default autotriton-eval)",
    )
    e.add_argument("--resume", action="store_true", help="continue a run in --out")
    e.add_argument(
        "--launch-bound-ms",
        type=T["ms"],
        default=LAUNCH_BOUND_MS,
        help="mark timings under this many ms per call as launch-bound (default %(default)s)",
    )
    e.add_argument("--json", action="store_true", help="one JSON object on stdout (the summary)")
    _add_verify_flags(e)
    e.set_defaults(func=cmd_eval, precheck=_check_eval)
