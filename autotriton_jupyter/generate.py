"""Sample candidate kernels for a task and keep each completion with its extracted code (UI-free)."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from .files import write_whole
from .model.extract import Extraction, extract
from .model.generator import Cancel, Completion, EventSink, GenerationParams, Generator
from .model.prompts import task_chat
from .task import Task


@dataclass
class Sample:
    """One completion, what was extracted from it, and where it was written."""

    completion: Completion
    extraction: Extraction
    code_path: str | None = None
    text_path: str | None = None


def generate_candidates(
    task: Task,
    generator: Generator,
    n: int,
    params: GenerationParams,
    on_event: EventSink | None = None,
    cancel: Cancel | None = None,
    class_name: str = "Model",
) -> list[Sample]:
    """n completions for the task, each with its extracted candidate source."""
    chat = task_chat(task.source, class_name)
    completions = generator.generate([chat], n, params, on_event=on_event, cancel=cancel)
    return [Sample(c, extract(c.text, c.finish_reason)) for c in completions]


def generate_interruptibly(
    task: Task,
    generator: Generator,
    n: int,
    params: GenerationParams,
    on_event: EventSink | None = None,
) -> tuple[list[Sample], bool]:
    """Like generate_candidates, but Ctrl-C cancels cleanly and keeps what finished."""
    from .interrupt import run_interruptibly

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
        from .task import TaskError

        raise TaskError(
            f"{path} could not be written ({e.strerror or e}); the samples are not saved. Free "
            "some space or choose a writable folder with -o DIR, then run again."
        ) from e


def write_samples(samples: list[Sample], out_dir: str | Path, model: str) -> Path:
    """Write sample-K.md (the whole completion), sample-K.py (the candidate) and summary.json."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        from .task import TaskError

        raise TaskError(
            f"The folder {out} could not be made ({e.strerror or e}); the samples are not "
            "saved. Choose a writable folder with -o DIR, then run again."
        ) from e
    summary = []
    for s in samples:
        k = s.completion.sample + 1
        text_path = out / f"sample-{k}.md"
        _write_whole(text_path, s.completion.text)
        s.text_path = str(text_path)
        if s.extraction.code:
            code_path = out / f"sample-{k}.py"
            _write_whole(code_path, s.extraction.code)
            s.code_path = str(code_path)
        summary.append(
            {
                "sample": k,
                "tokens": s.completion.tokens,
                "seconds": round(s.completion.seconds, 3),
                "tokens_per_s": round(s.completion.tokens_per_s, 2),
                "finish_reason": s.completion.finish_reason,
                "truncated": s.extraction.truncated,
                "problem": s.extraction.problem,
                "code": s.code_path,
                "completion": s.text_path,
            }
        )
    path = out / "summary.json"
    _write_whole(path, json.dumps({"model": model, "samples": summary}, indent=2))
    return path


def sample_record(s: Sample) -> dict:
    """A JSON-ready view of one sample."""
    return {
        "completion": asdict(s.completion),
        "code": s.extraction.code,
        "problem": s.extraction.problem,
        "truncated": s.extraction.truncated,
        "code_path": s.code_path,
    }
