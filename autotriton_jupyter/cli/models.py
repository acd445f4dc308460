"""`autotriton model`, `autotriton finetune` and `autotriton adapters`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from .args import EXIT_PASS, _setting, existing_file, existing_path, output_file
from .common import _model_options, _options_default, _progress


def cmd_model_list(args: argparse.Namespace) -> int:
    from ..model.registry import list_models

    specs = list_models(_model_options(args))
    if args.json:
        from dataclasses import asdict

        print(json.dumps([asdict(s) for s in specs]))
        return EXIT_PASS
    for s in specs:
        state = "ready" if s.available else f"needs {s.needs}"
        where = f"  {s.path}" if s.available and s.path else ""
        print(
            f"{s.name:<14} {s.backend:<9} {state}{where}{'  (' + s.about + ')' if s.about else ''}"
        )
    return EXIT_PASS


def cmd_model_pull(args: argparse.Namespace) -> int:
    from ..model.registry import pull

    path = pull(args.name, on_event=_progress(args.quiet))
    print(path)
    return EXIT_PASS


def cmd_finetune(args: argparse.Namespace) -> int:
    from ..config import load
    from ..interrupt import run_interruptibly
    from ..training.sft import FinetuneOptions, run_finetune

    o = load("finetune", FinetuneOptions())
    for key in ("rank", "alpha", "epochs", "lr", "method", "generations", "steps"):
        if getattr(args, key) is not None:
            setattr(o, key, getattr(args, key))
    if args.max_completion_tokens is not None:
        o.max_completion_tokens = args.max_completion_tokens
    if o.method not in ("sft", "grpo"):
        from ..task import TaskError

        raise TaskError(f"method must be sft or grpo, not {o.method!r} (check [finetune]).")
    quiet = args.quiet

    def progress(d: dict) -> None:
        if quiet:
            return
        if "reward" in d:
            from ..training.grpo import describe

            line = describe(d)
        else:
            line = (
                f"epoch {d['epoch']}/{d['epochs']} step {d['step']}/{d['steps']} "
                f"loss {d['loss']:.4f} ({d['tokens_per_s']:.0f} tok/s)"
            )
        print(f"\r[autotriton] {line}", end="", file=sys.stderr, flush=True)

    def train(cancel):
        kw = dict(
            library=args.library,
            resume=args.resume,
            model_options=_model_options(args),
            on_progress=progress,
            cancel=cancel,
        )
        if o.method == "grpo":
            from ..training.grpo import run_grpo

            return run_grpo(args.base, args.name, o, verify_options=_options_default(), **kw)
        return run_finetune(args.base, args.name, o, **kw)

    result, interrupted = run_interruptibly(train)
    if not quiet:
        print(file=sys.stderr)
    if result["interrupted"]:
        print(json.dumps(result, indent=2))
        print(
            f"autotriton: interrupted; resume with `autotriton finetune --name {args.name} "
            f"{'--method grpo ' if o.method == 'grpo' else ''}--resume`.",
            file=sys.stderr,
        )
        return 130
    figures = (
        f"mean reward {result['first_reward']:.3f} -> {result['final_reward']:.3f}"
        if o.method == "grpo"
        else f"loss {result['first_loss']:.3f} -> {result['final_loss']:.3f}"
    )
    print(
        f"adapter {args.name} saved; the next generations with {args.base} use it ({figures}).",
        file=sys.stderr,
    )
    if result["held_out_tasks"]:
        from ..model.registry import load
        from ..training.heldout import before_after

        mo = _model_options(args)
        mo.adapter = "none"
        base = load(args.base, mo)
        mo.adapter = args.name
        tuned = load(args.base, mo)
        scores = before_after(
            result["held_out_tasks"],
            base,
            tuned,
            _options_default(),
            max_tokens=args.max_tokens,
            on_progress=_progress(quiet),
        )
        b, a = scores["before"], scores["after"]
        print(
            f"held-out tasks: {b['passed']}/{b['tasks']} verified before fine-tuning, "
            f"{a['passed']}/{a['tasks']} after",
            file=sys.stderr,
        )
        result["held_out_scores"] = scores
    print(json.dumps(result, indent=2))
    return EXIT_PASS


def cmd_adapters(args: argparse.Namespace) -> int:
    from ..model.adapters import list_adapters, remove_adapter, use_adapter

    if args.what == "list":
        infos = list_adapters()
        if not infos:
            print("no adapters yet (make one with `autotriton finetune`)")
        for a in infos:
            loss = a.metrics.get("final_loss")
            print(
                f"{a.name:<20} base {a.base:<12} {a.examples} examples, final loss "
                f"{loss if loss is None else round(loss, 4)}, "
                f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(a.created))}"
            )
    elif args.what == "export":
        from ..model.gguf_lora import export_adapter
        from ..model.registry import resolve

        options = _model_options(args)
        out = export_adapter(
            args.name, lambda base: resolve(base, options), args.output or "", args.base or ""
        )
        print(f"wrote {out} (llama.cpp: --lora {out})")
    elif args.what == "use":
        use_adapter(args.name)
        print(f"generation now prefers adapter {args.name} for its base model")
    else:
        remove_adapter(args.name)
        print(f"removed adapter {args.name}")
    return EXIT_PASS


def register(sub: Any, T: dict[str, Callable[[str], Any]], sampling: Any, run: Any) -> None:
    """The `finetune`, `adapters` and `model` subcommands."""
    from ..training.sft import FinetuneOptions
    f = sub.add_parser("finetune", help="train a LoRA adapter on your accepted kernels")
    f.add_argument(
        "--base", type=T["name"], default="tiny-hf", help="a transformers model (default %(default)s)"
    )
    f.add_argument(
        "--name", type=T["adapter"], default="personal", help="adapter name (default %(default)s)"
    )
    f.add_argument("--rank", type=_setting("finetune", "rank"),
                   help=f"LoRA rank (default {FinetuneOptions.rank})")
    f.add_argument("--alpha", type=_setting("finetune", "alpha"),
                   help=f"LoRA alpha, its scale (default {FinetuneOptions.alpha})")
    f.add_argument("--epochs", type=_setting("finetune", "epochs"),
                   help=f"passes over the accepted kernels (default {FinetuneOptions.epochs})")
    f.add_argument("--lr", type=_setting("finetune", "lr"),
                   help=f"learning rate (default {FinetuneOptions.lr:g})")
    f.add_argument(
        "--method",
        choices=["sft", "grpo"],
        help="sft (default): learn the accepted answers; grpo: reinforcement learning on "
        "the accepted tasks with the verifier as the reward (needs trl)",
    )
    f.add_argument(
        "--generations",
        type=_setting("finetune", "generations"),
        help=f"grpo: answers per task and step (default {FinetuneOptions.generations})",
    )
    f.add_argument(
        "--steps",
        type=_setting("finetune", "steps"),
        help="grpo: training steps (default epochs x tasks)",
    )
    f.add_argument(
        "--max-completion-tokens",
        type=_setting("finetune", "max_completion_tokens"),
        help=f"grpo: answer length (default {FinetuneOptions.max_completion_tokens})",
    )
    f.add_argument("--resume", action="store_true", help="continue an interrupted run")
    f.add_argument(
        "--max-tokens",
        type=T["tokens"],
        default=sampling.max_tokens,
        help="per answer when comparing before/after on held-out tasks",
    )
    f.add_argument("--library", type=existing_file,
                   help="the kernel library to learn from (default: AUTOTRITON_LIBRARY, else the user data directory)")
    f.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    f.set_defaults(func=cmd_finetune, model=None)

    a = sub.add_parser("adapters", help="LoRA adapters made by finetune")
    asub = a.add_subparsers(dest="what", required=True)
    asub.add_parser("list", help="the adapters: base model, examples, final loss, date").set_defaults(
        func=cmd_adapters
    )
    for what, says in (
        ("use", "make this adapter the one generation uses for its base model (over the newest)"),
        ("remove", "delete this adapter's files"),
    ):
        ap = asub.add_parser(what, help=says)
        ap.add_argument("name", type=T["adapter"], help="the adapter's name (`autotriton adapters list`)")
        ap.set_defaults(func=cmd_adapters)
    ae = asub.add_parser("export", help="write an adapter as a llama.cpp LoRA GGUF file")
    ae.add_argument("name", type=T["adapter"])
    ae.add_argument("-o", "--output", type=output_file, help="default: adapter.gguf in its folder")
    ae.add_argument(
        "--base", type=existing_path, help="base .gguf or model folder (default: its base)"
    )
    ae.set_defaults(func=cmd_adapters, model=None)

    m = sub.add_parser("model", help="the models available here")
    msub = m.add_subparsers(dest="what", required=True)
    ml = msub.add_parser("list", help="named models and what each needs")
    ml.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ml.set_defaults(func=cmd_model_list, model=None)
    mp = msub.add_parser("pull", help="download a model's weights (needs network)")
    mp.add_argument("name", nargs="?", type=T["name"], default="autotriton")
    mp.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    mp.set_defaults(func=cmd_model_pull)
