"""Get the candidate code out of a completion: reasoning stripped, the right block chosen.

AutoTriton answers with step-by-step reasoning (with or without <think> tags), then
code in fenced blocks. The block wanted is the one defining ModelNew (the last one
when there are several); kernels the model put in earlier blocks are kept in front
of it. A completion cut off at max_tokens is reported as such.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n", re.MULTILINE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_MODEL_NEW = re.compile(r"^\s*class\s+ModelNew\b", re.MULTILINE)
_KERNEL = re.compile(r"@triton\.(jit|autotune|heuristics)\b")
_CODE_LANGS = {"", "python", "py", "python3"}


@dataclass
class Extraction:
    """The code found (None when none), the reasoning, and why nothing usable was found."""

    code: str | None
    reasoning: str
    truncated: bool = False
    problem: str | None = None


def split_reasoning(text: str) -> tuple[str, str, bool]:
    """(reasoning, answer, still_thinking): tagged reasoning is split off; untagged stays in answer."""
    close = list(_THINK_CLOSE.finditer(text))
    if close:
        end = close[-1]
        reasoning = _THINK_OPEN.sub("", text[: end.start()]).strip()
        return reasoning, text[end.end() :], False
    if _THINK_OPEN.search(text):
        start = _THINK_OPEN.search(text)
        assert start is not None
        return text[start.end() :].strip(), "", True
    return "", text, False


def code_blocks(text: str) -> tuple[list[str], str | None]:
    """Closed code blocks in order, and the content of a final block left open (if any)."""
    blocks: list[str] = []
    pos = 0
    while True:
        m = _FENCE.search(text, pos)
        if not m:
            return blocks, None
        fence, lang = m.group(1), m.group(2).lower()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        c = close.search(text, m.end())
        if not c:
            return blocks, (text[m.end() :] if lang in _CODE_LANGS else None)
        if lang in _CODE_LANGS:
            blocks.append(text[m.end() : c.start()])
        pos = c.end()


def extract(text: str, finish_reason: str = "stop") -> Extraction:
    """Choose the candidate source in a completion (see the module docstring)."""
    cut = finish_reason == "length"
    reasoning, answer, thinking = split_reasoning(text)
    if thinking:
        return Extraction(
            None,
            reasoning,
            cut,
            "The answer was cut off while the model was still reasoning; raise --max-tokens."
            if cut
            else "The answer never left its <think> section.",
        )
    blocks, open_block = code_blocks(answer)
    if open_block is not None:
        if cut:
            return Extraction(
                None,
                reasoning or answer,
                True,
                "The answer was cut off inside its code block; raise --max-tokens.",
            )
        blocks.append(open_block)
    if not blocks and _MODEL_NEW.search(answer):
        blocks = [answer]  # bare code, no fences
    if not blocks:
        return Extraction(
            None,
            reasoning or answer,
            cut,
            "The answer has no code block."
            + (" It was cut off at the token limit." if cut else ""),
        )
    with_model = [i for i, b in enumerate(blocks) if _MODEL_NEW.search(b)]
    if not with_model:
        return Extraction(
            blocks[-1].strip() + "\n", reasoning, cut, "No code block defines class ModelNew."
        )
    last = with_model[-1]
    chosen = blocks[last]
    if not _KERNEL.search(chosen):
        helpers = [b for b in blocks[:last] if _KERNEL.search(b) and not _MODEL_NEW.search(b)]
        chosen = "\n\n".join([*helpers, chosen])
    prose = answer
    for b in blocks:
        prose = prose.replace(b, "")
    return Extraction(
        chosen.strip() + "\n", "\n".join(p for p in (reasoning, prose.strip()) if p), cut, None
    )
