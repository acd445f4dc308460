"""`autotriton generate`: sample answers for a task and write each with its extracted code
(UI-free). Each answer is an Attempt, made as the tritonize loop makes it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..files import write_whole
from ..model.generator import Cancel, EventSink, GenerationParams, Generator
from ..model.prompts import task_chat
from ..task import Task
from .attempt import Attempt


def generate_candidates(
    task: Task,
    generator: Generator,
    n: int,
    params: GenerationParams,
    on_event: EventSink | None = None,
    cancel: Cancel | None = None,
    class_name: str = "Model",
) -> list[Attempt]:
    """n completions for the task, each with its extracted candidate source."""
    chat = task_chat(task.source, class_name)
    completions = generator.generate([chat], n, params, on_event=on_event, cancel=cancel)
    return [Attempt.from_completion(c, chat, sample=c.sample) for c in completions]


def generate_interruptibly(
    task: Task,
    generator: Generator,
    n: int,
    params: GenerationParams,
    on_event: EventSink | None = None,
) -> tuple[list[Attempt], bool]:
    """Like generate_candidates, but Ctrl-C cancels cleanly and keeps what finished."""
    from ..interrupt import run_interruptibly

    return run_interruptibly(
        lambda cancel: generate_candidates(task, generator, n, params, on_event, cancel)
    )


_SAMPLE = re.compile(r"(sample-\d+\.(md|py)|summary\.json)\Z")


def earlier_samples(out_dir: str | Path) -> list[Path]:
    """Files of an earlier run in out_dir that write_samples would overwrite or mix with."""
    try:
        found = [p for p in Path(out_dir).iterdir() if _SAMPLE.match(p.name)]
    except OSError:  # no folder yet (or one that cannot be listed: writing will say so)
        return []
    return sorted(found, key=lambda p: (len(p.name), p.name))


def _write_whole(path: Path, text: str) -> None:
    """A sample's file written whole (a full disk leaves no half, or empty, file)."""
    try:
        write_whole(path, text)
    except OSError as e:
        from ..task import TaskError

        raise TaskError(
            f"{path} could not be written ({e.strerror or e}); the samples are not saved. Free "
            "some space or choose a writable folder with -o DIR, then run again."
        ) from e


def write_samples(attempts: list[Attempt], out_dir: str | Path, model: str) -> tuple[Path, list[dict[str, Any]]]:
    """Write sample-K.md (the whole completion), sample-K.py (the candidate) and
    summary.json; returns summary.json's path and its record of each sample."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        from ..task import TaskError

        raise TaskError(
            f"The folder {out} could not be made ({e.strerror or e}); the samples are not "
            "saved. Choose a writable folder with -o DIR, then run again."
        ) from e
    summary = []
    for a in attempts:
        k = a.sample + 1
        text_path = out / f"sample-{k}.md"
        _write_whole(text_path, a.completion)
        code_path = None
        if a.code:
            code_path = out / f"sample-{k}.py"
            _write_whole(code_path, a.code)
        summary.append(
            {
                "sample": k,
                "tokens": a.tokens,
                "seconds": round(a.seconds, 3),
                "tokens_per_s": round(a.tokens_per_s, 2),
                "finish_reason": a.finish_reason,
                "truncated": a.truncated,
                "problem": a.problem,
                "code": str(code_path) if code_path else None,
                "completion": str(text_path),
            }
        )
    path = out / "summary.json"
    _write_whole(path, json.dumps({"model": model, "samples": summary}, indent=2))
    return path, summary


def sample_record(a: Attempt, written: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-ready view of one sample (with where write_samples put it)."""
    return {
        "completion": {
            "text": a.completion,
            "tokens": a.tokens,
            "finish_reason": a.finish_reason,
            "seconds": a.seconds,
            "sample": a.sample + 1,  # from 1, as summary.json and the file names
        },
        "code": a.code,
        "problem": a.problem,
        "truncated": a.truncated,
        "code_path": (written or {}).get("code"),
    }
