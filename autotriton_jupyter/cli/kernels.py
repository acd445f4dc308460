"""`autotriton kernels`: the library of accepted kernels."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .args import EXIT_PASS, EXIT_USAGE, _one_line, existing_file, output_file


def cmd_kernels_check(args: argparse.Namespace) -> int:
    """SQLite's integrity check of the library: exit 0 when sound, 1 when damaged."""
    from ..store import LibraryDamaged, Store, default_path

    path = Path(args.library) if args.library else default_path()
    if not path.exists():
        print(f"autotriton: there is no kernel library at {path} yet", file=sys.stderr)
        return EXIT_USAGE
    try:
        store = Store(path, write=False)
    except LibraryDamaged as e:  # damaged past opening: the same answer as damaged pages
        print(f"autotriton: {_one_line(e)}", file=sys.stderr)
        return 1
    with store:
        problems = store.check()
        if problems:
            print(f"the kernel library {path} is damaged:", file=sys.stderr)
            for p in problems[:20]:
                print(f"  {p}", file=sys.stderr)
            print(f"`autotriton kernels recover --library {path}` copies what is readable "
                  "into a new file.", file=sys.stderr)
            return 1
        counts = store.counts()
    print(f"{path}: ok ({counts['accepted']} accepted kernels, {counts['candidates']} "
          f"candidates, {counts['tasks']} tasks)")
    return 0


def cmd_kernels_recover(args: argparse.Namespace) -> int:
    from ..recover import recover
    from ..store import default_path

    path = Path(args.library) if args.library else default_path()
    got = recover(path, Path(args.out) if args.out else None)
    print(got.summary())
    print(f"Check it with `autotriton kernels list --library {got.out}`, then move {path} "
          f"aside and {got.out} into its place.")
    return 0


def cmd_kernels(args: argparse.Namespace) -> int:
    from ..store import NoLibrary, Store

    try:
        store = Store(args.library, write=False)
    except NoLibrary as e:
        if args.what != "list":
            raise
        print(f"no accepted kernels yet (there is no library at {e.path})")
        return EXIT_PASS
    with store:
        if args.what == "list":
            rows = store.accepted()
            if not rows:
                print(f"no accepted kernels yet in {store.path}")
            for a in rows:
                if a.speedup_vs_eager_b2b:  # device time: what ranked it
                    sp = f"{a.speedup_vs_eager_b2b:.2f}x eager back to back"
                elif a.speedup_vs_eager:
                    sp = f"{a.speedup_vs_eager:.2f}x eager one call"
                else:
                    sp = "not timed"
                print(
                    f"{a.name:<24} {a.task_name:<20} {sp:<28} {time.strftime('%Y-%m-%d', time.localtime(a.created))}"
                )
        elif args.what == "show":
            print(store.get(args.name).code)
        else:
            for a in store.accepted():
                print(
                    json.dumps(
                        {
                            "name": a.name,
                            "task": a.task_name,
                            "task_source": a.task_source,
                            "code": a.code,
                            "edited": a.edited,
                            "model": a.model,
                            "prompt": a.prompt,
                            "chat": a.chat,  # the messages as sent (None before schema 2)
                            "completion": a.completion,
                            "speedup_vs_eager": a.speedup_vs_eager,
                            "speedup_vs_compile": a.speedup_vs_compile,
                            "speedup_vs_eager_b2b": a.speedup_vs_eager_b2b,
                            "speedup_vs_compile_b2b": a.speedup_vs_compile_b2b,
                        }
                    )
                )
    return EXIT_PASS


def register(sub: Any, T: dict[str, Callable[[str], Any]], sampling: Any, run: Any) -> None:
    """The `kernels` subcommand and its own subcommands."""
    k = sub.add_parser("kernels", help="the library of accepted kernels")
    ksub = k.add_subparsers(dest="what", required=True)
    for what, helptext in (
        ("list", "accepted kernels"),
        ("show", "one kernel's code"),
        ("export", "everything, one JSON object per line"),
    ):
        kp = ksub.add_parser(what, help=helptext)
        if what == "show":
            kp.add_argument("name", type=T["name"])
        if what == "export":
            kp.add_argument("--jsonl", action="store_true", help="the format (the only one)")
        kp.add_argument("--library", type=existing_file)
        kp.set_defaults(func=cmd_kernels)
    kc = ksub.add_parser("check", help="SQLite's integrity check of the library")
    kc.add_argument("--library", type=existing_file)
    kc.set_defaults(func=cmd_kernels_check)
    kr = ksub.add_parser(
        "recover", help="copy what is readable of a damaged library into a new file"
    )
    kr.add_argument("--library", type=existing_file)
    kr.add_argument(
        "--out", type=output_file, help="the new library (default LIBRARY.recovered.sqlite)"
    )
    kr.set_defaults(func=cmd_kernels_recover)
