"""`autotriton kernels`: the library of accepted kernels."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .args import EXIT_PASS, EXIT_USAGE, _one_line, existing_file, library_file, output_file


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


def cmd_kernels_accept(args: argparse.Namespace) -> int:
    """Keep a stored candidate that passed under a name, as the notebook's Accept does."""
    from ..store import NoLibrary, Store, StoreError

    # Checked with a store that only reads: an accept that is refused makes no library
    # and upgrades none.
    try:
        reading = Store(args.library, write=False)
    except NoLibrary as e:
        raise StoreError(
            f"There is no kernel library at {e.path} yet, so there is no candidate "
            f"#{args.id} to accept; nothing was made. `autotriton tritonize` stores "
            "candidates (with --library to pick this one)."
        ) from None
    with reading as store:
        c = store.candidate(args.id)
        if c is None:
            raise StoreError(
                f"There is no candidate #{args.id} in {store.path}; `autotriton kernels "
                "candidates` lists the stored ones with their ids."
            )
        if c["verdict"] == "conditional" and not args.conditional:
            print(
                f"autotriton: candidate #{args.id} is conditional: right on the task's inputs, "
                "wrong on inputs the verifier made from them (see its report). Pass "
                "--conditional to accept it anyway.",
                file=sys.stderr,
            )
            return 1
        if c["verdict"] not in ("pass", "conditional") or not c["code"]:
            print(
                f"autotriton: candidate #{args.id} did not pass verification "
                f"({c['verdict'] or 'no code'}); only a candidate that passed can be accepted.",
                file=sys.stderr,
            )
            return 1
        kept = store.find(args.name)
        if kept is not None and kept.candidate_id == c["id"] and not kept.edited and kept.code == c["code"]:
            # the same candidate, unedited (an edited one is replaced by what was verified)
            print(f"{args.name} is already candidate #{c['id']} of {c['task_name']} in {store.path}")
            return EXIT_PASS
    with Store(reading.path) as writing:
        writing.accept(args.name, c["task_id"], c["code"], candidate_id=c["id"], replace=True)
    what = f"candidate #{c['id']} of {c['task_name']}"
    if c["verdict"] == "conditional":
        what += ", conditional"
        if kept is not None and kept.verdict == "pass":  # a step down the user should see
            what += ": it replaced a kernel that passed"
    print(
        f"{'replaced' if kept is not None else 'accepted'}: {args.name} ({what}) in {reading.path}; "
        f"load it with `from autotriton_jupyter import load_kernel; {args.name} = "
        f"load_kernel({args.name!r})`"
    )
    if c["verdict"] == "conditional":
        print(
            f"  {args.name} is right on the task's inputs but wrong on inputs the verifier made "
            "from them: it may give wrong results on such inputs (load_kernel warns of it)."
        )
    return EXIT_PASS


def _read_or_say(library: str | None, nothing: str) -> Any:
    """The library opened for reading, or None after saying `nothing` when there is none."""
    from ..store import NoLibrary, Store

    try:
        return Store(library, write=False)
    except NoLibrary as e:
        print(f"{nothing} (there is no kernel library at {e.path} yet)")
        return None


def cmd_kernels_candidates(args: argparse.Namespace) -> int:
    """The newest stored candidates with their ids (what `kernels accept` takes)."""
    store = _read_or_say(args.library, "no candidates yet")
    if store is None:
        return EXIT_PASS
    with store:
        rows = store.candidates(args.task, args.limit)
        known = store.task_names() if args.task and not rows else []
    if not rows:
        print("no candidates yet" + (f" of {args.task}" if args.task else ""))
        if known:  # a task is named as its file is, without .py
            print(f"tasks with candidates: {', '.join(known)}")
    else:
        print(f"{'id':<7} {'task':<20} {'candidate':<22} {'verdict':<12} {'one call':<14} model")
    for r in rows:
        sp = f"{r['speedup_vs_eager']:.2f}x eager" if r["speedup_vs_eager"] else ""
        what = r["verdict"] or ("no verdict" if r["has_code"] else "no code")
        which = f"round {r['round'] + 1} sample {r['sample'] + 1}"
        print(f"{'#' + str(r['id']):<7} {r['task_name']:<20} {which:<22} {what:<12} {sp:<14} {r['model']}")
    return EXIT_PASS


def cmd_kernels(args: argparse.Namespace) -> int:
    from ..store import Store

    if args.what == "list":
        store = _read_or_say(args.library, "no accepted kernels yet")
        if store is None:
            return EXIT_PASS
    else:
        store = Store(args.library, write=False)  # no library: its own message
    with store:
        if args.what == "list":
            rows = store.accepted()
            if not rows:
                print(f"no accepted kernels yet in {store.path}")
            else:
                print(f"{'name':<24} {'task':<20} {'verdict':<12} {'speedup':<28} accepted")
            for a in rows:
                if a.speedup_vs_eager_b2b:  # device time: what ranked it
                    sp = f"{a.speedup_vs_eager_b2b:.2f}x eager back to back"
                elif a.speedup_vs_eager:
                    sp = f"{a.speedup_vs_eager:.2f}x eager one call"
                else:
                    sp = "not timed"
                verdict = a.verdict or "unknown"  # no candidate's record (kept without one)
                print(
                    f"{a.name:<24} {a.task_name:<20} {verdict:<12} {sp:<28} "
                    f"{time.strftime('%Y-%m-%d', time.localtime(a.created))}"
                )
            if any(a.verdict == "conditional" for a in rows):
                print("conditional: right on the task's inputs, wrong on inputs the verifier made "
                      "from them; it may give wrong results on such inputs.")
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
                            # the candidate's verdict: "conditional" was accepted with --conditional
                            "verdict": a.verdict,
                            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(a.created)),
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
        ("export", "the accepted kernels, one JSON object per line"),
    ):
        kp = ksub.add_parser(what, help=helptext)
        if what == "show":
            kp.add_argument("name", type=T["name"])
        if what == "export":
            kp.add_argument("--jsonl", action="store_true", help="the format (the only one)")
        kp.add_argument("--library", type=library_file, help="the library (default: AUTOTRITON_LIBRARY, else the user data directory)")
        kp.set_defaults(func=cmd_kernels)
    ka = ksub.add_parser(
        "accept",
        help="keep a stored candidate that passed under a name (as the notebook's Accept)",
        description="Exit status: 0 accepted, 1 the candidate did not pass (or is conditional "
        "without --conditional), 2 usage or library error.",
    )
    ka.add_argument("name", type=T["kernel"], help="the name to load it by (a Python identifier)")
    ka.add_argument("id", type=T["id"], help="the candidate's id, 3 or #3 (`kernels candidates`, or tritonize's output)")
    ka.add_argument(
        "--conditional",
        action="store_true",
        help="accept a conditional candidate (right on the task's inputs only) anyway",
    )
    ka.add_argument("--library", type=output_file, help="the library (default: the user data directory)")
    ka.set_defaults(func=cmd_kernels_accept)
    kcand = ksub.add_parser("candidates", help="the newest stored candidates, with the ids `accept` takes")
    kcand.add_argument("--task", type=T["name"], help="only this task's")
    kcand.add_argument("--limit", type=T["count"], default=20, help="how many (default %(default)s)")
    kcand.add_argument("--library", type=library_file, help="the library (default: AUTOTRITON_LIBRARY, else the user data directory)")
    kcand.set_defaults(func=cmd_kernels_candidates)
    kc = ksub.add_parser("check", help="SQLite's integrity check of the library")
    kc.add_argument("--library", type=existing_file, help="the library to check (default: AUTOTRITON_LIBRARY, else the user data directory)")
    kc.set_defaults(func=cmd_kernels_check)
    kr = ksub.add_parser(
        "recover", help="copy what is readable of a damaged library into a new file"
    )
    kr.add_argument("--library", type=existing_file, help="the damaged library, only read (default: AUTOTRITON_LIBRARY, else the user data directory)")
    kr.add_argument(
        "--out", type=output_file, help="the new library (default LIBRARY.recovered.sqlite)"
    )
    kr.set_defaults(func=cmd_kernels_recover)
