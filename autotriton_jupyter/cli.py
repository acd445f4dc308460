"""The `autotriton` command: parses arguments and calls library code (nothing else lives here)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _progress(quiet: bool):
    def emit(msg: str) -> None:
        if not quiet:
            print(f"[autotriton] {msg}", file=sys.stderr, flush=True)

    return emit


def _add_verify_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help="where to run (default auto)")
    p.add_argument("--trials", type=int, help="fresh input sets from get_inputs() (default 3)")
    p.add_argument("--atol", type=float, help="absolute tolerance (default 1e-2)")
    p.add_argument("--rtol", type=float, help="relative tolerance (default 1e-2)")
    p.add_argument(
        "--allow-torch",
        metavar="OPS",
        help="comma-separated ATen ops forward may run in PyTorch (e.g. mm,addmm); "
        "'all' allows any (default: none)",
    )
    p.add_argument("--no-timing", action="store_true", help="skip the GPU timing")
    p.add_argument(
        "--timeout", type=float, help="seconds allowed per step before a worker is killed"
    )
    p.add_argument("--seed", type=int, help="fix the input seeds (default: fresh each run)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def _options(args: argparse.Namespace):
    from .config import load
    from .verify import VerifyOptions

    o = load("verify", VerifyOptions())
    for name in ("device", "trials", "atol", "rtol", "timeout", "seed"):
        v = getattr(args, name)
        if v is not None:
            setattr(o, name, v)
    if args.allow_torch is not None:
        o.allow_torch = tuple(s.strip() for s in args.allow_torch.split(",") if s.strip())
    if args.no_timing:
        o.timing = False
    if o.trials < 1:
        from .task import TaskError

        raise TaskError("--trials must be at least 1.")
    return o


def cmd_verify(args: argparse.Namespace) -> int:
    from .task import Candidate, Task
    from .verify import Verifier, format_text

    task = Task.from_file(args.reference)
    cand = Candidate.from_file(args.candidate)
    with Verifier(_options(args), on_event=_progress(args.quiet)) as v:
        report = v.verify(task, cand)
    if args.json:
        print(report.to_json())
    else:
        print(format_text(report))
    return EXIT_PASS if report.verdict == "pass" else EXIT_FAIL


def cmd_bench_verify(args: argparse.Namespace) -> int:
    from .verify.bench import run_benchmark

    result = run_benchmark(
        args.reference, args.candidates, _options(args), on_event=_progress(args.quiet)
    )
    print(json.dumps(result, indent=2) if args.json else result["text"])
    return EXIT_PASS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autotriton", description="Verified Triton kernels from PyTorch modules."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    v = sub.add_parser(
        "verify",
        help="judge a candidate ModelNew against a reference Model",
        description="Exit status: 0 pass, 1 fail, 2 usage or input error.",
    )
    v.add_argument("reference", help="REF.py: Model, get_inputs(), get_init_inputs()")
    v.add_argument("candidate", help="CAND.py: ModelNew with the same signature")
    v.add_argument("--json", action="store_true", help="print the report as one JSON object")
    _add_verify_flags(v)
    v.set_defaults(func=cmd_verify)

    b = sub.add_parser("bench", help="benchmarks of this tool itself")
    bsub = b.add_subparsers(dest="what", required=True)
    bv = bsub.add_parser("verify", help="fixed cost per candidate and wall time for N candidates")
    bv.add_argument("reference")
    bv.add_argument("candidates", nargs="+", help="candidate files (repeat one to get N)")
    bv.add_argument("--json", action="store_true")
    _add_verify_flags(bv)
    bv.set_defaults(func=cmd_bench_verify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `autotriton`; returns the exit status."""
    from .config import ConfigError
    from .task import TaskError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (TaskError, ConfigError) as e:
        print(f"autotriton: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("autotriton: interrupted; workers were stopped.", file=sys.stderr)
        return 130
