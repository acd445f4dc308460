"""`autotriton bench finetune`: LoRA training speed and peak memory of `train_lora`.

The model is a random-weight one (AutoTriton's shape by default, or the tiny one), as for
`bench generate`: speed does not depend on weight values.
"""

from __future__ import annotations

import time
from typing import Any

from .random_weights import AUTOTRITON_SHAPE, TINY_SHAPE, random_llama


def bench_finetune(
    shape: str = "autotriton",
    examples: int = 8,
    seq_tokens: int = 2048,
    prompt_tokens: int = 1024,
    rank: int = 16,
    device: str = "auto",
    on_event: Any = None,
) -> dict[str, Any]:
    """LoRA training speed and peak memory of `train_lora` on a random-weight model.

    One epoch over `examples` sequences of `seq_tokens` tokens whose first
    `prompt_tokens` are masked out of the loss, as a prompt is in real training. The
    first step (allocations, kernel selection) is reported apart.
    """
    import tempfile

    import torch

    from ..training.sft import FinetuneOptions, train_lora

    emit = on_event or (lambda _m: None)
    dev = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    t0 = time.perf_counter()
    model = random_llama(AUTOTRITON_SHAPE if shape == "autotriton" else TINY_SHAPE, dev)
    build_s = time.perf_counter() - t0
    vocab = model.config.vocab_size
    g = torch.Generator().manual_seed(0)
    prompt_tokens = min(prompt_tokens, seq_tokens // 2)
    data = []
    for _ in range(examples):
        ids = torch.randint(3, vocab, (seq_tokens,), generator=g).tolist()
        data.append((ids, [-100] * prompt_tokens + ids[prompt_tokens:]))
    stamps: list[tuple[float, float]] = []

    def progress(d: dict[str, Any]) -> None:
        if dev == "cuda":
            torch.cuda.synchronize()
        stamps.append((time.perf_counter(), d["loss"]))
        emit(f"step {d['step']}/{d['steps']}: loss {d['loss']:.3f}")

    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    options = FinetuneOptions(rank=rank, epochs=1, max_length=seq_tokens)
    with tempfile.TemporaryDirectory() as tmp:
        s0 = time.perf_counter()
        r = train_lora(model, None, [], tmp, options, on_progress=progress, encoded=data)
        total = time.perf_counter() - s0
    steady = stamps[-1][0] - stamps[0][0] if len(stamps) > 1 else 0.0
    result: dict[str, Any] = {
        "shape": shape,
        "device": dev,
        "build_s": build_s,
        "examples": examples,
        "seq_tokens": seq_tokens,
        "rank": rank,
        "first_step_s": stamps[0][0] - s0 if stamps else None,
        "tokens_per_s": (len(stamps) - 1) * seq_tokens / steady if steady else None,
        "seconds": total,
        "tokens": r["tokens"],
        "trainable_params": sum(p.numel() for p in r["model"].parameters() if p.requires_grad),
        "losses": [loss for _, loss in stamps],
    }
    if dev == "cuda":
        result["gpu"] = torch.cuda.get_device_name()
        result["peak_memory_gb"] = torch.cuda.max_memory_allocated() / 2**30
    head = f"LoRA training, {shape} shape, random weights, {dev}" + (
        f" ({result['gpu']})" if dev == "cuda" else ""
    )
    lines = [
        f"{head}: rank {rank}, all linear layers, {examples} x {seq_tokens} tokens "
        f"({prompt_tokens} masked), one epoch",
        f"  first step {result['first_step_s']:.1f} s; then "
        + (f"{result['tokens_per_s']:.0f} tokens/s" if result["tokens_per_s"] else "n/a"),
    ]
    if dev == "cuda":
        lines.append(f"  peak GPU memory {result['peak_memory_gb']:.1f} GiB")
    result["text"] = "\n".join(lines)
    return result
