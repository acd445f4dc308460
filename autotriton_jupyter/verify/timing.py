"""GPU timing of one callable, run inside a worker while the judge holds the GPU alone.

Each timed call: refill the input buffers in place with the next input set's values
(a cache keyed by pointer or shape then returns stale data and is caught), vary them
(vary.py: no call sees values another call saw, so a cache keyed by value never hits), flush L2,
record a start event, call, record an end event, synchronise. The median of the
event times is the figure; the wall time of each call (which includes work on any
other stream, since synchronise waits for all of them) is kept to compare with it.
A few calls chosen at random have their outputs kept for the judge to re-check.

That is the latency of one call on an idle GPU: for a small kernel it is mostly the
launch (Triton's Python launch path, or PyTorch's dispatcher). Inside a model, calls
follow one another without waiting, and what a kernel costs there is its device time.
So a second figure times calls back to back: the same refills, no flush and no
synchronisation between calls, a pair of events around each call. Per call it is the
device's time when the GPU is the bottleneck, and the host's launch cost when the host
is (a launch-bound task).
"""

from __future__ import annotations

import contextlib
import itertools
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from .vary import Variation

L2_FLUSH_BYTES = 256 * 1024 * 1024
B2B_CALLS = 100  # calls in a back-to-back row (three rows): enough for a steady per-call time
B2B_MIN_CALLS = 10  # ...where each call is long: its own device time then dominates its span
B2B_BUDGET_S = 0.15  # the three rows' wall time, at most (unless that leaves under B2B_MIN_CALLS)


# Methods looked up on the class, not on the tensor: an instance attribute a candidate set
# on a tensor cannot stand in for them.
_copy, _detach, _clone = torch.Tensor.copy_, torch.Tensor.detach, torch.Tensor.clone


def _refill(
    buffers: Sequence[Any],
    sets: Sequence[Sequence[Any]],
    k: int,
    vary: Variation | None,
    numbers: Iterator[int],
) -> int:
    """Refill the buffers with set k (modulo their number), varied for the next call number."""
    call = next(numbers)
    for b, v in zip(buffers, sets[k % len(sets)]):
        if isinstance(b, torch.Tensor):
            _copy(b, v)
    if vary is not None:
        vary.apply(buffers, k % len(sets), call)
    return call


def _plain(out: Any) -> None:
    """Refuse an output that is not exactly a tensor, or exactly a tuple or list of them,
    before the judge touches it: a subclass or a named tuple of the candidate's could run
    its own code (its real work, say) when the judge iterates or reads it after the timer."""
    kind = type(out)
    if kind is torch.Tensor:
        return
    if kind is tuple or kind is list:
        for x in out:  # the built-in iteration of an exact tuple or list
            if type(x) is not torch.Tensor:
                raise TypeError(
                    f"forward returned a {type(x).__name__} inside its {kind.__name__} while "
                    "timed, not a plain torch.Tensor"
                )
        return
    raise TypeError(
        f"forward returned a {kind.__module__}.{kind.__name__} while timed, not a tensor or a "
        "tuple of tensors"
    )


def _clone_outputs(out: Any) -> Any:
    if isinstance(out, torch.Tensor):
        return _clone(_detach(out))
    if isinstance(out, tuple | list):
        return type(out)(_clone_outputs(o) for o in out)
    return out


def bench(
    fn: Callable[..., Any],
    buffers: Sequence[Any],
    sets: Sequence[Sequence[Any]],
    *,
    budget_s: float = 0.3,
    min_reps: int = 10,
    max_reps: int = 500,
    keep: int = 0,
    rng: random.Random | None = None,
    audit: Callable[[], Any] | None = None,
    audited: int = 0,
    between: Callable[[], None] | None = None,
    after: Callable[[Any, Any], None] | None = None,
    back_to_back: bool = False,
    vary: Variation | None = None,
    check: Callable[[int, int, Any], None] | None = None,
) -> dict[str, Any]:
    """Time fn(*buffers) on CUDA; returns the median and quartiles in ms and the kept outputs.

    `audited` calls, at random places, run inside the `audit()` context and are left out
    of the figures; `between()` runs after every call, outside the timed window, and
    `after(buffers, out)` before anything else touches the call's tensors. Audited and
    other calls are made from the same line, so the call stack does not tell them apart.
    With `back_to_back`, the result also has `b2b_ms` (per call, calls in a row; see the
    module's docstring), and one of those calls' outputs is among the kept ones. With
    `vary`, every refill is varied for its call's number; kept outputs are (set index,
    call number, outputs), so the judge can make the same inputs again. `check(call
    number, set index, output)` sees every call's output, outside the timed window.
    """
    rng = rng or random.Random()
    numbers = itertools.count()
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)

    def once(k: int, timed: bool, audited_call: bool = False) -> tuple[float, float, int, Any]:
        call = _refill(buffers, sets, k, vary, numbers)
        flush.zero_()
        torch.cuda.synchronize()
        w0 = time.perf_counter()
        start.record()
        with audit() if audited_call and audit is not None else contextlib.nullcontext():
            out = fn(*buffers)
        end.record()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - w0) * 1e3  # the call's own: not the judge's checks after it
        _plain(out)
        if after is not None:
            after(buffers, out)
        if between is not None:
            between()
        if check is not None:
            check(call, k % len(sets), out)
        return (start.elapsed_time(end) if timed else 0.0), wall, call, out

    # Warm-up: compile and settle; the count varies so a call counter cannot know when timing starts.
    phase = time.perf_counter()
    spent: dict[str, float] = {}  # seconds of each phase, for the report's breakdown

    def took(name: str) -> None:
        nonlocal phase
        now = time.perf_counter()
        spent[name] = now - phase
        phase = now

    warm = 3 + rng.randrange(5)
    est, rounds = [], []
    for k in range(warm):
        r0 = time.perf_counter()
        ev, _, _, _ = once(k, True)
        rounds.append((time.perf_counter() - r0) * 1e3)
        est.append(ev)
    took("warmup")
    per_call = max(statistics.median(est[1:] or est), 1e-3)
    # The budget is wall time: a round is the call and everything around it (flush, refill,
    # variation, the judge's checks), often far longer than the call on a large task.
    per_round = max(statistics.median(rounds[1:] or rounds), per_call, 1e-3)
    reps = int(min(max_reps, max(min_reps, budget_s * 1e3 / per_round)))
    keep_at = set(rng.sample(range(reps), min(keep, reps)))
    audit_at = set(rng.sample(range(reps), min(audited, reps))) if audit else set()
    events: list[float] = []
    walls: list[float] = []
    kept: list[tuple[int, Any]] = []
    for i in range(reps):
        ev, wall, call, out = once(i, True, i in audit_at)
        if i not in audit_at:
            events.append(ev)
            walls.append(wall)
        if i in keep_at:
            kept.append((i % len(sets), call, _clone_outputs(out)))
        del out
    took("single")
    # Quartiles give the spread of single calls within this process; they cannot show
    # a shift of the whole run, which is what makes launch-bound figures vary between runs.
    q1, _, q3 = (
        statistics.quantiles(events, n=4, method="inclusive")
        if len(events) > 1
        else (events[0],) * 3
    )
    b2b: dict[str, Any] = {}
    if back_to_back:
        # A row of as many calls as the single calls made, at most B2B_CALLS, and no longer
        # than the budget allows at the single calls' pace (a round there has a flush and a
        # synchronisation more, so the rows take less): where a round is short (a small
        # task, launch-bound) the rows are full; where it is long (large inputs to refill,
        # long calls) a few calls settle the figure, and full rows would add half a second
        # to every candidate.
        paced = int(B2B_BUDGET_S * 1e3 / 3 / per_round)
        calls = max(2, min(reps, B2B_CALLS, max(B2B_MIN_CALLS, paced)))
        b2b = _back_to_back(
            fn, buffers, sets, calls, rng, audit, between, after, vary, numbers, check
        )
        kept.append(b2b.pop("kept"))
        took("b2b")
    return {
        **b2b,
        "median_ms": statistics.median(events),
        "min_ms": min(events),
        "q1_ms": q1,
        "q3_ms": q3,
        "wall_median_ms": statistics.median(walls),
        "reps": len(events),
        "audited": len(audit_at),
        "warmup": warm,
        "kept": kept,
        "seconds": spent,
    }


def _back_to_back(
    fn: Callable[..., Any],
    buffers: Sequence[Any],
    sets: Sequence[Sequence[Any]],
    calls: int,
    rng: random.Random,
    audit: Callable[[], Any] | None,
    between: Callable[[], None] | None,
    after: Callable[[Any, Any], None] | None,
    vary: Variation | None = None,
    numbers: Iterator[int] | None = None,
    check: Callable[[int, int, Any], None] | None = None,
    rounds: int = 3,
) -> dict[str, Any]:
    """Per-call time of `calls` calls in a row (the median of `rounds` such rows); the wall
    time per call, synchronised once at the end; and one call's output, kept for the judge.

    Each call has its own pair of events, recorded just before and just after it, with no
    synchronisation in the row: a call's span is its device time when the GPU is the
    bottleneck (it starts as soon as the previous work is done) and its host time when the
    host is (the GPU waits for its launches), never less than either. The refills and the
    judge's checks between calls fall outside every span, so nothing is subtracted.
    A call that could tell it runs in a row (work still pending on the stream) is audited
    and checked like the others: a few calls at random run under the audit, and which
    output is kept is drawn at random too."""
    numbers = numbers if numbers is not None else itertools.count()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    keep_round, keep_at = rng.randrange(rounds), rng.randrange(calls)
    kept: list[Any] = []

    def row(r: int) -> tuple[float, float]:
        audit_at = set(rng.sample(range(calls), min(2, calls))) if audit else set()
        torch.cuda.synchronize()
        w0 = time.perf_counter()
        for k in range(calls):
            call = _refill(buffers, sets, k, vary, numbers)
            starts[k].record()
            with audit() if k in audit_at and audit is not None else contextlib.nullcontext():
                out = fn(*buffers)
            ends[k].record()
            _plain(out)
            # The judge's own per-call checks: the full scrub on the kept call and the last
            # one. The others' outputs are only projected, by torch's own functions.
            if after is not None and (k == calls - 1 or (r == keep_round and k == keep_at)):
                after(buffers, out)
            if between is not None:
                between()
            if check is not None:
                check(call, k % len(sets), out)
            if r == keep_round and k == keep_at:
                kept.append((k % len(sets), call, _clone_outputs(out)))
            del out
        torch.cuda.synchronize()
        wall = (time.perf_counter() - w0) * 1e3
        # The audited calls pay for the audit (as in the single calls): left out.
        spans = [starts[k].elapsed_time(ends[k]) for k in range(calls) if k not in audit_at] or [
            s.elapsed_time(e) for s, e in zip(starts, ends)
        ]
        return sum(spans) / max(1, len(spans)), wall / calls

    per_call, walls = [], []
    for r in range(rounds):
        spans, wall = row(r)
        per_call.append(spans)
        walls.append(wall)
    return {
        "b2b_ms": statistics.median(per_call),
        "b2b_spread_ms": max(per_call) - min(per_call),
        "b2b_wall_ms": statistics.median(walls),
        "b2b_calls": calls,
        "kept": kept[0],
    }
