"""LoRA fine-tuning on the kernels a user accepted (rejection-sampling fine-tuning), and
the kept adapters it makes.

Examples come from the library (dataset.py); loss is on the target tokens only. Training
checkpoints at every epoch and can be interrupted and resumed. Finished adapters live in
the data directory with what they were trained from, and the transformers backend uses
the newest one made for the loaded base model. FinetuneOptions ([finetune] in the config
file) hold the settings of both methods; GRPO (grpo.py) keeps its adapter with
keep_adapter too.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..model.adapters import AdapterInfo, adapters_dir, base_fingerprint, save_adapter
from ..model.generator import Cancel, Chat, GenerationError
from .dataset import Example, dataset_from_library, dataset_hash, split


@dataclass
class FinetuneOptions:
    """LoRA settings ([finetune] in the config file)."""

    rank: int = 16
    alpha: int = 32
    epochs: int = 3
    lr: float = 2e-4
    held_out: float = 0.2
    seed: int = 0
    max_length: int = 12288
    method: str = "sft"  # sft: on the accepted answers; grpo: the verifier as the reward
    generations: int = 4  # grpo: answers per task and step
    steps: int = 0  # grpo: training steps (0: epochs x tasks)
    max_completion_tokens: int = 4096  # grpo: answer length


def encode(tokenizer: Any, chat: Chat, target: str, max_length: int) -> tuple[list[int], list[int]]:
    """input ids and labels: the chat, tokenized as generation tokenizes it, is masked out
    (-100); the answer after it is learned."""
    from ..model.backends.hf import chat_prompt_ids

    p = chat_prompt_ids(tokenizer, chat)
    t = tokenizer(target, add_special_tokens=False)["input_ids"]
    eos = tokenizer.eos_token_id
    t = t + ([eos] if eos is not None else [])
    ids = (p + t)[:max_length]
    labels = ([-100] * len(p) + t)[:max_length]
    return ids, labels


def train_lora(
    model: Any,
    tokenizer: Any,
    train: list[Example],
    out_dir: str | Path,
    options: FinetuneOptions,
    *,
    resume: bool = False,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    cancel: Cancel | None = None,
    encoded: list[tuple[list[int], list[int]]] | None = None,
) -> dict[str, Any]:
    """Train a LoRA adapter on `train`; checkpoints each epoch in out_dir/checkpoint.

    `encoded` (ids, labels) pairs replace `train` when given (the speed benchmark uses
    token ids directly, having no tokenizer for random weights)."""
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model

    emit = on_progress or (lambda _d: None)
    out = Path(out_dir)
    ckpt = out / "checkpoint"
    state = {"epoch": 0, "step": 0, "losses": []}
    device = next(model.parameters()).device
    if resume and (ckpt / "state.json").exists():
        model = PeftModel.from_pretrained(model, ckpt, is_trainable=True)
        state = json.loads((ckpt / "state.json").read_text())
    else:
        config = LoraConfig(
            r=options.rank,
            lora_alpha=options.alpha,
            lora_dropout=0.0,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(model, config)
    if device.type == "cuda":
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=options.lr)
    if resume and (ckpt / "optimizer.pt").exists():
        opt.load_state_dict(torch.load(ckpt / "optimizer.pt", weights_only=True))
    data = encoded or [encode(tokenizer, e.chat, e.target, options.max_length) for e in train]
    total = options.epochs * len(data)
    t0 = time.perf_counter()
    tokens = 0
    interrupted = False
    for epoch in range(state["epoch"], options.epochs):
        order = list(range(len(data)))
        random.Random(options.seed + epoch).shuffle(order)
        for i in order:
            ids, labels = data[i]
            x = torch.tensor([ids], device=device)
            y = torch.tensor([labels], device=device)
            loss = model(input_ids=x, labels=y).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            state["step"] += 1
            tokens += len(ids)
            state["losses"].append(loss.item())
            dt = time.perf_counter() - t0
            emit(
                {
                    "epoch": epoch + 1,
                    "epochs": options.epochs,
                    "step": state["step"],
                    "steps": total,
                    "loss": state["losses"][-1],
                    "tokens_per_s": tokens / dt if dt else 0.0,
                }
            )
            if cancel and cancel.cancelled:
                interrupted = True
                break
        if interrupted:
            break
        state["epoch"] = epoch + 1
        _checkpoint(model, opt, ckpt, state)
    model.eval()
    return {
        "model": model,
        "interrupted": interrupted,
        "state": state,
        "seconds": time.perf_counter() - t0,
        "tokens": tokens,
    }


def _checkpoint(model: Any, opt: Any, ckpt: Path, state: dict[str, Any]) -> None:
    import torch

    tmp = ckpt.with_name("checkpoint.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    torch.save(opt.state_dict(), tmp / "optimizer.pt")
    (tmp / "state.json").write_text(json.dumps(state))
    shutil.rmtree(ckpt, ignore_errors=True)
    tmp.replace(ckpt)  # a kill mid-save leaves the previous checkpoint whole


def run_finetune(
    base: str,
    name: str,
    options: FinetuneOptions,
    *,
    library: str | None = None,
    resume: bool = False,
    model_options: Any = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    cancel: Cancel | None = None,
) -> dict[str, Any]:
    """Dataset from the library -> LoRA training -> a kept adapter the next generation uses."""
    from ..model.backends.hf import HFGenerator
    from ..model.registry import ModelOptions

    mo = model_options or ModelOptions()
    spec = trainable_base(base, name, mo)
    examples = dataset_from_library(library)
    train, held = split(examples, options.held_out, options.seed)
    fresh = HFGenerator(
        spec.path,
        gguf_file=spec.gguf_file or None,
        device=mo.device,
        static_cache=False,
        name=spec.name,
    )  # a private copy: training changes it
    run_dir = adapters_dir() / ".runs" / name
    r = train_lora(
        fresh.model,
        fresh.tokenizer,
        train,
        run_dir,
        options,
        resume=resume,
        on_progress=on_progress,
        cancel=cancel,
    )
    losses = r["state"]["losses"]
    result = {
        "name": name,
        "base": base,
        "examples": len(examples),
        "train": len(train),
        "held_out_tasks": [{"name": e.name, "source": e.task_source} for e in held],
        "held_out": len(held),
        "steps": r["state"]["step"],
        "seconds": r["seconds"],
        "tokens_per_s": r["tokens"] / r["seconds"] if r["seconds"] else 0.0,
        "first_loss": losses[0] if losses else None,
        "final_loss": losses[-1] if losses else None,
        "interrupted": r["interrupted"],
        "checkpoint": str(run_dir / "checkpoint"),
    }
    if r["interrupted"]:
        return result
    metrics = {
        k: result[k] for k in ("first_loss", "final_loss", "steps", "tokens_per_s", "seconds")
    }
    result["adapter"] = str(
        keep_adapter(r["model"], name, base, spec, examples, len(held), options, metrics, run_dir)
    )
    return result


def trainable_base(base: str, name: str, model_options: Any) -> Any:
    """The ModelSpec of `base`, if transformers can train it here and `name` is usable."""
    from ..model.registry import resolve

    spec = resolve(base, model_options)
    if spec.backend != "hf" or not spec.available:
        raise GenerationError(
            f"Fine-tuning needs a transformers model available here; {base!r} is "
            f"{spec.backend}{'' if spec.available else ' and needs ' + spec.needs}. "
            "Use tiny-hf, autotriton (from the HF cache) or an HF folder."
        )
    if not name.replace("-", "_").isidentifier():
        raise GenerationError(
            f"{name!r} is not a usable adapter name; use letters, digits, _ and -."
        )
    return spec


def keep_adapter(
    model: Any,
    name: str,
    base: str,
    spec: Any,
    examples: list[Example],
    held_out: int,
    options: Any,
    metrics: dict[str, Any],
    run_dir: Path,
) -> Path:
    """Save a trained adapter in the registry, drop its run folder, and make the next
    generation load the base again with it."""
    from ..model import registry

    info = AdapterInfo(
        name,
        base,
        base_fingerprint(spec.path, spec.gguf_file or None),
        dataset_hash(examples),
        len(examples) - held_out,
        held_out,
        asdict(options),
        metrics=metrics,
    )
    path = save_adapter(model, info)
    shutil.rmtree(run_dir, ignore_errors=True)
    registry.forget_loaded()
    return path
