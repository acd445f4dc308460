"""Any OpenAI-compatible chat endpoint (vLLM, llama-server, llama-cpp-python's server).

Streaming with server-sent events over the standard library's HTTP client. The n
samples are n requests, each with its own seed, sent `concurrency` at a time: 1 by
default, because llama-cpp-python's server interrupts a running stream when another
request arrives; raise it for servers that batch requests (vLLM, llama-server -np N).
"""

from __future__ import annotations

import json
import random
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

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


class OpenAIGenerator:
    """Chat completions from a server at base_url (e.g. http://127.0.0.1:8000/v1)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        name: str = "",
        timeout: float = 600.0,
        concurrency: int = 1,
    ) -> None:
        self.concurrency = max(1, concurrency)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.name = name or f"openai:{model}"
        self.timeout = timeout
        self._emit_lock = threading.Lock()

    def generate(
        self,
        chats: list[Chat],
        n: int,
        params: GenerationParams,
        on_event: EventSink | None = None,
        cancel: Cancel | None = None,
    ) -> list[Completion]:
        """n concurrent streamed requests per chat."""
        raw = on_event or (lambda _e: None)

        def emit(e: Event) -> None:
            with self._emit_lock:
                raw(e)

        jobs = [(ci, s) for ci in range(len(chats)) for s in range(n)]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, max(1, n))) as ex:
            futures = [
                ex.submit(self._one, fold_system(chats[ci]), params, ci, s, emit, cancel)
                for ci, s in jobs
            ]
            return [f.result() for f in futures]

    def _request(self, body: dict) -> urllib.request.Request:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return urllib.request.Request(
            f"{self.base_url}/chat/completions", data=json.dumps(body).encode(), headers=headers
        )

    def _one(
        self,
        messages: Chat,
        params: GenerationParams,
        ci: int,
        s: int,
        emit: EventSink,
        cancel: Cancel | None,
    ) -> Completion:
        seed = params.seed + s if params.seed is not None else random.randrange(2**31)
        body = {
            "model": self.model,
            "messages": messages,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "seed": seed,
            "stream": True,
        }
        out = TokenStream(emit, ci, s)
        finish = "stop"
        try:
            with urllib.request.urlopen(self._request(body), timeout=self.timeout) as resp:
                for raw_line in resp:
                    line = raw_line.decode("utf-8", "replace").strip()
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    choice = (json.loads(data).get("choices") or [{}])[0]
                    piece = (choice.get("delta") or {}).get("content") or ""
                    if piece:
                        out.token(piece)
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
                    if cancel and cancel.cancelled:
                        finish = "cancelled"
                        break
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")[:300]
            raise GenerationError(
                f"The server at {self.base_url} answered {e.code}: {detail}"
            ) from e
        except (urllib.error.URLError, OSError) as e:
            raise GenerationError(
                f"Cannot reach an OpenAI-compatible server at {self.base_url} "
                f"({getattr(e, 'reason', e)}); start it, or set base_url in "
                "settings (AUTOTRITON_MODEL_BASE_URL)."
            ) from e
        return out.completion(finish)
