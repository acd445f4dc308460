"""Training examples from the kernel library: the accepted kernels as (chat, target)
pairs, the held-out split, and the dataset's hash (kept with each adapter).

Each accepted kernel is one chat example in the model's own prompt format: the chat
exactly as it was sent to the model (for a repair round, the task, the failed answer and
the verifier's reasons), then the target: the accepted completion, or just the code (in
a fenced block) when the user edited it. Kernels kept by a version that did not store the
chat (library schema 1 and older) train on their user turns as one turn. SFT (sft.py)
learns the targets; GRPO (grpo.py) uses the tasks of the same examples.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass

from ..model.generator import Chat, GenerationError


@dataclass
class Example:
    """One training pair: the chat as it was sent to the model, and the target answer."""

    chat: Chat
    target: str
    name: str
    task_source: str = ""


def dataset_from_library(library: str | None = None) -> list[Example]:
    """Accepted kernels as examples, duplicates removed, in a stable order."""
    from ..store import NoLibrary, Store

    try:
        with Store(library, write=False) as store:
            accepted = store.accepted()
    except NoLibrary:
        accepted = []  # no library yet: nothing accepted to learn from
    seen: set[str] = set()
    examples = []
    for a in sorted(accepted, key=lambda a: a.name):
        # Older libraries kept only the user turns, joined: that one turn is all there is.
        chat = a.chat or ([{"role": "user", "content": a.prompt}] if a.prompt else None)
        if not chat:
            continue
        target = (
            f"```python\n{a.code.strip()}\n```" if a.edited or not a.completion else a.completion
        )
        key = hashlib.sha256((json.dumps(chat) + "\0" + target).encode()).hexdigest()
        if key not in seen:
            seen.add(key)
            examples.append(Example(chat, target, a.name, a.task_source))
    if not examples:
        raise GenerationError(
            "The kernel library has no accepted kernels to learn from yet: "
            "accept some with %%autotriton (or autotriton tritonize) first."
        )
    return examples


def split(examples: list[Example], share: float, seed: int) -> tuple[list[Example], list[Example]]:
    """(train, held-out); nothing is held out until there are at least 5 examples."""
    order = list(examples)
    random.Random(seed).shuffle(order)
    k = int(len(order) * share) if len(order) >= 5 else 0
    return order[k:], order[:k]


def dataset_hash(examples: list[Example]) -> str:
    h = hashlib.sha256()
    for e in examples:
        h.update(json.dumps(e.chat).encode() + b"\0" + e.target.encode() + b"\1")
    return h.hexdigest()[:16]
