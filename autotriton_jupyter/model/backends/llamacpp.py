"""llama.cpp through llama-cpp-python: GGUF files, all layers on the GPU when there is one.

The chat template comes from the GGUF's own metadata (llama-cpp-python applies it).
Samples are drawn one after another; cancelling stops the stream after the current
token and leaves the model loaded and usable.
"""

from __future__ import annotations

import atexit
import contextlib
import random
import struct
import time
import weakref
from pathlib import Path
from typing import Any, BinaryIO

from ..generator import (
    Cancel,
    Chat,
    Completion,
    Event,
    EventSink,
    GenerationError,
    GenerationParams,
    TokenStream,
)
from ..prompts import fold_system


def check_gguf(path: str | Path) -> Path:
    """The path, if it is a readable GGUF file; otherwise a GenerationError saying why."""
    p = Path(path)
    if not p.is_file():
        raise GenerationError(f"The GGUF file {p} does not exist.")
    with p.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise GenerationError(
            f"{p} is not a GGUF file (it does not start with the GGUF magic); "
            "convert the model with llama.cpp's convert_hf_to_gguf.py."
        )
    return p


# GGUF metadata value types -> struct formats (fixed-size ones); 8 is a string, 9 an array.
_SCALARS = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}


def _take(f: BinaryIO, n: int) -> bytes:
    """n bytes of the header; a length no real header has means the file is damaged."""
    if n > 1 << 26:
        raise ValueError(f"a GGUF header field of {n} bytes")
    return f.read(n)


def _read_value(f: BinaryIO, kind: int) -> Any:
    if kind in _SCALARS:
        fmt = "<" + _SCALARS[kind]
        return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
    if kind == 8:
        (n,) = struct.unpack("<Q", f.read(8))
        return _take(f, n).decode("utf-8", "replace")
    if kind == 9:
        item, count = struct.unpack("<IQ", f.read(12))
        if item in _SCALARS:  # skipped without decoding: only scalars and strings are asked for
            f.seek(count * struct.calcsize(_SCALARS[item]), 1)
        else:
            for _ in range(count):
                _read_value(f, item)
        return None
    raise ValueError(f"unknown GGUF value type {kind}")


def _close(ref: weakref.ref) -> None:
    llm = ref()
    if llm is not None:
        with contextlib.suppress(Exception):
            llm.close()


def context_length(path: str | Path) -> int | None:
    """The context length the GGUF model was trained with (`<arch>.context_length`), if stated.

    Read from the header alone, stopping at the key, so it costs milliseconds."""
    try:
        with Path(path).open("rb") as f:
            magic, _version, _tensors, n_kv = struct.unpack("<4sIQQ", f.read(24))
            arch = None
            for _ in range(n_kv if magic == b"GGUF" else 0):
                (n,) = struct.unpack("<Q", f.read(8))
                key = _take(f, n).decode("utf-8", "replace")
                (kind,) = struct.unpack("<I", f.read(4))
                value = _read_value(f, kind)
                if key == "general.architecture":
                    arch = value
                elif arch and key == f"{arch}.context_length":
                    return int(value)
    except (OSError, struct.error, ValueError):
        pass  # llama.cpp itself then says what is wrong with the file
    return None


class LlamaCppGenerator:
    """A GGUF model loaded in this process."""

    def __init__(
        self,
        path: str,
        *,
        n_ctx: int = 16384,
        n_gpu_layers: int = -1,
        on_event: EventSink | None = None,
        name: str = "",
        lora_path: str | None = None,
    ) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as e:
            raise GenerationError(
                "llama-cpp-python is not installed: pip install 'autotriton-jupyter[llamacpp]'."
            ) from e
        p = check_gguf(path)
        self.name = name or p.stem
        emit = on_event or (lambda _e: None)
        emit(Event("load", message=f"loading {p.name} with llama.cpp"))
        trained = context_length(p)
        if trained and n_ctx > trained:
            # Beyond it the model's answers degrade (and llama.cpp warns on stderr).
            emit(
                Event(
                    "load",
                    message=f"context {trained} tokens (the model's own; {n_ctx} asked for)",
                )
            )
            n_ctx = trained
        t0 = time.perf_counter()
        try:
            self.llm = Llama(
                model_path=str(p),
                n_ctx=n_ctx,
                n_gpu_layers=n_gpu_layers,
                lora_path=lora_path,
                verbose=False,
            )
        except (ValueError, RuntimeError) as e:
            if lora_path and "LoRA" in str(e):
                raise GenerationError(
                    f"llama.cpp could not apply the adapter {lora_path} to {p.name} ({e}); "
                    "it may be for another base model. Set adapter to none in settings "
                    "to run without it."
                ) from e
            raise GenerationError(
                f"llama.cpp could not load {p} ({e}); the file may be corrupt "
                "or of an architecture this llama.cpp build does not know."
            ) from e
        emit(Event("load", message=f"loaded {p.name} in {time.perf_counter() - t0:.1f} s"))
        # Closed before the interpreter tears its modules down: llama-cpp-python's own
        # __del__ then runs without them and prints a traceback at every exit.
        atexit.register(_close, weakref.ref(self.llm))

    def generate(
        self,
        chats: list[Chat],
        n: int,
        params: GenerationParams,
        on_event: EventSink | None = None,
        cancel: Cancel | None = None,
    ) -> list[Completion]:
        """Sample n completions per chat, streaming each token as an Event."""
        emit = on_event or (lambda _e: None)
        out: list[Completion] = []
        for ci, chat in enumerate(chats):
            for s in range(n):
                if cancel and cancel.cancelled:
                    return out
                seed = params.seed + s if params.seed is not None else random.randrange(2**31)
                out.append(self._one(fold_system(chat), params, seed, ci, s, emit, cancel))
        return out

    def _check_length(self, messages: Chat) -> None:
        text = "\n".join(m["content"] for m in messages)
        n_prompt = len(self.llm.tokenize(text.encode(), add_bos=False))
        n_ctx = self.llm.n_ctx()
        if n_prompt + 32 > n_ctx:  # 32: room for the chat template and one answer token
            raise GenerationError(
                f"The prompt is longer than the model's context (about {n_prompt} "
                f"tokens, context {n_ctx}); raise n_ctx in settings or shorten "
                "the task."
            )

    def _one(
        self,
        messages: Chat,
        params: GenerationParams,
        seed: int,
        ci: int,
        s: int,
        emit: EventSink,
        cancel: Cancel | None,
    ) -> Completion:
        self._check_length(messages)
        out = TokenStream(emit, ci, s)
        finish = "stop"
        try:
            stream = self.llm.create_chat_completion(
                messages=messages,
                max_tokens=params.max_tokens,
                temperature=params.temperature,
                top_p=params.top_p,
                seed=seed,
                stream=True,
            )
            for chunk in stream:
                choice = chunk["choices"][0]
                delta = choice.get("delta", {})
                if "content" in delta:  # one chunk per token (part of a character may be empty)
                    out.token(delta.get("content") or "")
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
                if cancel and cancel.cancelled:
                    finish = "cancelled"
                    stream.close()
                    break
        except ValueError as e:
            if "exceed context window" in str(e):
                raise GenerationError(
                    f"The prompt is longer than the model's context ({e}); "
                    "raise n_ctx in settings or shorten the task."
                ) from e
            raise
        return out.completion(finish)
