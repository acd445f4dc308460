"""The `autotriton` command: parses arguments and calls library code (nothing else lives here)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from . import bench, evaluate, generate, kernels, models, verify
from .args import (
    EXIT_CONDITIONAL,
    EXIT_FAIL,
    EXIT_PASS,
    EXIT_USAGE,
    MAX_SAMPLES,
    MAX_SOURCE,
    _one_line,
    _Parser,
    _types,
    _Usage,
    existing_dir,
    existing_file,
    existing_path,
    output_dir,
    output_file,
    source_file,
)
from .common import _warn

__all__ = [
    "EXIT_CONDITIONAL",
    "EXIT_FAIL",
    "EXIT_PASS",
    "EXIT_USAGE",
    "MAX_SAMPLES",
    "MAX_SOURCE",
    "build_parser",
    "existing_dir",
    "existing_file",
    "existing_path",
    "main",
    "run",
    "output_dir",
    "output_file",
    "source_file",
    "threading_main",
]


def build_parser() -> argparse.ArgumentParser:
    """The `autotriton` parser; every value-taking argument has a type that checks it."""
    from ..config import TritonizeOptions
    from ..model.generator import GenerationParams

    sampling = GenerationParams()  # the sampling defaults, written once (model/generator.py)
    run = TritonizeOptions()  # samples and rounds, written once (config.py)
    T = _types()
    parser = _Parser(prog="autotriton", description="Verified Triton kernels from PyTorch modules.")
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"autotriton {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    for group in (verify, generate, evaluate, kernels, models, bench):
        group.register(sub, T, sampling, run)
    return parser


def _terminate(signum: int, frame: object) -> None:
    """A SIGTERM unwinds like Ctrl-C, so workers are killed and scratch files removed."""
    raise KeyboardInterrupt


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `autotriton`; returns the exit status.

    Arguments (by their types), the config file and the environment (config.check) and
    anything that needs several arguments at once (the command's precheck) are all
    checked before the command does any work: a bad one is exit 2 and one line.
    """
    from ..config import ConfigError
    from ..config import check as check_config
    from ..model.generator import GenerationError
    from ..store import StoreError
    from ..task import TaskError

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help (0), or a usage error already said on stderr (2)
        if isinstance(e, _Usage) and "--json" in argv:
            print(json.dumps({"verdict": "error", "error": e.message, "exit": EXIT_USAGE}))
        return e.code if isinstance(e.code, int) else EXIT_USAGE if e.code else EXIT_PASS
    import signal

    from ..config import unknown_environment

    for warning in unknown_environment():
        _warn(warning)
    if threading_main():
        signal.signal(signal.SIGTERM, _terminate)
    try:
        check_config()
        if getattr(args, "precheck", None):
            args.precheck(args)
        return args.func(args)
    except BrokenPipeError:  # output piped into `head` and the like: nothing left to say
        return 141
    except (TaskError, ConfigError, GenerationError, StoreError) as e:
        print(f"autotriton: {_one_line(e)}", file=sys.stderr)
        if getattr(args, "json", False):  # a tool reading stdout still gets one JSON object
            print(json.dumps({"verdict": "error", "error": str(e), "exit": EXIT_USAGE}))
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("autotriton: interrupted; nothing it started is left running.", file=sys.stderr)
        return 130


def run() -> None:
    """The `autotriton` program: main(), then its exit. After a one-shot verify (its own
    verifier closed: every worker and its fork server ended, its folder removed; its
    verdict printed), the process ends without the interpreter's teardown, which took most
    of a second on a GPU (the judge's CUDA context among it) and has nothing left to do."""
    code = main()
    if verify.FAST_EXIT:
        for stream in (sys.stdout, sys.stderr):
            if stream is None:  # closed when the program started (`>&-`)
                continue
            try:
                stream.flush()
            except BrokenPipeError:  # piped into `head` and the like, as in main()
                if stream is sys.stdout:
                    code = 141
            except OSError:  # the answer could not be written: the ordinary exit says why
                raise SystemExit(code) from None
        import os

        os._exit(code)
    raise SystemExit(code)
