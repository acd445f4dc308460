"""`autotriton generate` and `autotriton tritonize`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .args import EXIT_FAIL, EXIT_PASS, output_dir, output_file, source_file
from .common import (
    _add_tune_flags,
    _add_verify_flags,
    _model_options,
    _options,
    _progress,
    _TokenProgress,
    _warn,
)

# Checks that need more than one argument, run by main() before the command does any work.


def _check_generate(args: argparse.Namespace) -> None:
    from ..pipeline.samples import earlier_samples
    from ..task import TaskError

    out = args.output or f"autotriton-out/{Path(args.reference).stem}"
    if not args.output:  # -o DIR was checked as it was parsed
        try:
            output_dir(out)
        except argparse.ArgumentTypeError as e:
            raise TaskError(
                f"{str(e).rstrip('.')}; it is the default output folder: choose another with -o DIR."
            ) from None
    blocked = [p for p in earlier_samples(out) if not p.is_file()]
    if blocked:
        raise TaskError(
            f"{blocked[0]} is not a file, so the sample cannot be written there (even with "
            "--force); move it away or choose another folder with -o DIR."
        )
    found = [] if args.force else earlier_samples(out)
    if found:
        shown = ", ".join(p.name for p in found[:4]) + (", ..." if len(found) > 4 else "")
        raise TaskError(
            f"{out} already holds samples of an earlier run ({shown}); pass --force to "
            "overwrite them, or choose another folder with -o DIR."
        )


def cmd_generate(args: argparse.Namespace) -> int:
    from ..model.generator import GenerationParams
    from ..model.registry import load
    from ..pipeline.samples import generate_interruptibly, sample_record, write_samples
    from ..task import Task

    task = Task.from_file(args.reference)
    options = _model_options(args)
    progress = _TokenProgress(args.quiet)
    generator = load(options.name, options, on_event=progress)
    _warn_replay_repeats(generator, args.n)
    params = GenerationParams(
        max_tokens=args.max_tokens, temperature=args.temperature, top_p=args.top_p, seed=args.seed
    )
    samples, interrupted = generate_interruptibly(task, generator, args.n, params, progress)
    out_dir = args.output or f"autotriton-out/{task.name}"
    if args.force:  # an earlier run's samples go: none of them may mix with this run's
        from ..pipeline.samples import earlier_samples

        for p in earlier_samples(out_dir):
            p.unlink(missing_ok=True)
    summary, written = write_samples(samples, out_dir, options.name)
    if args.json:
        print(
            json.dumps(
                {
                    "model": options.name,
                    "summary": str(summary),
                    "interrupted": interrupted,
                    "samples": [sample_record(x, w) for x, w in zip(samples, written)],
                }
            )
        )
    else:
        for x, w in zip(samples, written):
            what = w["code"]
            if x.problem:  # no candidate; with code, the file holds its last code block
                block = f"its last code block: {w['code']}, " if w["code"] else ""
                what = f"no candidate ({x.problem}); {block}its answer: {w['completion']}"
            print(
                f"sample {x.sample + 1}: {x.tokens} tokens in {x.seconds:.1f} s "
                f"({x.tokens_per_s:.1f} tok/s, {x.finish_reason}) -> {what}"
            )
        print(f"written to {out_dir} (summary.json)")
    if interrupted:
        done = sum(x.finish_reason != "cancelled" for x in samples)
        kept = (
            f"no sample had finished, so none was kept; run again with --force (to replace what "
            f"this run wrote in {out_dir}) or with another -o DIR"
            if done == 0
            else f"1 finished sample was kept in {out_dir}"
            if done == 1
            else f"{done} finished samples were kept in {out_dir}"
        )
        print(f"autotriton: interrupted; {kept}.", file=sys.stderr)
        return 130
    return EXIT_PASS


def _warn_replay_repeats(generator: Any, n: int) -> None:
    """files:DIR with fewer answer files than -n replays them in turn: say so, once."""
    from ..model.backends.replay import SUFFIXES, ReplayGenerator

    if not isinstance(generator, ReplayGenerator) or len(generator.files) >= n:
        return
    k = len(generator.files)
    repeats = (
        "the last sample repeats an earlier one"
        if n - k == 1
        else f"the last {n - k} samples repeat earlier ones"
    )
    _warn(
        f"{generator.name} holds only {k} answer file{'s' if k > 1 else ''} for -n {n}: the "
        f"files are replayed in turn, so {repeats}; pass -n {k}, or put more answer files "
        f"({', '.join(SUFFIXES)}) in {generator.folder}."
    )


def _check_library(library: str | None) -> None:
    """Raise the StoreError the results' save would meet. A library not there yet is not
    made here (a run that fails before its save leaves none): its folder is checked."""
    import os

    from ..store import Store, StoreError, default_path

    path = Path(library) if library else default_path()
    if path.exists():
        with Store(path) as store:
            store.writable()
        return
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise StoreError(
            f"A new kernel library cannot be made at {path}: {folder} is not a writable "
            "folder. Use a writable path (AUTOTRITON_LIBRARY or --library)."
        )


def cmd_tritonize(args: argparse.Namespace) -> int:
    from ..config import RANK_FIGURES, TritonizeOptions, tune_settings
    from ..model.generator import GenerationParams
    from ..model.registry import load
    from ..pipeline import tritonize
    from ..store import Store
    from ..task import Task
    from ..verify.report import format_text

    task = Task.from_file(args.reference)
    tuning = tune_settings(args.tune, args.no_tune, args.tune_budget, args.tune_variants)  # refused before any work
    options = _model_options(args)
    verify = _options(args)
    _check_library(args.library)  # before any work: a library that cannot take the results
    progress = _TokenProgress(args.quiet)
    generator = load(options.name, options, on_event=progress)
    topts = TritonizeOptions(
        n=args.n,
        rounds=args.rounds,
        verify=verify,
        **tuning,
        speed_rounds=args.speed_rounds,
        rank_by=args.rank_by,
        params=GenerationParams(
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            top_p=args.top_p,
            seed=args.seed,
        ),
    )
    emit = _progress(args.quiet)

    def on_event(e) -> None:
        if e.kind == "token":
            progress(e.data["event"])
        elif e.kind in ("generating", "repairing", "verifying", "speeding", "tuning", "done"):
            emit(e.message)
        elif e.kind == "verified":
            emit(f"round {e.round + 1} sample {e.sample + 1}: {e.message}")

    from ..interrupt import run_interruptibly

    result, interrupted = run_interruptibly(
        lambda cancel: tritonize(task, generator, topts, on_event=on_event, cancel=cancel)
    )
    if interrupted:
        print(
            "autotriton: interrupted; the candidates judged before it keep their verdicts, and "
            "the samples cut off or not judged are stored marked interrupted.",
            file=sys.stderr,
        )
    best = result.best
    replaced = None  # the kernel that --accept replaced: its task's name
    with Store(args.library) as store:
        task_id, ids = store.save_result(task.name, task.source, result)
        if args.accept and best and best.code:  # candidates[0] is the best: ids[0] is its row
            old = store.find(args.accept)
            replaced = old.task_name if old is not None else None
            store.accept(args.accept, task_id, best.code, candidate_id=ids[0], replace=True)
        where = store.path
    if args.output and best and best.code:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(best.code)
    accepted = args.accept if args.accept and best else None
    if args.json:
        print(json.dumps({**result.to_dict(), "library": str(where), "candidate_ids": ids, "accepted": accepted,
                          "replaced": replaced}))
    else:
        if len(result.candidates) > 1:
            print(f"candidates, best first (ranked by the {RANK_FIGURES[args.rank_by]} time "
                  "where timed):")
        for c in result.candidates:
            r = c.report
            why = (
                ""
                if c.passed
                else f" ({r.reasons[0]['check']}: {r.reasons[0]['message']})"
                if r and r.reasons
                else ""
            )
            tuned = f" (tuned: {c.tuned})" if c.tuned else ""
            print(
                f"round {c.round + 1} sample {c.sample + 1}{tuned}: {r.verdict if r else 'no code'}{why}"
            )
        if best and best.report:
            print("\nbest candidate:\n" + format_text(best.report))
            if args.output:
                print(f"written to {args.output}")
        elif args.output:
            print(f"\nno candidate passed, so {args.output} was not written")
        if ids:
            span = f"candidate #{ids[0]}" if len(ids) == 1 else f"candidates #{min(ids)} to #{max(ids)}"
            print(f"\nstored in {where} as {span} (`autotriton kernels candidates` lists them)")
        if accepted:
            if replaced is not None:
                was = "" if replaced == task.name else f", a kernel of {replaced}"
                print(f"replaced the kernel named {accepted}{was}")
            print(f"accepted as {accepted}: `from autotriton_jupyter import load_kernel; "
                  f"{accepted} = load_kernel({accepted!r})`")
        elif best and ids:
            print(f"keep it with `autotriton kernels accept NAME {ids[0]}` (or run with --accept NAME)")
    skipped = (result.tuning or {}).get("skipped")
    if args.tune and skipped:  # asked for, and it did not run: say so even with -q
        _warn(f"--tune: the tuning pass did not run: {skipped}.")
    if args.accept and not best:
        top = result.candidates[0] if result.candidates else None
        extra = (
            f"; candidate #{ids[0]} is conditional: `autotriton kernels accept {args.accept} "
            f"{ids[0]} --conditional` keeps it anyway"
            if top is not None and top.conditional and ids
            else ""
        )
        print(f"autotriton: nothing was accepted as {args.accept}: no candidate passed{extra}.", file=sys.stderr)
    return EXIT_PASS if best else EXIT_FAIL


def _add_sampling_flags(p: argparse.ArgumentParser, T: dict[str, Callable[[str], Any]], sampling: Any) -> None:
    """The model and how it samples, for generate and tritonize alike."""
    p.add_argument(
        "--model",
        type=T["name"],
        help="autotriton (default), tiny, tiny-hf, a .gguf file, an HF folder, openai:NAME, "
        "or files:DIR (answers replayed from the files in DIR)",
    )
    p.add_argument(
        "--max-tokens",
        type=T["tokens"],
        default=sampling.max_tokens,
        help="tokens per sample (default %(default)s)",
    )
    p.add_argument(
        "--temperature", type=T["temperature"], default=sampling.temperature,
        help="sampling temperature (default %(default)s)",
    )  # fmt: skip
    p.add_argument(
        "--top-p", type=T["top_p"], default=sampling.top_p, help="nucleus sampling (default %(default)s)"
    )
    p.add_argument(
        "--seed", type=T["seed"], help="the model's sampling seed (default: a new one each run)"
    )


def register(sub: Any, T: dict[str, Callable[[str], Any]], sampling: Any, run: Any) -> None:
    """The `generate` and `tritonize` subcommands."""
    g = sub.add_parser("generate", help="sample Triton rewrites of a task with the local model")
    g.add_argument("reference", type=source_file, help="REF.py in the KernelBench format")
    g.add_argument("-n", type=T["samples"], default=run.n, help=f"number of samples (default {run.n})")
    _add_sampling_flags(g, T, sampling)
    g.add_argument(
        "-o",
        "--output",
        type=output_dir,
        help="folder for completions and candidates (default autotriton-out/TASK)",
    )
    g.add_argument(
        "--force",
        action="store_true",
        help="overwrite the samples of an earlier run in the output folder",
    )
    g.add_argument("--json", action="store_true", help="one JSON object on stdout")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    g.set_defaults(func=cmd_generate, precheck=_check_generate)

    t = sub.add_parser(
        "tritonize",
        help="generate, verify and rank Triton rewrites of a task",
        description="Exit status: 0 a candidate passed, 1 none did (also after Ctrl-C, which "
        "stops the candidates being checked and keeps the verdicts given), 2 usage or input error.",
    )
    t.add_argument("reference", type=source_file, help="REF.py in the KernelBench format")
    t.add_argument("-n", type=T["samples"], default=run.n, help=f"samples (default {run.n})")
    t.add_argument(
        "--rounds",
        type=T["rounds"],
        default=run.rounds,
        help=f"repair rounds after the first (default {run.rounds})",
    )
    _add_sampling_flags(t, T, sampling)
    t.add_argument("-o", "--output", type=output_file, help="write the best passing candidate here")
    t.add_argument(
        "--speed-rounds",
        type=T["rounds"],
        default=run.speed_rounds,
        metavar="N",
        help="while the best passing candidate is slower than torch.compile, send it back with "
        f"its timing for a faster one, up to N times (default {run.speed_rounds}; needs a GPU)",
    )
    t.add_argument(
        "--rank-by",
        choices=["device", "call"],
        default=run.rank_by,
        help="the speed figure that ranks candidates: device (calls back to back, what a kernel "
        f"costs inside a model) or call (one call on an idle GPU, launch included; default {run.rank_by})",
    )
    _add_tune_flags(t, by_default=True)
    t.add_argument(
        "--accept",
        type=T["kernel"],
        metavar="NAME",
        help="keep the best passing candidate in the library under NAME (a Python identifier; "
        "an existing kernel of that name is replaced), as the notebook's Accept does",
    )
    t.add_argument(
        "--library",
        type=output_file,
        help="kernel library file (default: the user data directory)",
    )
    t.add_argument("--json", action="store_true", help="one JSON object on stdout (the result, the library, the stored ids)")
    _add_verify_flags(t, seed=False)
    t.set_defaults(func=cmd_tritonize)
