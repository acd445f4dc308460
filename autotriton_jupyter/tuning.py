"""The tuning pass: a passing candidate's launch parameters swept within safe bounds.

A model's first correct kernel is rarely its fastest, and the cheapest speed left in it is
usually in how it is launched: `num_warps`, `num_stages`, and the `BLOCK_*` sizes written
as numbers. Each variant changes one of them (then the improving changes together), is
written as a new candidate by patching only that number in the source, and is verified
in full, timing included, before its time counts. Nothing here judges anything: a variant
is just another candidate, and the verifier decides.

Launches of a kernel under `@triton.autotune` are left alone (its configs choose), and so
are sizes computed at run time (`triton.next_power_of_2(n)`), which already fit the data.

Length: the source patcher (knobs found, patched and checked by character offsets) and
the sweep that uses it.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .config import RANK_FIGURES, TritonizeOptions
from .task import Candidate
from .verify.report import GAMING_CHECKS

WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3, 4, 5)
BLOCK_RANGE = (16, 8192)  # a size is halved or doubled, never beyond these
FASTER = 0.95  # a variant counts as faster below this fraction of the original's time
DEFAULT_VARIANTS = TritonizeOptions.tune_variants
BATCH = 4  # variants verified together when a time budget is set (checked between batches)


@dataclass(frozen=True)
class Knob:
    """One launch parameter that can be changed by rewriting one spot of the source."""

    label: str  # "softmax_kernel num_warps (line 30)"
    name: str  # the keyword: num_warps, num_stages, BLOCK_SIZE, ...
    value: int | None  # None: not given, Triton's default applies
    choices: tuple[int, ...]
    # Where the number is (line, column, end line, end column; lines from 1), or where a
    # new keyword goes (line, column, line, column) when `value` is None.
    at: tuple[int, int, int, int]
    insert: str = ""  # the text a missing keyword is added with ("" when patching a number)
    key: str = ""  # what it is, whatever its value: the same before and after a patch


@dataclass
class Variant:
    """A candidate's source with some launch parameters changed."""

    source: str
    changes: dict[str, tuple[int | None, int]]  # knob label -> (was, now)

    def describe(self) -> str:
        return ", ".join(
            f"{label}: {'default' if was is None else was} -> {now}"
            for label, (was, now) in self.changes.items()
        )


@dataclass
class Tried:
    """A variant and what the verifier said of it."""

    variant: Variant
    verdict: str
    ms: float | None
    reason: str = ""
    report: Any = None  # the verifier's Report


@dataclass
class Tuning:
    """What the tuning pass found: the original's time, every variant tried, the best."""

    original_ms: float | None
    tried: list[Tried] = field(default_factory=list)
    best: Tried | None = None
    skipped: str = ""  # why nothing was tried
    # A variant failed a check that catches cheating: the kernel's code can cheat, and the
    # original passed only where it did not. Tuning stops, and the caller fails the original.
    suspect: str = ""
    stopped: str = ""  # why fewer variants were tried than made (the time budget was spent)
    figure: str = RANK_FIGURES["call"]  # which time the variants were compared on

    def to_dict(self) -> dict[str, Any]:
        return {
            "figure": self.figure,
            "original_ms": self.original_ms,
            "skipped": self.skipped or None,
            "suspect": self.suspect or None,
            "stopped": self.stopped or None,
            "best": None
            if self.best is None
            else {
                "changes": self.best.variant.describe(),
                "ms": self.best.ms,
                "speedup_vs_original": (
                    self.original_ms / self.best.ms if self.original_ms and self.best.ms else None
                ),
            },
            "tried": [
                {"changes": t.variant.describe(), "verdict": t.verdict, "ms": t.ms, "reason": t.reason}
                for t in self.tried
            ],
        }

    def summary(self) -> str:
        """A few lines for a terminal or a result view."""
        if self.skipped:
            return f"tuning: {self.skipped}"
        if self.suspect:
            return f"tuning stopped: {self.suspect}"
        lines = [
            f"tuning: {len(self.tried)} variants, each verified in full, compared on their "
            f"time {self.figure}"
        ]
        if self.stopped:
            lines[0] += f"; {self.stopped}"
        for t in self.tried:
            ms = f"{t.ms:.4f} ms" if t.ms is not None else "no time"
            why = f" ({t.reason})" if t.reason else ""
            lines.append(f"  {t.variant.describe()}: {t.verdict}, {ms}{why}")
        if self.best is not None and self.original_ms and self.best.ms:
            lines.append(
                f"  best: {self.best.variant.describe()}: {self.best.ms:.4f} ms against the "
                f"original's {self.original_ms:.4f} ms ({self.original_ms / self.best.ms:.2f}x)"
            )
        else:
            lines.append(
                f"  no variant was at least {1 / FASTER - 1:.0%} faster than the original "
                "and verified: the original stays"
            )
        return "\n".join(lines)


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return None


def _kernels(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names of the @triton.jit functions, and of those among them that are autotuned."""
    jit, tuned = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            names = {_name(d) for d in node.decorator_list}
            if "jit" in names:
                jit.add(node.name)
                if "autotune" in names:
                    tuned.add(node.name)
    return jit, tuned


def _int(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _where(node: ast.AST, lines: list[str]) -> tuple[int, int, int, int]:
    """A node's place in characters (ast counts columns in UTF-8 bytes)."""
    end_line = node.end_lineno or node.lineno
    return (
        node.lineno,
        _chars(lines, node.lineno, node.col_offset),
        end_line,
        _chars(lines, end_line, node.end_col_offset or 0),
    )


def _chars(lines: list[str], line: int, col: int) -> int:
    return len(lines[line - 1].encode()[:col].decode(errors="replace"))


def _single_assignment(scopes: list[ast.AST], name: str) -> ast.Constant | None:
    """The int literal `name = N` is bound to, when it is bound exactly once in the
    innermost scope that binds it at all (else None: computed, or bound several times)."""
    for scope in scopes:
        bound = [
            n
            for n in ast.walk(scope)
            if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign)
            and any(
                isinstance(t, ast.Name) and t.id == name
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            )
        ]
        if bound:
            only = bound[0]
            if len(bound) == 1 and isinstance(only, ast.Assign) and _int(only.value) is not None:
                return only.value  # type: ignore[return-value]
            return None
    return None


def _block_choices(value: int) -> tuple[int, ...]:
    lo, hi = BLOCK_RANGE
    if value <= 0 or value & (value - 1):  # only powers of two: halving keeps them exact
        return ()
    return tuple(v for v in (value // 2, value * 2) if lo <= v <= hi)


def knobs(source: str) -> tuple[list[Knob], list[str]]:
    """The launch parameters of a candidate that can be tuned, and notes on what was left."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return [], ["the source does not parse"]
    jit, tuned = _kernels(tree)
    lines = source.splitlines(keepends=True)
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    found: list[Knob] = []
    notes: list[str] = []
    seen_literals: set[tuple[int, int]] = set()
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript)):
            continue
        kernel = _name(call.func.value)
        if kernel not in jit:
            continue
        if kernel in tuned:
            notes.append(f"{kernel} is autotuned: its configs choose its launch parameters")
            continue
        scopes: list[ast.AST] = []
        up = parents.get(call)
        while up is not None:
            if isinstance(up, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module):
                scopes.append(up)
            up = parents.get(up)
        where = f"{kernel} {{}} (line {call.lineno})"
        given = {k.arg: k for k in call.keywords if k.arg}
        for name, choices in (("num_warps", WARPS), ("num_stages", STAGES)):
            kw = given.get(name)
            if kw is None:
                last = call.end_lineno or call.lineno
                end = (last, _chars(lines, last, call.end_col_offset or 1) - 1)  # before ")"
                key = f"{kernel}:{name}:{call.lineno}:{call.col_offset}"
                found.append(Knob(where.format(name), name, None, choices, (*end, *end), f"{name}=", key))
            elif _int(kw.value) is not None:
                key = f"{kernel}:{name}:{call.lineno}:{call.col_offset}"
                spot = _where(kw.value, lines)
                found.append(Knob(where.format(name), name, _int(kw.value), choices, spot, "", key))
        for arg, kw in given.items():
            if "BLOCK" not in arg.upper():
                continue
            literal: ast.AST | None = kw.value if _int(kw.value) is not None else None
            if literal is None and isinstance(kw.value, ast.Name):
                literal = _single_assignment(scopes, kw.value.id)
            value = _int(literal)
            if literal is None or value is None:
                continue  # computed at run time: it already follows the data
            spot = _where(literal, lines)
            if spot[:2] in seen_literals:
                continue  # one number that several launches use is one knob
            seen_literals.add(spot[:2])
            choices = _block_choices(value)
            if choices:
                label = where.format(arg) if literal is kw.value else f"{arg} = {value} (line {spot[0]})"
                found.append(Knob(label, arg, value, choices, spot, "", f"{arg}:{spot[0]}:{spot[1]}"))
    return found, list(dict.fromkeys(notes))


def _patch(source: str, knob: Knob, value: int, sep: str = "") -> str:
    lines = source.splitlines(keepends=True)
    line, col, end_line, end_col = knob.at
    if knob.value is None:  # a new keyword, just before the call's closing parenthesis
        text = lines[line - 1]
        lines[line - 1] = f"{text[:col]}{sep}{knob.insert}{value}{text[col:]}"
    else:
        first, last = lines[line - 1], lines[end_line - 1]
        lines[line - 1 : end_line] = [f"{first[:col]}{value}{last[end_col:]}"]
    return "".join(lines)


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def _apply(source: str, edits: list[tuple[Knob, int]]) -> str | None:
    """The source with each knob set to its new value; None if the result does not parse."""
    seps: dict[Knob, str] = {}
    for knob, value in edits:
        if knob.value is None:  # after a last argument, a trailing comma, or a comment
            fits = [s for s in (", ", " ", "") if _parses(_patch(source, knob, value, s))]
            if not fits:
                return None
            seps[knob] = fits[0]
    out = source
    for knob, value in sorted(edits, key=lambda e: e[0].at[:2], reverse=True):
        out = _patch(out, knob, value, seps.get(knob, ""))
    if not _parses(out):
        return None
    # Each change landed where it was meant to: the same knob now reads its new value, and
    # nothing else moved (as many knobs as before, the others unchanged).
    want = {k.key: k.value for k in knobs(source)[0]}
    want.update({knob.key: value for knob, value in edits})
    after = {k.key: k.value for k in knobs(out)[0]}
    return out if after == want else None


def variants(source: str, limit: int = DEFAULT_VARIANTS) -> list[Variant]:
    """One-parameter changes of the candidate, at most `limit`: warps, then sizes, then stages."""
    found, _ = knobs(source)
    order = {"num_warps": 0, "num_stages": 2}
    found.sort(key=lambda k: order.get(k.name, 1))
    out: list[Variant] = []
    # Round-robin over the knobs, so a small limit still tries each of them once.
    queues = [[(k, c) for c in k.choices if c != (k.value if k.value is not None else _default(k))] for k in found]
    while len(out) < limit and any(queues):
        for q in queues:
            if q and len(out) < limit:
                knob, value = q.pop(0)
                patched = _apply(source, [(knob, value)])
                if patched is not None:
                    out.append(Variant(patched, {knob.label: (knob.value, value)}))
    return out


def _default(k: Knob) -> int | None:
    return {"num_warps": 4, "num_stages": 3}.get(k.name)


def combine(source: str, improving: list[Variant]) -> Variant | None:
    """The improving one-parameter changes together (one value per knob), or None."""
    found = {k.label: k for k in knobs(source)[0]}
    edits: dict[str, tuple[Knob, int]] = {}
    for v in improving:
        for label, (_was, now) in v.changes.items():
            if label in found and label not in edits:
                edits[label] = (found[label], now)
    if len(edits) < 2:
        return None
    patched = _apply(source, list(edits.values()))
    if patched is None:
        return None
    return Variant(patched, {label: (k.value, now) for label, (k, now) in edits.items()})


Judge = Callable[[list[Candidate]], list[Any]]  # candidates -> their Reports, in order


# The candidate's time that each ranking figure (--rank-by, config.RANK_FIGURES) reads
# from a report's timing.
TIMES = {"device": "candidate_b2b_ms", "call": "candidate_ms"}


def _ms(report: Any, key: str = "candidate_ms") -> float | None:
    t = getattr(report, "timing", None) or {}
    ms = t.get(key)
    return float(ms) if isinstance(ms, int | float) and ms > 0 else None


def _figure(original: Any, rank_by: str) -> str:
    """The figure the variants are compared on (a key of TIMES): the ranking figure, or
    one call where the original was timed on one call only."""
    by = rank_by if rank_by in TIMES else "call"
    return "call" if _ms(original, TIMES[by]) is None and _ms(original) is not None else by


def _reason(report: Any) -> str:
    failed = report.failed() if hasattr(report, "failed") else []
    return failed[0].message[:160] if failed else ""


# Checks that catch cheating, which no change of launch parameters makes an honest kernel
# fail. Left out: what a launch-parameter bug trips in honest code. A block that reads or
# writes past the end, or leaves part of the output unwritten, fails `repeatability`,
# `mutation`, `stale_cache` (old values where it wrote nothing) or `timed_outputs`; a grid
# of no programs fails `launches`; a crash fails `protocol`. Such a variant just loses.
_CHEATING = GAMING_CHECKS - {
    "repeatability", "mutation", "stale_cache", "timed_outputs", "output_type", "aliasing",
    "launches", "protocol",
}


def _suspect(result: Tuning) -> bool:
    for t in result.tried:
        for c in (t.report.failed() if t.report is not None and hasattr(t.report, "failed") else []):
            if c.name in _CHEATING:
                result.suspect = (
                    f"the variant [{t.variant.describe()}] failed '{c.name}': {c.message[:200]} "
                    "The same code with other launch parameters was caught cheating, so the "
                    "original's pass cannot be trusted."
                )
                return True
    return False


def tune(
    candidate: Candidate,
    original: Any,
    judge: Judge,
    limit: int = DEFAULT_VARIANTS,
    on_event: Callable[[str], None] | None = None,
    budget_s: float | None = None,
    rank_by: str = "device",
) -> Tuning:
    """Sweep the launch parameters of a candidate that passed with timing; every variant
    goes through `judge` (the full verifier) and only a passing, timed one can win.

    With `budget_s`, variants are verified BATCH at a time and no batch starts that the
    time of the earlier ones says would end past the budget (the first always runs).

    Variants are compared on the time that ranks candidates (`rank_by`, as --rank-by):
    back to back by default, else one call."""
    tell = on_event or (lambda _m: None)
    by = _figure(original, rank_by)
    key, figure = TIMES[by], RANK_FIGURES[by]
    base = _ms(original, key)
    if getattr(original, "verdict", None) != "pass":
        return Tuning(base, figure=figure, skipped="only a passing candidate is tuned")
    if base is None:
        why = (
            "the candidate has no speed figures (its report's notes say why)"
            if getattr(original, "device", "cpu") == "cuda"
            else "the candidate was not timed (tuning needs timing on a GPU)"
        )
        return Tuning(base, figure=figure, skipped=why)
    found, notes = knobs(candidate.source)
    todo = variants(candidate.source, limit)
    if not todo:
        why = "; ".join(notes) or "no launch parameter written as a number, and no launch to add one to"
        return Tuning(base, figure=figure, skipped=f"nothing to tune: {why}")
    if budget_s is not None and budget_s <= 0:
        return Tuning(base, figure=figure, skipped="the tuning budget is 0 s")
    result = Tuning(base, figure=figure)
    started = time.monotonic()
    runs = [0]  # calls to the judge so far

    def affordable() -> bool:
        """Whether one more call to the judge (a batch, or the lone combination: verified
        alone, it has no parallel runs to share its time with) fits in the budget, by the
        average call so far."""
        if budget_s is None or not runs[0]:
            return True
        spent = time.monotonic() - started
        return spent + spent / runs[0] <= budget_s

    def run(batch: list[Variant]) -> list[Tried]:
        cands = [
            Candidate(name=f"{candidate.name} [{v.describe()}]", source=v.source, path=None)
            for v in batch
        ]
        tell(f"tuning: verifying {len(batch)} variant(s) of {candidate.name} in full")
        reports = judge(cands)
        runs[0] += 1
        got = [
            Tried(v, r.verdict, _ms(r, key) if r.verdict == "pass" else None, _reason(r), r)
            for v, r in zip(batch, reports)
        ]
        result.tried.extend(got)
        return got

    size = len(todo) if budget_s is None else BATCH
    singles: list[Tried] = []
    for at in range(0, len(todo), size):
        batch = todo[at : at + size]
        if not affordable():
            result.stopped = (
                f"stopped after {len(singles)} of {len(todo)}: the tuning budget of "
                f"{budget_s:g} s was spent"
            )
            break
        singles.extend(run(batch))
        if _suspect(result):
            return result
    improving = sorted(
        (t for t in singles if t.ms is not None and t.ms < base * FASTER), key=lambda t: t.ms or 0.0
    )
    both = combine(candidate.source, [t.variant for t in improving])
    if both is not None:
        if affordable():
            run([both])
            if _suspect(result):
                return result
        elif not result.stopped:
            result.stopped = (
                f"the improving changes were not tried together: the tuning budget of "
                f"{budget_s:g} s was spent"
            )
    winners = [t for t in result.tried if t.ms is not None and t.ms < base * FASTER]
    result.best = min(winners, key=lambda t: t.ms or 0.0) if winners else None
    return result
