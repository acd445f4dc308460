"""`autotriton eval`: one honest measure of a model, or of a set of generated kernels.

Every task file of a folder (KernelBench format) is judged by the strict verifier,
either on candidates the model generates now or on pre-generated candidate files
(`--candidates DIR`: DIR/<task>/*.py or DIR/<task>.py). Each judged candidate is one
JSON line in OUT/results.jsonl, appended as soon as it is known, so a killed run
resumes where it stopped (`--resume`). One failing task never stops the run; a
results file that cannot be written does, leaving every line in it complete.

Timings of calls that take under about 0.1 ms are host launch time (Python and the
driver), which shifts between processes; such results are marked launch-bound and the
summary gives fast_p and the geomean both over all tasks and without those tasks.

Length: one command's run, its resumable results file and its summary and report
formats; the measures are plain functions of the results file.
"""

from __future__ import annotations

import contextlib
import html
import json
import math
import os
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import LAUNCH_BOUND_MS, TritonizeOptions
from .files import write_whole
from .model.generator import GenerationParams
from .task import Candidate, Task, TaskError
from .verify import Verifier, VerifyOptions

THRESHOLDS = (1.0, 1.2, 2.0)


@dataclass
class EvalOptions:
    """Where the tasks and candidates are, where results go, and how to judge."""

    out_dir: str = "autotriton-eval"
    candidates_dir: str | None = None
    n: int = TritonizeOptions.n
    rounds: int = TritonizeOptions.rounds
    resume: bool = False
    launch_bound_ms: float = LAUNCH_BOUND_MS
    params: GenerationParams = field(default_factory=GenerationParams)
    verify: VerifyOptions = field(default_factory=VerifyOptions)


def task_files(tasks_dir: str | Path) -> list[Path]:
    """The task files of a folder, in name order."""
    d = Path(tasks_dir)
    if not d.is_dir():
        raise TaskError(f"{d} is not a folder of task files.")
    files = sorted(p for p in d.glob("*.py") if not p.name.startswith("_"))
    if not files:
        raise TaskError(f"{d} holds no .py task files.")
    return files


def candidate_files(candidates_dir: str | Path, task: str) -> list[Path]:
    """Candidates for one task: DIR/<task>/*.py, else DIR/<task>.py."""
    d = Path(candidates_dir)
    if (d / task).is_dir():
        return sorted((d / task).glob("*.py"))
    return [d / f"{task}.py"] if (d / f"{task}.py").is_file() else []


def check_candidates(candidates_dir: str | Path, tasks: list[Path]) -> None:
    """Refuse a candidates folder that holds no candidate for any of the tasks."""
    d = Path(candidates_dir)
    if not any(candidate_files(d, t.stem) for t in tasks):
        raise TaskError(
            f"{d} holds no candidate files for the tasks ({d}/<task>/*.py or {d}/<task>.py, "
            f"e.g. {d}/{tasks[0].stem}/a.py); give the folder that holds them."
        )


class ResultsNotWritten(TaskError):
    """results.jsonl or a summary could not be written: the run stops (its lines stay whole)."""


def check_results(out_dir: str | Path, resume: bool) -> None:
    """Refuse, before any work, an OUT/results.jsonl that this run could not continue."""
    path = Path(out_dir) / "results.jsonl"
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as e:
        raise TaskError(f"{path} cannot be used ({e.strerror}); choose another --out.") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise TaskError(f"{path} is {kind}, not a results file; move it or choose another --out.")
    if not resume:
        raise TaskError(
            f"{path} already exists: pass --resume to continue that run, or choose another --out."
        )
    try:
        data = path.read_bytes()
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND))  # opened to append, nothing written
    except OSError as e:
        raise TaskError(
            f"{path} cannot be continued ({e.strerror}); make it readable and writable, "
            "or choose another --out."
        ) from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TaskError(
            f"{path} is not UTF-8 text (byte {data[e.start]:#04x} at offset {e.start}), so it "
            "was not written by autotriton eval; move it or choose another --out."
        ) from None


def _append(path: Path, record: dict[str, Any]) -> None:
    """One JSON line at the end of results.jsonl; a failed write is cut off again, so the
    file always ends with a whole line."""
    line = memoryview((json.dumps(record) + "\n").encode())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as e:
        raise _not_written(path, e) from None
    try:
        end = os.fstat(fd).st_size
        try:
            while line:
                line = line[os.write(fd, line) :]
            os.fsync(fd)
        except OSError as e:
            with contextlib.suppress(OSError):  # a shorter file needs no space, even on a full disk
                os.ftruncate(fd, end)
            raise _not_written(path, e) from None
    finally:
        os.close(fd)


def _not_written(path: Path, e: OSError) -> ResultsNotWritten:
    return ResultsNotWritten(
        f"{path} could not be written ({e.strerror or e}); the run stopped and the candidates "
        "judged so far are kept: free some space (or fix the folder), then run the same "
        "command with --resume."
    )


def _write_whole(path: Path, text: str) -> None:
    """A report file written whole, so a full disk never leaves half of it."""
    try:
        write_whole(path, text)
    except OSError as e:
        raise _not_written(path, e) from None


def _record(line: bytes) -> dict[str, Any] | None:
    """A results line as a record, or None when it is not one."""
    try:
        r = json.loads(line)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        return None
    return r if isinstance(r, dict) and isinstance(r.get("task"), str) else None


def _done(
    path: Path, warn: Callable[[str], None]
) -> tuple[list[dict[str, Any]], set[tuple[str, str]]]:
    """Records already written. A torn last line (a run killed while writing it) is cut
    off the file, so new lines never join it; unreadable lines before it are skipped."""
    if not path.exists():
        return [], set()
    data = path.read_bytes()
    *lines, tail = data.split(b"\n")  # tail: b"" when the file ends with a newline
    records = []
    bad = []
    for number, line in enumerate(lines, 1):
        r = _record(line)
        if r is not None:
            records.append(r)
        elif line.strip():
            bad.append(number)
    if tail.strip():
        r = _record(tail)
        try:
            with path.open("r+b") as f:
                if r is not None:  # whole but for its newline
                    records.append(r)
                    f.seek(0, os.SEEK_END)
                    f.write(b"\n")
                else:
                    f.truncate(len(data) - len(tail))
        except OSError as e:
            raise _not_written(path, e) from None
        if r is None:
            warn(
                f"{path}: its last line was cut off by a run stopped while writing it "
                f"({len(tail)} bytes), so it was removed; that candidate is judged again."
            )
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (", ..." if len(bad) > 5 else "")
        warn(
            f"{path}: {len(bad)} unreadable line(s) (line {shown}) were skipped and left as "
            "they are; the candidates they held are judged again."
        )
    return records, {(r["task"], r.get("candidate", "")) for r in records}


def run_eval(
    tasks_dir: str | Path,
    options: EvalOptions,
    generator: Any = None,
    on_progress: Callable[[str], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Judge every task; returns the summary (also written as summary.json/.md/.html)."""
    emit = on_progress or (lambda _m: None)
    if generator is None and not options.candidates_dir:
        raise TaskError("Give a model (--model) or a folder of candidates (--candidates DIR).")
    files = task_files(tasks_dir)  # bad folders are said before anything is made
    if options.candidates_dir:
        check_candidates(options.candidates_dir, files)
    check_results(options.out_dir, options.resume)
    out = Path(options.out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TaskError(f"{out} cannot be made ({e.strerror}); choose another --out.") from None
    results = out / "results.jsonl"
    records, done = _done(results, on_warning or emit)
    t0 = time.monotonic()
    skipped = 0
    lock = threading.Lock()
    failed: list[ResultsNotWritten] = []  # once a write fails, nothing more is written

    def write(r: dict[str, Any]) -> None:
        """A record goes to disk as soon as it is known (a kill loses only what is in flight)."""
        r = _with_timing_marks(r, options.launch_bound_ms)
        with lock:
            if failed:
                raise failed[0]
            try:
                _append(results, r)
            except ResultsNotWritten as e:
                failed.append(e)
                raise
            records.append(r)

    with Verifier(options.verify) as verifier:
        for i, path in enumerate(files):
            name = path.stem
            eta = ""
            if i:
                left = (time.monotonic() - t0) / i * (len(files) - i)
                eta = f", about {left / 60:.1f} min left"
            emit(f"[{i + 1}/{len(files)}] {name}{eta}")
            skipped += sum(1 for k in done if k[0] == name)
            try:
                _judge_task(path, name, options, verifier, generator, done, write)
            except ResultsNotWritten:
                raise
            except TaskError as e:
                if (name, "") not in done:  # (write raises again if results.jsonl failed)
                    write({"task": name, "candidate": "", "error": str(e)})
            if failed:  # a write that failed in a thread whose error was not passed on
                raise failed[0]
    summary = summarize(records, options.launch_bound_ms)
    summary["skipped_as_done"] = skipped
    _write_whole(out / "summary.json", json.dumps(summary, indent=2))
    _write_whole(out / "summary.md", render_markdown(summary))
    _write_whole(out / "report.html", render_html(summary))
    return summary


def _judge_task(
    path: Path,
    name: str,
    options: EvalOptions,
    verifier: Verifier,
    generator: Any,
    done: set[tuple[str, str]],
    write: Callable[[dict[str, Any]], None],
) -> None:
    """Judge one task's candidates, writing each record as its report comes."""
    task = Task.from_file(path)
    if options.candidates_dir:
        files = [
            f for f in candidate_files(options.candidates_dir, name) if (name, f.name) not in done
        ]
        if files:
            verifier.verify_many(
                task,
                [Candidate.from_file(f) for f in files],
                on_report=lambda i, r: write(
                    {"task": name, "candidate": files[i].name, "source": "file",
                     "report": r.to_dict()}
                ),
            )
        return
    _judge_samples(task, name, options, verifier, generator, done, write)


def _judge_samples(
    task: Task,
    name: str,
    options: EvalOptions,
    verifier: Verifier,
    generator: Any,
    done: set[tuple[str, str]],
    write: Callable[[dict[str, Any]], None],
) -> None:
    """The model's samples for a task. A run killed during the task resumes with as many
    new first-round samples as are missing (and no new repair round once one was written)."""
    from .pipeline import PipelineEvent, tritonize

    before = [c for t, c in done if t == name and c]
    offset = {r: sum(1 for c in before if c.startswith(f"round{r + 1}-")) for r in range(99)}
    n = options.n - offset[0]
    if n <= 0:
        return
    rounds = options.rounds if not any(offset[r] for r in range(1, 99)) else 0
    source = getattr(generator, "name", "model")
    tokens: dict[tuple[int, int], int] = {}
    written: set[tuple[int, int]] = set()

    def label(rnd: int, sample: int) -> str:
        return f"round{rnd + 1}-sample{sample + 1 + offset[rnd]}"

    def on_event(e: PipelineEvent) -> None:
        event = (e.data or {}).get("event")
        if e.kind == "token" and event is not None and event.kind == "done":
            per_chat = n if e.round == 0 else 1
            tokens[(e.round, event.chat * per_chat + event.sample)] = event.tokens
        if e.kind == "verified" and (e.round, e.sample) not in written:
            written.add((e.round, e.sample))
            write({"task": name, "candidate": label(e.round, e.sample), "source": source,
                   "tokens": tokens.get((e.round, e.sample)), "report": e.data["report"]})

    result = tritonize(
        task,
        generator,
        TritonizeOptions(
            n=n, rounds=rounds, params=options.params, verify=options.verify, tune=False
        ),  # the model's own kernels are measured, not tuned ones
        verifier=verifier,
        on_event=on_event,
    )
    for c in result.candidates:  # those without code, which were never judged
        if (c.round, c.sample) not in written:
            write({"task": name, "candidate": label(c.round, c.sample), "source": source,
                   "tokens": c.tokens, "report": c.report.to_dict() if c.report else None})


def launch_bound(
    report: dict[str, Any] | None, threshold_ms: float = LAUNCH_BOUND_MS
) -> bool | None:
    """Whether eager or candidate time is under the threshold (None when not timed)."""
    t = (report or {}).get("timing") or {}
    times = [t[k] for k in ("eager_ms", "candidate_ms") if t.get(k) is not None]
    return min(times) < threshold_ms if times else None


def timing_spread(report: dict[str, Any] | None) -> float | None:
    """The interquartile range of the candidate's timed calls over their median, or None."""
    t = (report or {}).get("timing") or {}
    q1, q3, median = t.get("candidate_q1_ms"), t.get("candidate_q3_ms"), t.get("candidate_ms")
    if q1 is None or q3 is None or not median:
        return None  # not timed, or timed by a version that kept no quartiles
    return (q3 - q1) / median


def _with_timing_marks(record: dict[str, Any], threshold_ms: float) -> dict[str, Any]:
    """The record with launch_bound and timing_spread, placed before the long report."""
    report = record.get("report")
    marked = {k: v for k, v in record.items() if k != "report"}
    marked["launch_bound"] = launch_bound(report, threshold_ms)
    marked["timing_spread"] = timing_spread(report)
    if "report" in record:
        marked["report"] = report
    return marked


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator: 1 - C(n-c, k) / C(n, k)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _passed(report: dict[str, Any] | None, check: str) -> bool:
    if not report:
        return False
    status = {c["name"]: c["status"] for c in report.get("checks", [])}
    return status.get(check) == "pass"


def _fast_and_geomean(
    best: dict[str, dict[str, Any]], n_tasks: int, timed: bool
) -> dict[str, float | None]:
    """fast_p (share of n_tasks beating each threshold) and the geomean vs eager, by one
    call (`fast_1_vs_eager`) and by device time, calls back to back (`..._b2b`)."""
    out: dict[str, float | None] = {}
    for figure in ("", "_b2b"):
        for base in ("eager", "compile"):
            for p in THRESHOLDS:
                out[f"fast_{p:g}_vs_{base}{figure}"] = (
                    sum(1 for b in best.values() if (b.get(f"speedup_vs_{base}{figure}") or 0) > p)
                    / max(1, n_tasks)
                    if timed
                    else None
                )
        speedups = [b[k] for b in best.values() if (k := f"speedup_vs_eager{figure}") in b and b[k]]
        out[f"geomean_speedup_vs_eager{figure}"] = (
            math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None
        )
    return out


def summarize(
    records: list[dict[str, Any]], launch_bound_ms: float = LAUNCH_BOUND_MS
) -> dict[str, Any]:
    """Counts, pass@k, fast_p and the geometric-mean speedup from the JSON lines.

    fast_p and the geomean are given over all tasks (as KernelBench does) and again under
    `excluding_launch_bound`, without the tasks whose best timing is launch-bound.
    """
    tasks: dict[str, list[dict[str, Any]]] = {}
    errors = {}
    for r in records:
        if "error" in r:
            errors[r["task"]] = r["error"]
            continue
        tasks.setdefault(r["task"], []).append(r.get("report") or {})
    cheats: Counter[str] = Counter()
    compiled = ran = correct = total = launch_bound_candidates = conditional = 0
    best: dict[str, dict[str, Any]] = {}
    per_task = {}
    for name, reports in sorted(tasks.items()):
        n = len(reports)
        c = sum(1 for r in reports if r.get("verdict") == "pass")
        total += n
        correct += c
        # Right on the task's inputs, wrong on the judge's: not passed, counted apart.
        conditional += sum(1 for r in reports if r.get("verdict") == "conditional")
        compiled += sum(1 for r in reports if _passed(r, "load"))
        ran += sum(1 for r in reports if _passed(r, "runs"))
        launch_bound_candidates += sum(1 for r in reports if launch_bound(r, launch_bound_ms))
        for r in reports:
            for reason in r.get("reasons", []):
                cheats[reason["check"]] += 1
        timings = [r.get("timing") or {} for r in reports if r.get("verdict") == "pass"]
        best[name] = {
            key: max((t.get(key) or 0.0 for t in timings), default=0.0) or None
            for key in (
                "speedup_vs_eager",
                "speedup_vs_compile",
                "speedup_vs_eager_b2b",
                "speedup_vs_compile_b2b",
            )
        }
        # The task is judged by the candidate that gives its best speedup vs eager.
        top = max(
            (r for r in reports if r.get("verdict") == "pass" and r.get("timing")),
            key=lambda r: r["timing"].get("speedup_vs_eager") or 0.0,
            default=None,
        )
        per_task[name] = {
            "candidates": n,
            "correct": c,
            **best[name],
            "eager_ms": top["timing"].get("eager_ms") if top else None,
            "candidate_ms": top["timing"].get("candidate_ms") if top else None,
            "timing_spread": timing_spread(top),
            "launch_bound": launch_bound(top, launch_bound_ms),
        }
    ns = [len(v) for v in tasks.values()]
    k_max = min(ns) if ns else 0
    ks = sorted({1, k_max} - {0})

    def pass_k(k: int) -> float:
        return sum(
            pass_at_k(len(v), sum(1 for r in v if r.get("verdict") == "pass"), k)
            for v in tasks.values()
        ) / max(1, len(tasks))

    timed = any(b["speedup_vs_eager"] for b in best.values())
    bound = [name for name, t in per_task.items() if t["launch_bound"]]
    # Tasks with no timed correct candidate stay in, counted as misses as in fast_p.
    kept = {name: b for name, b in best.items() if name not in bound}
    return {
        "tasks": len(tasks) + len(errors),
        "task_errors": errors,
        "candidates": total,
        "compiled": compiled,
        "ran": ran,
        "correct": correct,
        "conditional": conditional,
        "tasks_with_a_correct_candidate": sum(1 for v in per_task.values() if v["correct"]),
        "pass_at_k": {str(k): round(pass_k(k), 4) for k in ks},
        **_fast_and_geomean(best, len(tasks), timed),
        "launch_bound_ms": launch_bound_ms,
        "timed_tasks": sum(1 for t in per_task.values() if t["launch_bound"] is not None),
        "launch_bound_tasks": bound,
        "launch_bound_candidates": launch_bound_candidates,
        "excluding_launch_bound": {
            "tasks": len(kept),
            **_fast_and_geomean(kept, len(kept), timed and bool(kept)),
        },
        "failed_checks": dict(cheats.most_common()),
        "per_task": per_task,
    }


def launch_bound_note(s: dict[str, Any]) -> str:
    """One plain paragraph on which tasks are launch-bound and what that means; "" if none was timed."""
    if not s.get("timed_tasks"):
        return ""
    limit = f"{s['launch_bound_ms']:g} ms per call"
    if not s["launch_bound_tasks"]:
        return (
            f"No timed task is launch-bound: eager and candidate calls all take at least {limit}."
        )
    return (
        f"Launch-bound (eager or candidate time under {limit}): "
        f"{', '.join(s['launch_bound_tasks'])}. Their speedups measure host launch overhead "
        "(Python and the driver), not GPU work, and vary between runs; the measures marked "
        "'excluding launch-bound' leave these tasks out. Spread is the interquartile range "
        "of the best candidate's timed calls over their median, within this run only."
    )


def render_markdown(s: dict[str, Any]) -> str:
    """The summary as a markdown table, plus per-task rows and the checks that fired."""

    def fmt(v: Any) -> str:
        if v is None:
            return "not measured"
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    def measures(prefix: str, figures: dict[str, Any]) -> list[str]:
        keys = [k for k in figures if k.startswith(("fast_", "geomean_"))]
        return [
            f"| {k.removesuffix('_b2b').replace('_', ' ')}{prefix}"
            f"{', back to back' if k.endswith('_b2b') else ''} | {fmt(figures[k])} |"
            for k in keys
        ]

    lines = ["# autotriton eval", "", "| measure | value |", "|---|---|"]
    for key in (
        "tasks",
        "candidates",
        "compiled",
        "ran",
        "correct",
        "conditional",
        "tasks_with_a_correct_candidate",
    ):
        shown = key.replace("_", " ")
        if key == "conditional":
            shown = "conditional (right on the task's inputs only; not counted as correct)"
        lines.append(f"| {shown} | {s.get(key, 0)} |")
    for k, v in s["pass_at_k"].items():
        lines.append(f"| pass@{k} | {v:.3f} |")
    if s.get("timed_tasks"):
        lines += measures("", s)
        lines.append(
            f"| launch-bound tasks (under {s['launch_bound_ms']:g} ms) | "
            f"{len(s['launch_bound_tasks'])} of {s['timed_tasks']} timed |"
        )
        lines.append(f"| launch-bound candidates | {s['launch_bound_candidates']} |")
        excluded = s["excluding_launch_bound"]
        lines.append(f"| tasks, excluding launch-bound | {excluded['tasks']} |")
        lines += measures(", excluding launch-bound", excluded)
    else:  # one line, not a row of "not measured" for each speed measure
        lines.append(
            "| speed (fast_p, geomean) | not measured: no passing candidate was timed (timing "
            "runs on a GPU only, and not with --no-timing) |"
        )
    note = launch_bound_note(s)
    lines += ["", note] if note else []
    lines += [
        "",
        "| task | candidates | correct | best vs eager | best vs compile | back to back: vs eager "
        "| vs compile | eager ms | spread | launch-bound |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, t in s["per_task"].items():
        spread = "-" if t["timing_spread"] is None else f"{t['timing_spread']:.0%}"
        bound = {True: "yes", False: "no", None: "-"}[t["launch_bound"]]
        eager = "-" if t["eager_ms"] is None else f"{t['eager_ms']:.3f}"
        lines.append(
            f"| {name} | {t['candidates']} | {t['correct']} | "
            f"{fmt(t['speedup_vs_eager'])} | {fmt(t['speedup_vs_compile'])} | "
            f"{fmt(t['speedup_vs_eager_b2b'])} | {fmt(t['speedup_vs_compile_b2b'])} | "
            f"{eager} | {spread} | {bound} |"
        )
    for name, err in s["task_errors"].items():
        lines.append(f"| {name} | task error: {err} | | | | | | | | |")
    lines += ["", "Checks that failed (how many candidates):", ""]
    lines += [f"- {k}: {v}" for k, v in s["failed_checks"].items()] or ["- none"]
    return "\n".join(lines) + "\n"


def _bars(title: str, items: list[tuple[str, float]]) -> str:
    """A small horizontal bar chart as inline SVG."""
    if not items:
        return f"<h3>{html.escape(title)}</h3><p>nothing to plot</p>"
    top = max(v for _, v in items) or 1.0
    rows = []
    for i, (label, v) in enumerate(items):
        w = 300 * v / top
        rows.append(
            f"<text x='0' y='{i * 22 + 15}' font-size='12'>{html.escape(label)}</text>"
            f"<rect x='200' y='{i * 22 + 3}' width='{w:.1f}' height='16' fill='#4c72b0'/>"
            f"<text x='{205 + w:.1f}' y='{i * 22 + 15}' font-size='12'>{v:g}</text>"
        )
    return (
        f"<h3>{html.escape(title)}</h3><svg width='560' height='{len(items) * 22 + 6}'>"
        + "".join(rows)
        + "</svg>"
    )


def render_html(s: dict[str, Any]) -> str:
    """The summary as a standalone HTML page with plots."""
    speed = [
        (name + (" (launch-bound)" if t["launch_bound"] else ""), round(t["speedup_vs_eager"], 3))
        for name, t in s["per_task"].items()
        if t["speedup_vs_eager"]
    ]
    checks = list(s["failed_checks"].items())
    note = launch_bound_note(s)
    body = f"<p><strong>{html.escape(note)}</strong></p>" if note else ""
    body += "<pre>" + html.escape(render_markdown(s)) + "</pre>"
    body += _bars("best speedup vs eager, per task (correct candidates only)", speed)
    body += _bars("failed checks, by candidate count", [(k, float(v)) for k, v in checks])
    return f"<!doctype html><meta charset='utf-8'><title>autotriton eval</title><body>{body}</body>"
