"""transformers: HF weights in bf16 on the GPU (fp32 on the CPU), N samples in one batch.

One decode loop of our own (`_token_steps`), not transformers' `generate`: a batch of
n copies of the prompt, one token per step for every row, sampled by
`sampling.sample_next`, each row's end reported as it comes (so it is verified while the
others still generate) and cancel checked between steps. The step itself is one of:
- `fast_decode.LlamaDecoder` (CUDA, Llama-architecture models such as AutoTriton): fused
  projections, attention over the filled cache only, the step compiled with CUDA graphs
  so a token costs one graph replay;
- transformers' StaticCache (CUDA, other models);
- the model's own dynamic cache (any device; the CPU in tests).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..generator import (
    Cancel,
    Chat,
    Completion,
    Event,
    EventSink,
    GenerationError,
    GenerationParams,
)
from ..prompts import fold_system, render_seed_coder
from ..sampling import sample_next


def chat_prompt_ids(tokenizer: Any, chat: Chat) -> list[int]:
    """The chat as the model sees it (its own template, or Seed-Coder's), ending with the
    assistant generation prompt; fine-tuning uses this same function."""
    messages = fold_system(chat)
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    else:
        text = render_seed_coder(messages, tokenizer.bos_token or "", tokenizer.eos_token or "")
    return tokenizer(text, add_special_tokens=False)["input_ids"]


class HFGenerator:
    """A Hugging Face causal LM loaded in this process (optionally with a peft adapter)."""

    def __init__(
        self,
        path: str,
        *,
        gguf_file: str | None = None,
        device: str = "auto",
        static_cache: bool = True,
        fused: bool = True,
        adapter: str | None = None,
        on_event: EventSink | None = None,
        name: str = "",
        model: Any = None,
        tokenizer: Any = None,
    ) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise GenerationError(
                "transformers is not installed: pip install 'autotriton-jupyter[hf]'."
            ) from e
        self.name = name or Path(path).name
        emit = on_event or (lambda _e: None)
        self.device = (
            ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        )
        dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        t0 = time.perf_counter()
        kw_loaded = model is None
        if model is None:
            emit(Event("load", message=f"loading {self.name} with transformers on {self.device}"))
            kw = {"gguf_file": gguf_file} if gguf_file else {}
            try:
                tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True, **kw)
                model = AutoModelForCausalLM.from_pretrained(
                    path, local_files_only=True, dtype=dtype, **kw
                )
            except (OSError, ValueError) as e:
                raise GenerationError(f"transformers could not load {path}: {e}") from e
            model = model.to(self.device)
        owned = kw_loaded
        if adapter:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, adapter)
        self.static_cache = static_cache and self.device == "cuda"
        if adapter and owned and self.static_cache and fused:
            model = model.merge_and_unload()  # our own copy: fold the adapter in for speed
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.decoder = None
        if self.static_cache and fused:
            from ..fast_decode import LlamaDecoder, unsupported

            why = unsupported(self.model)
            if why is None:
                self.decoder = LlamaDecoder(self.model)
            else:
                emit(Event("load", message=f"fast decoder off ({why}): transformers' static cache"))
        # transformers 5.2x renamed the cache argument of forward; take whichever this one has.
        import inspect

        params = inspect.signature(self.model.forward).parameters
        self.cache_kw = "cache" if "cache" in params else "past_key_values"
        self._steps: dict[tuple[float, float], Any] = {}
        emit(Event("load", message=f"loaded {self.name} in {time.perf_counter() - t0:.1f} s"))

    # prompt ------------------------------------------------------------------------
    def prompt_ids(self, chat: Chat) -> list[int]:
        """Token ids of the chat with the generation prompt, using the model's own template."""
        return chat_prompt_ids(self.tokenizer, chat)

    def _eos_ids(self) -> set[int]:
        ids = self.model.generation_config.eos_token_id
        if ids is None:
            ids = self.tokenizer.eos_token_id
        return set(ids if isinstance(ids, list) else [ids])

    # generation --------------------------------------------------------------------
    def generate(
        self,
        chats: list[Chat],
        n: int,
        params: GenerationParams,
        on_event: EventSink | None = None,
        cancel: Cancel | None = None,
    ) -> list[Completion]:
        """Sample n completions per chat, the n samples of a chat in one batch."""
        import torch

        emit = on_event or (lambda _e: None)
        out: list[Completion] = []
        for ci, chat in enumerate(chats):
            ids = self.prompt_ids(chat)
            limit = getattr(self.model.config, "max_position_embeddings", None)
            if limit and len(ids) + 1 > limit:
                raise GenerationError(
                    f"The prompt has {len(ids)} tokens; the model's context is "
                    f"{limit}. Shorten the task."
                )
            if params.seed is not None:
                torch.manual_seed(params.seed + ci)
            max_new = params.max_tokens if not limit else min(params.max_tokens, limit - len(ids))
            rows = self._decode(ids, n, max_new, params, ci, emit, cancel)
            out.extend(rows)
            if cancel and cancel.cancelled:
                break
        return out

    def _decode(
        self,
        ids: list[int],
        n: int,
        max_new: int,
        params: GenerationParams,
        ci: int,
        emit: EventSink,
        cancel: Cancel | None,
    ) -> list[Completion]:
        import torch

        eos = self._eos_ids()
        if self.decoder is not None:  # a first compile for this batch size says so
            self.decoder.on_compile = lambda message: emit(Event("load", chat=ci, message=message))
        prompt = torch.tensor([ids] * n, device=self.device)
        tokens: list[list[int]] = [[] for _ in range(n)]
        done = [False] * n
        t0 = time.perf_counter()
        cancelled = False
        texts: dict[int, str] = {}

        def finished(i: int, finish: str) -> None:
            texts[i] = self.tokenizer.decode(tokens[i], skip_special_tokens=True)
            dt = time.perf_counter() - t0
            emit(
                Event(
                    "done",
                    chat=ci,
                    sample=i,
                    tokens=len(tokens[i]),
                    message=finish,
                    tokens_per_s=len(tokens[i]) / dt if dt else 0.0,
                    text=texts[i],
                )
            )

        with torch.inference_mode():
            for step_tokens in self._token_steps(prompt, max_new, params):
                row = step_tokens.tolist()
                for i, t in enumerate(row):
                    if done[i]:
                        continue
                    if t in eos:
                        done[i] = True
                        finished(i, "stop")  # judged while the others still generate
                        continue
                    tokens[i].append(t)
                total = sum(len(t) for t in tokens)
                dt = time.perf_counter() - t0
                # One event for the whole batch: sample -1 means "all samples of this chat".
                emit(
                    Event(
                        "token",
                        chat=ci,
                        sample=-1,
                        tokens=total,
                        tokens_per_s=total / dt if dt else 0.0,
                    )
                )
                if all(done):
                    break
                if cancel and cancel.cancelled:
                    cancelled = True
                    break
        seconds = time.perf_counter() - t0
        out = []
        for i in range(n):
            finish = "stop" if done[i] else ("cancelled" if cancelled else "length")
            if not done[i]:
                finished(i, finish)
            out.append(
                Completion(
                    texts[i], len(tokens[i]), finish, seconds, chat=ci, sample=i,
                    prompt_tokens=len(ids),
                )
            )
        return out

    def _token_steps(self, prompt: Any, max_new: int, params: GenerationParams):
        """Yield the next token of every row, one step at a time."""
        if self.decoder is not None:
            yield from self.decoder.steps(prompt, max_new, params.temperature, params.top_p)
            return
        if self.static_cache:
            yield from self._static_steps(prompt, max_new, params)
            return
        past = None
        ids = prompt
        for _ in range(max_new):
            out = self.model(input_ids=ids, use_cache=True, **{self.cache_kw: past})
            past = getattr(out, "past_key_values", None) or getattr(out, "cache", None)
            nxt = sample_next(out.logits[:, -1, :], params.temperature, params.top_p)
            yield nxt
            ids = nxt[:, None]

    def _static_steps(self, prompt: Any, max_new: int, params: GenerationParams):
        import torch
        from transformers import StaticCache

        b, p = prompt.shape
        cache = StaticCache(config=self.model.config, max_cache_len=p + max_new)
        pos = torch.arange(p, device=self.device)
        logits = self.model(
            input_ids=prompt,
            cache_position=pos,
            use_cache=True,
            logits_to_keep=1,
            **{self.cache_kw: cache},
        ).logits[:, -1, :]
        nxt = sample_next(logits, params.temperature, params.top_p)
        step = self._compiled_step(params.temperature, params.top_p)
        position = torch.tensor([p], device=self.device)
        for i in range(max_new):
            yield nxt
            position.fill_(p + i)
            nxt = step(nxt[:, None], cache, position).clone()

    def _compiled_step(self, temperature: float, top_p: float) -> Any:
        """One decode step (model + sampling), compiled once per sampling setting."""
        import torch

        key = (temperature, top_p)
        if key not in self._steps:
            model, kw = self.model, self.cache_kw

            def step(ids, cache, position):
                logits = model(
                    input_ids=ids, cache_position=position, use_cache=True, **{kw: cache}
                ).logits[:, -1, :]
                return sample_next(logits, temperature, top_p)

            self._steps[key] = torch.compile(step, mode="reduce-overhead", dynamic=False)
        return self._steps[key]
