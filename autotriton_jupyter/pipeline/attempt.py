"""One model answer as the pipeline sees it (Attempt), a run's answers (Result), and how
they are ranked.

An Attempt is made from a completion the same way wherever completions come from: the
tritonize loop, `autotriton generate`, evaluation and GRPO's reward (from_completion): its
code, or why there is none (cut off at the token limit, interrupted, no code block), with
the completion's finish reason kept.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..model.extract import extract
from ..model.generator import Chat, Completion
from ..verify import Report


@dataclass
class Attempt:
    """One sampled candidate: what the model wrote, what was extracted, and its report.

    `chat` is the chat exactly as it was sent to the model (for a repair round: the task,
    the failed answer and the verifier's reasons); `prompt` joins only its user turns, for
    reading."""

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
    chat: Chat = field(default_factory=list)
    tuned: str = ""  # for a variant the tuning pass made: the launch parameters it changed

    @classmethod
    def from_completion(
        cls, c: Completion, chat: Chat, round: int = 0, sample: int = 0
    ) -> Attempt:
        """The candidate in a completion: its code, or why there is none (cut off at the token
        limit, interrupted, no code block), with the completion's finish reason kept."""
        prompt = "\n\n".join(m["content"] for m in chat if m["role"] == "user")
        if c.finish_reason == "cancelled":  # interrupted: what it wrote so far is no candidate
            code, problem = None, "interrupted before it finished"
        else:
            # The problem is kept beside code too ("No code block defines class ModelNew."
            # with the last block as the code): the verifier then says what is wrong with it.
            ex = extract(c.text, c.finish_reason)
            code, problem = ex.code, ex.problem
        return cls(
            round,
            sample,
            prompt,
            c.text,
            c.finish_reason,
            c.tokens,
            c.seconds,
            code,
            problem,
            report=None,
            chat=list(chat),
        )

    @property
    def truncated(self) -> bool:
        """Cut off at the token limit."""
        return self.finish_reason == "length"

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

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
        d["tuned"] = self.tuned or None  # the changed launch parameters, or null
        return d


@dataclass
class Result:
    """All candidates of a run, best first; `best` is None when none passed."""

    task: str
    model: str
    candidates: list[Attempt]
    cancelled: bool = False
    seconds: float = 0.0
    adapter: str | None = None  # the LoRA adapter the model ran with, if any
    ranked_by: str = "device"  # the speed figure that ranked them (config.RANK_FIGURES)
    tuning: dict[str, Any] | None = None  # what the tuning pass did (tuning.Tuning.to_dict), if it ran

    @property
    def best(self) -> Attempt | None:
        return self.candidates[0] if self.candidates and self.candidates[0].passed else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "model": self.model,
            "adapter": self.adapter,
            "ranked_by": self.ranked_by,
            "tuning": self.tuning,
            "cancelled": self.cancelled,
            "seconds": self.seconds,
            "best": 0 if self.best else None,
            "candidates": [c.to_dict() for c in self.candidates],
        }


def speedups(timing: dict[str, Any] | None, by: str = "device") -> tuple[float | None, float | None]:
    """(vs torch.compile, vs eager) by one figure: "device" (calls back to back; one call's
    figures where those were not measured) or "call" (one call on an idle GPU)."""
    t = timing or {}
    if by == "device" and t.get("speedup_vs_compile_b2b"):
        return t.get("speedup_vs_compile_b2b"), t.get("speedup_vs_eager_b2b")
    return t.get("speedup_vs_compile"), t.get("speedup_vs_eager")


def rank_key(c: Attempt, by: str = "device") -> tuple:
    """Passing first, then conditional; then faster against torch.compile, then against eager
    (by the figure `by`: see speedups); then fewer failures."""
    r = c.report
    vs_compile, vs_eager = speedups(r.timing if r else None, by)
    return (
        0 if c.passed else 1 if c.conditional else 2,
        -(vs_compile or 0.0),
        -(vs_eager or 0.0),
        len(r.failed()) if r else 99,
        c.round,
        c.sample,
    )


