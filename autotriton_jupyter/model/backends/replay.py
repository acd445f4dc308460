"""Pre-generated completions as a model: `files:DIR` answers from the files in DIR.

For scoring another model's published outputs through the same pipeline as a live model
(`autotriton tritonize REF.py --model files:DIR`), and for measuring the pipeline's own
cost with generation taken out. Sample i of a chat is file i (in name order, cycling);
a `.py` file is a bare kernel and is sent fenced, as a model would write it; any other
file (.txt, .md) is a whole completion, reasoning and all.
"""

from __future__ import annotations

from pathlib import Path

from ..generator import (
    Cancel,
    Chat,
    Completion,
    Event,
    EventSink,
    GenerationError,
    GenerationParams,
)

SUFFIXES = (".py", ".txt", ".md")


class ReplayGenerator:
    """Answers every chat with the files of a folder, in name order."""

    def __init__(self, folder: str, name: str = "") -> None:
        self.folder = Path(folder)
        self.name = name or f"files:{folder}"
        if not self.folder.is_dir():
            raise GenerationError(f"files:{folder}: there is no folder {self.folder}.")
        self.files = sorted(p for p in self.folder.iterdir() if p.suffix in SUFFIXES)
        if not self.files:
            raise GenerationError(
                f"files:{folder}: the folder has no {', '.join(SUFFIXES)} files to replay."
            )

    def text(self, i: int) -> str:
        p = self.files[i % len(self.files)]
        body = p.read_text()
        return f"```python\n{body}```\n" if p.suffix == ".py" else body

    def generate(
        self,
        chats: list[Chat],
        n: int,
        params: GenerationParams,
        on_event: EventSink | None = None,
        cancel: Cancel | None = None,
    ) -> list[Completion]:
        emit = on_event or (lambda _e: None)
        out = []
        for ci in range(len(chats)):
            for i in range(n):
                if cancel and cancel.cancelled:
                    return out
                text = self.text(i)
                tokens = len(text.split())
                emit(Event("done", chat=ci, sample=i, tokens=tokens, message="stop", text=text))
                out.append(Completion(text, tokens, "stop", 0.0, chat=ci, sample=i))
        return out
