"""tritonize(task, generator, options) -> Result: sample, extract, verify, rank, repair (UI-free).

Events tell a front end what is happening; the Result is plain data that the CLI, the
magic, the widget and the store all share.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .model.extract import extract
from .model.generator import Cancel, Completion, Event, GenerationParams, Generator
from .model.prompts import repair_chat, task_chat
from .task import Candidate, Task
from .verify import Report, Verifier, VerifyOptions
from .verify.report import FAIL


@dataclass
class TritonizeOptions:
    """How many samples, how many repair rounds, and the generation and verification settings."""

    n: int = 4
    rounds: int = 0
    params: GenerationParams = field(default_factory=GenerationParams)
    verify: VerifyOptions = field(default_factory=VerifyOptions)
    class_name: str = "Model"


@dataclass
class CandidateResult:
    """One sampled candidate: what the model wrote, what was extracted, and its report."""

    round: int
    sample: int
    prompt: str
    completion: str
    finish_reason: str
    tokens: int
    seconds: float
    code: str | None
    problem: str | None
    report: Report | None

    @property
    def passed(self) -> bool:
        return self.report is not None and self.report.verdict == "pass"

    @property
    def conditional(self) -> bool:
        """Right on the task's inputs, wrong on inputs the judge made: not passed."""
        return self.report is not None and self.report.verdict == "conditional"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["report"] = self.report.to_dict() if self.report else None
        return d


@dataclass
class Result:
    """All candidates of a run, best first; `best` is None when none passed."""

    task: str
    model: str
    candidates: list[CandidateResult]
    cancelled: bool = False
    seconds: float = 0.0

    @property
    def best(self) -> CandidateResult | None:
        return self.candidates[0] if self.candidates and self.candidates[0].passed else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "model": self.model,
            "cancelled": self.cancelled,
            "seconds": self.seconds,
            "best": 0 if self.best else None,
            "candidates": [c.to_dict() for c in self.candidates],
        }


@dataclass
class PipelineEvent:
    """kind: generating, token, extracted, verifying, verified, repairing, done."""

    kind: str
    message: str = ""
    sample: int = -1
    round: int = 0
    data: dict[str, Any] = field(default_factory=dict)


def rank_key(c: CandidateResult) -> tuple:
    """Passing first, then conditional; then faster against torch.compile, then against eager;
    then fewer failures."""
    r = c.report
    t = (r.timing or {}) if r else {}
    return (
        0 if c.passed else 1 if c.conditional else 2,
        -(t.get("speedup_vs_compile") or 0.0),
        -(t.get("speedup_vs_eager") or 0.0),
        len(r.failed()) if r else 99,
        c.round,
        c.sample,
    )


def _no_code_report(problem: str) -> Report:
    r = Report()
    r.add("extraction", FAIL, problem)
    return r.finish()


def tritonize(
    task: Task,
    generator: Generator,
    options: TritonizeOptions | None = None,
    verifier: Verifier | None = None,
    on_event: Callable[[PipelineEvent], None] | None = None,
    cancel: Cancel | None = None,
) -> Result:
    """Sample n candidates, verify them, and repair failures for up to `rounds` more rounds."""
    o = options or TritonizeOptions()
    emit = on_event or (lambda _e: None)
    cancel = cancel or Cancel()
    own = verifier is None
    v = verifier or Verifier(o.verify, on_event=lambda m: emit(PipelineEvent("verifying", m)))
    t0 = time.perf_counter()
    results: list[CandidateResult] = []
    try:
        chat = task_chat(task.source, o.class_name)
        chats = [chat]
        for rnd in range(o.rounds + 1):
            if cancel.cancelled:
                break
            emit(
                PipelineEvent(
                    "generating",
                    f"round {rnd + 1}: sampling {o.n} candidates"
                    if rnd == 0
                    else f"round {rnd + 1}: repairing {len(chats)} candidates",
                    round=rnd,
                )
            )
            per_chat = o.n if rnd == 0 else 1

            def on_token(e: Event, rnd: int = rnd) -> None:
                emit(
                    PipelineEvent(
                        "token",
                        sample=e.sample,
                        round=rnd,
                        data={"event": e},
                    )
                )

            completions = generator.generate(
                chats, per_chat, o.params, on_event=on_token, cancel=cancel
            )
            batch = [_extracted(rnd, i, chats[c.chat], c) for i, c in enumerate(completions)]
            for b in batch:
                emit(
                    PipelineEvent(
                        "extracted", b.problem or "code extracted", sample=b.sample, round=rnd
                    )
                )
            with_code = [b for b in batch if b.code]
            if with_code and not cancel.cancelled:
                samples = [b.sample for b in with_code]

                def on_report(i: int, rep: Report, rnd: int = rnd, samples=samples) -> None:
                    emit(
                        PipelineEvent(
                            "verified",
                            rep.verdict,
                            sample=samples[i],
                            round=rnd,
                            data={"report": rep.to_dict()},
                        )
                    )

                reports = v.verify_many(
                    task,
                    [
                        Candidate(b.code or "", f"round{rnd + 1}-sample{b.sample + 1}")
                        for b in with_code
                    ],
                    on_report=on_report,
                )
                for b, rep in zip(with_code, reports):
                    b.report = rep
            for b in batch:
                if b.report is None:
                    b.report = _no_code_report(b.problem or "no code was extracted")
            results.extend(batch)
            if any(b.passed for b in batch) or rnd == o.rounds:
                break
            # Repair: send each failed candidate's reasons back to the model.
            failed = sorted(batch, key=rank_key)[: o.n]
            chats = [
                repair_chat(
                    chats[0] if rnd == 0 else chat,
                    b.completion,
                    [f"{x['check']}: {x['message']}" for x in b.report.reasons],
                )
                for b in failed
                if b.report is not None
            ]
            emit(
                PipelineEvent(
                    "repairing",
                    f"{len(chats)} candidates go back with the verifier's reasons",
                    round=rnd + 1,
                )
            )
    finally:
        if own:
            v.close()
    results.sort(key=rank_key)
    res = Result(
        task.name,
        getattr(generator, "name", "model"),
        results,
        cancel.cancelled,
        time.perf_counter() - t0,
    )
    emit(PipelineEvent("done", "a candidate passed" if res.best else "no candidate passed"))
    return res


def _extracted(rnd: int, i: int, chat: list[dict[str, str]], c: Completion) -> CandidateResult:
    ex = extract(c.text, c.finish_reason)
    prompt = "\n\n".join(m["content"] for m in chat if m["role"] == "user")
    return CandidateResult(
        rnd,
        i,
        prompt,
        c.text,
        c.finish_reason,
        c.tokens,
        c.seconds,
        ex.code,
        ex.problem if not ex.code else None,
        None,
    )
