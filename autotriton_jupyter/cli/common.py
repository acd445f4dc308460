"""Helpers shared by the commands: progress and warning lines, shared flags, options."""

from __future__ import annotations

import argparse
import sys
import time

from .args import _one_line, _setting, _types

_STARTED = time.perf_counter()


def _progress(quiet: bool):
    """Progress lines on stderr, each with the seconds since the command started."""

    def emit(msg: str) -> None:
        err = sys.stderr
        if not quiet and err is not None:  # (None: started with stderr closed)
            # one write a line: lines come from several threads
            err.write(f"[autotriton {time.perf_counter() - _STARTED:5.1f}s] {msg}\n")
            err.flush()

    return emit


def _warn(message: str) -> None:
    """One warning line on stderr, shown even with -q (it is about the user's files or settings)."""
    print(f"autotriton: warning: {_one_line(message)}", file=sys.stderr, flush=True)


def _add_tune_flags(p: argparse.ArgumentParser, by_default: bool = False) -> None:
    """The tuning pass's flags: asked for with --tune (`verify`), or on by default within a
    time budget (`tritonize`)."""
    from ..config import TritonizeOptions

    if by_default:
        p.add_argument(
            "--tune",
            action="store_true",
            help="try every variant in the tuning pass, however long it takes (by default the "
            "best passing kernel's launch parameters are swept within --tune-budget)",
        )
        p.add_argument("--no-tune", action="store_true", help="skip the tuning pass")
        p.add_argument(
            "--tune-budget",
            type=_types()["seconds"],
            metavar="S",
            help=f"seconds the tuning pass may take (default {TritonizeOptions.tune_budget_s:g})",
        )
    else:
        p.add_argument(
            "--tune",
            action="store_true",
            help="after a pass with timing, sweep the kernels' launch parameters (num_warps, "
            "num_stages, BLOCK sizes written as numbers); every variant is verified in full",
        )
        p.add_argument(
            "--rank-by",
            choices=["device", "call"],
            default=TritonizeOptions.rank_by,
            help="the time tuning compares variants on: device (calls back to back, what a "
            "kernel costs inside a model) or call (one call on an idle GPU; default "
            f"{TritonizeOptions.rank_by})",
        )
    p.add_argument(
        "--tune-variants",
        type=_types()["count"],
        # None tells "not given" from the default (verify: giving it asks for tuning;
        # tritonize: it cannot go with --no-tune)
        default=None,
        metavar="N",
        help=f"at most N one-parameter variants (default {TritonizeOptions.tune_variants}), "
        "then the improving ones together",
    )


def _add_verify_flags(p: argparse.ArgumentParser, seed: bool = True) -> None:
    from ..verify.options import VerifyOptions

    d = VerifyOptions()  # the defaults a flag overrides (the config file's [verify] comes between)
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], help=f"where to run (default {d.device})")
    p.add_argument(
        "--trials",
        type=_setting("verify", "trials"),
        help=f"fresh input sets from get_inputs() (default {d.trials})",
    )
    p.add_argument(
        "--atol", type=_setting("verify", "atol"), help=f"absolute tolerance (default {d.atol:g})"
    )
    p.add_argument(
        "--rtol", type=_setting("verify", "rtol"), help=f"relative tolerance (default {d.rtol:g})"
    )
    p.add_argument(
        "--allow-torch",
        type=_setting("verify", "allow_torch"),
        metavar="OPS",
        help="comma-separated ATen ops forward may run in PyTorch (e.g. mm,addmm); "
        "'all' allows any (default: none)",
    )
    p.add_argument(
        "--shapes",
        type=_setting("verify", "shapes"),
        metavar="SETS",
        help="also judge at other input shapes: one shape per tensor input, sets separated "
        "by ';' (e.g. '33x257 33x257; 1x7 1x7'); values are drawn from the task's own inputs",
    )
    p.add_argument("--no-timing", action="store_true", help="skip the GPU timing")
    p.add_argument(
        "--strict",
        action="store_true",
        help="fail a candidate that is right on the task's inputs but wrong on inputs the "
        "judge made (instead of the verdict 'conditional', exit 3)",
    )
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run workers without the OS sandbox (generated code then runs with your privileges)",
    )
    p.add_argument(
        "--timeout",
        type=_setting("verify", "timeout"),
        help=f"seconds allowed per step before a worker is killed (default {d.timeout:g})",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="time the reference (eager and torch.compile) again instead of reusing its "
        "timings from an earlier run on this GPU",
    )
    if seed:
        p.add_argument(
            "--seed",
            type=_setting("verify", "seed"),
            help="fix the input seeds (default: fresh each run; a running verifier service "
            "keeps a task's first draw until it stops)",
        )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def _options_default():
    """Verify options from defaults, the config file and the environment (no flags)."""
    from ..config import load
    from ..verify import VerifyOptions

    return load("verify", VerifyOptions())


_VERIFY_FLAGS = (
    "device", "trials", "atol", "rtol", "timeout", "seed", "allow_torch", "shapes",
    "no_timing", "no_sandbox", "strict", "no_cache",
)


def _options(args: argparse.Namespace):
    """Verify options: defaults < config file < environment < these flags (config.from_flags)."""
    from ..config import from_flags
    from ..verify import VerifyOptions

    # Every flag was checked by its type as it was parsed; from_flags takes them as they are.
    return from_flags("verify", VerifyOptions(), {k: getattr(args, k, None) for k in _VERIFY_FLAGS})


def _model_options(args: argparse.Namespace):
    from ..config import from_flags
    from ..model.registry import ModelOptions

    return from_flags("model", ModelOptions(), {"name": getattr(args, "model", None) or None})


class _TokenProgress:
    """Model loading and per-sample progress on stderr; the live token line only on a terminal."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.live = sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, e) -> None:
        import time

        if self.quiet:
            return
        if e.kind == "load":
            print(f"[autotriton] {e.message}", file=sys.stderr, flush=True)
        elif e.kind == "token" and self.live and time.monotonic() - self.last > 0.2:
            self.last = time.monotonic()
            who = "all samples" if e.sample < 0 else f"sample {e.sample + 1}"
            line = f"[autotriton] {who}: {e.tokens} tokens, {e.tokens_per_s:.1f} tok/s"
            print(f"\r\033[K{line}", end="", file=sys.stderr, flush=True)
        elif e.kind == "done":
            line = (
                f"[autotriton] sample {e.sample + 1}: {e.tokens} tokens, "
                f"{e.tokens_per_s:.1f} tok/s, {e.message}"
            )
            print(f"\r\033[K{line}" if self.live else line, file=sys.stderr, flush=True)
