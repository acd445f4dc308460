"""The Generator protocol every backend implements, and the plain data it trades in."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

Message = dict[str, str]
Chat = list[Message]


class GenerationError(RuntimeError):
    """Generation could not run; the message says what happened and what to do."""


@dataclass
class GenerationParams:
    """Sampling settings (third-party AutoTriton evaluations used temperature 0.6, top_p 0.95)."""

    max_tokens: int = 8192
    temperature: float = 0.6
    top_p: float = 0.95
    seed: int | None = None


@dataclass
class Completion:
    """One sampled answer. finish_reason: "stop", "length" (cut at max_tokens) or "cancelled"."""

    text: str
    tokens: int
    finish_reason: str
    seconds: float
    chat: int = 0
    sample: int = 0
    prompt_tokens: int = 0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Event:
    """Progress from a backend: kind is "load", "token" or "done".

    A "done" event carries the sample's whole text, so its code can be judged while
    other samples are still generating.
    """

    kind: str
    sample: int = 0
    chat: int = 0
    text: str = ""
    tokens: int = 0
    tokens_per_s: float = 0.0
    message: str = ""


EventSink = Callable[[Event], None]


@dataclass
class Cancel:
    """A flag a caller sets (from any thread) to stop generation after the current token."""

    _flag: threading.Event = field(default_factory=threading.Event)

    def set(self) -> None:
        self._flag.set()

    @property
    def cancelled(self) -> bool:
        return self._flag.is_set()


class TokenStream:
    """One sample's streamed pieces: each one is reported as a token Event as it arrives."""

    def __init__(self, emit: EventSink, chat: int, sample: int) -> None:
        self.emit, self.chat, self.sample = emit, chat, sample
        self.parts: list[str] = []
        self.t0 = time.perf_counter()

    @property
    def tokens(self) -> int:
        return len(self.parts)

    def token(self, piece: str) -> None:
        self.parts.append(piece)
        dt = time.perf_counter() - self.t0
        self.emit(
            Event(
                "token",
                sample=self.sample,
                chat=self.chat,
                text=piece,
                tokens=self.tokens,
                tokens_per_s=self.tokens / dt if dt else 0.0,
            )
        )

    def completion(self, finish: str) -> Completion:
        """The finished sample (and its "done" Event)."""
        seconds = time.perf_counter() - self.t0
        self.emit(
            Event(
                "done",
                sample=self.sample,
                chat=self.chat,
                tokens=self.tokens,
                tokens_per_s=self.tokens / seconds if seconds else 0.0,
                message=finish,
                text="".join(self.parts),
            )
        )
        return Completion(
            "".join(self.parts), self.tokens, finish, seconds, chat=self.chat, sample=self.sample
        )


class Generator(Protocol):
    """A loaded model that samples n completions for each chat."""

    name: str

    def generate(
        self,
        chats: list[Chat],
        n: int,
        params: GenerationParams,
        on_event: EventSink | None = None,
        cancel: Cancel | None = None,
    ) -> list[Completion]:
        """Sample n completions per chat, in chat order then sample order."""
        ...
