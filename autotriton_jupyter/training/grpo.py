"""`autotriton finetune --method grpo`: reinforcement learning on the user's own tasks,
with the strict verifier as the reward (TRL's GRPOTrainer, a LoRA adapter).

For each task the model writes `generations` answers; each answer is scored by what the
verifier says of the code in it, and the answers of one task are compared among
themselves (group-relative advantages), so the model moves towards its better answers:

- a pass: 1, plus a speed bonus of up to 1 (log2 of the speedup against
  `torch.compile`, 1 at 2x; nothing when slower or not timed);
- a fail of correctness, a crash, a timeout or no code at all: 0 (an answer cut off at
  `--max-completion-tokens` before its code was complete is counted as truncated);
- a fail of an integrity check (a decoy kernel, a torch fallback, returning cached
  results, ... VERIFY.md): -1, so cheating is worse than being wrong.

This joins model/ (the weights, the prompt) and verify/ (the reward), so it lives in
training/, not in either room. The adapter is kept in the adapters registry like an
SFT one and used by the next generations the same way.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection
from typing import Any

from ..model.generator import Cancel, Chat, Completion, GenerationError
from ..pipeline import Attempt
from ..task import Candidate, Task
from ..verify import Report, Verifier, VerifyOptions
from ..verify.report import GAMING_CHECKS


def reward(report: Report | None) -> float:
    """The reward of one answer from the verifier's report (None: the answer had no code)."""
    if report is None:
        return 0.0
    if report.verdict == "pass":
        speedup = (report.timing or {}).get("speedup_vs_compile")
        return 1.0 + (min(1.0, max(0.0, math.log2(speedup))) if speedup else 0.0)
    if report.verdict == "conditional":
        return 0.0  # wrong off the task's inputs: not passed, not a cheat
    return -1.0 if {r["check"] for r in report.reasons} & GAMING_CHECKS else 0.0


class VerifierReward:
    """A TRL reward function: the verifier's judgement of each completion's code.

    `tally` counts how the answers fared: pass, fail, cheat, no code, and truncated (cut
    off at `max_tokens` before their code was complete)."""

    __name__ = "verifier"  # TRL names the logged reward after its function

    def __init__(
        self, verifier: Verifier, max_tokens: int = 0, end_tokens: Collection[int] = ()
    ) -> None:
        self.verifier = verifier
        self.max_tokens = max_tokens
        self.end_tokens = set(end_tokens)
        self.tally: Counter[str] = Counter()

    def finish_reason(self, ids: list[int] | None) -> str:
        """How an answer of these tokens ended, as a backend says it: "length" when it used
        all of max_tokens without an end token, else "stop"."""
        if ids is None or not self.max_tokens or len(ids) < self.max_tokens:
            return "stop"
        return "stop" if ids and ids[-1] in self.end_tokens else "length"

    def answer(
        self, i: int, prompt: Any, completion: Any, ids: list[int] | None
    ) -> Attempt:
        """One answer as the pipeline sees a completion: its code, or why there is none."""
        text = completion[-1]["content"] if isinstance(completion, list) else str(completion)
        chat: Chat = []
        if isinstance(prompt, list):
            chat = prompt
        elif isinstance(prompt, str):
            chat = [{"role": "user", "content": prompt}]
        done = Completion(text, len(ids or ()), self.finish_reason(ids), 0.0, sample=i)
        return Attempt.from_completion(done, chat, sample=i)

    def __call__(
        self,
        prompts: list,
        completions: list,
        task_source: list,
        completion_ids: list[list[int]] | None = None,
        **_: Any,
    ) -> list[float]:
        """Rewards for a batch; completions of one task are verified together (in parallel)."""
        rewards = [0.0] * len(completions)
        by_task: dict[str, list[tuple[int, Candidate]]] = {}
        for i, (prompt, completion, source) in enumerate(zip(prompts, completions, task_source)):
            a = self.answer(i, prompt, completion, completion_ids[i] if completion_ids else None)
            if a.code:
                by_task.setdefault(source, []).append((i, Candidate(a.code, f"sample-{i}")))
            else:
                self.tally["truncated" if a.finish_reason == "length" else "no code"] += 1
        for source, items in by_task.items():
            reports = self.verifier.verify_many(Task.from_source(source), [c for _, c in items])
            for (i, _), report in zip(items, reports):
                rewards[i] = reward(report)
                self.tally[
                    "pass" if rewards[i] >= 1 else "cheat" if rewards[i] < 0 else "fail"
                ] += 1
        return rewards


def _end_tokens(model: Any, tokenizer: Any) -> set[int]:
    """The tokens that end an answer: the model's own and its tokenizer's (TRL stops at either)."""
    ids = model.generation_config.eos_token_id
    ids = [] if ids is None else [ids] if isinstance(ids, int) else list(ids)
    return {i for i in (*ids, tokenizer.eos_token_id) if i is not None}


def _trainable(model: Any) -> Any:
    """The model as transformers' Trainer accepts it.

    A model read from a GGUF file carries a quantization config although its weights
    were dequantised to full precision on loading; Trainer refuses such a model."""
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model


def run_grpo(
    base: str,
    name: str,
    options: Any,
    *,
    library: str | None = None,
    resume: bool = False,
    model_options: Any = None,
    verify_options: VerifyOptions | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    cancel: Cancel | None = None,
) -> dict[str, Any]:
    """Tasks from the library -> GRPO with the verifier's reward -> a kept adapter."""
    try:
        from datasets import Dataset
        from peft import LoraConfig
        from transformers import TrainerCallback
        from transformers.trainer_callback import PrinterCallback, ProgressCallback
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as e:
        raise GenerationError(
            "GRPO needs TRL: pip install 'autotriton-jupyter[hf]' (it brings trl and datasets)."
        ) from e
    from ..model.adapters import adapters_dir
    from ..model.backends.hf import HFGenerator
    from ..model.registry import ModelOptions
    from .dataset import dataset_from_library, split
    from .sft import keep_adapter, trainable_base

    mo = model_options or ModelOptions()
    spec = trainable_base(base, name, mo)
    examples = dataset_from_library(library)
    train, held = split(examples, options.held_out, options.seed)
    # Each task as it was first asked (a repair round's chat also holds a failed answer).
    tasks = {e.task_source: e.chat[:1] for e in train if e.task_source}
    if not tasks:
        raise GenerationError(
            "GRPO needs the tasks of accepted kernels, and none in the library has its task's "
            "source; accept a kernel from %%autotriton or `autotriton tritonize` first."
        )
    data = Dataset.from_list([{"prompt": c, "task_source": s} for s, c in tasks.items()])
    loaded = HFGenerator(
        spec.path, gguf_file=spec.gguf_file or None, device=mo.device, static_cache=False
    )  # a private copy: training changes it
    run_dir = adapters_dir() / ".runs" / name
    steps = options.steps or max(1, options.epochs * len(tasks))
    config = GRPOConfig(
        output_dir=str(run_dir),
        num_generations=options.generations,
        per_device_train_batch_size=options.generations,
        max_completion_length=options.max_completion_tokens,
        max_steps=steps,
        learning_rate=options.lr,
        temperature=1.0,
        logging_steps=1,
        save_strategy="steps",
        save_steps=max(1, steps // 4),
        report_to=[],
        seed=options.seed,
        use_cpu=loaded.device == "cpu",
        bf16=loaded.device == "cuda",
        gradient_checkpointing=loaded.device == "cuda",
        disable_tqdm=True,
    )
    lora = LoraConfig(
        r=options.rank, lora_alpha=options.alpha, target_modules="all-linear", task_type="CAUSAL_LM"
    )
    interrupted = False

    class Progress(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if on_progress and logs and "reward" in logs:
                on_progress(
                    {
                        "step": state.global_step,
                        "steps": steps,
                        "reward": float(logs["reward"]),
                        "loss": float(logs.get("loss", 0.0)),
                        "tally": dict(scorer.tally),
                    }
                )

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            nonlocal interrupted
            if cancel is not None and cancel.cancelled:
                interrupted = True
                control.should_save = True  # keep the last step for --resume
                control.should_training_stop = True

    with Verifier(verify_options or VerifyOptions()) as verifier:
        scorer = VerifierReward(
            verifier,
            options.max_completion_tokens,
            _end_tokens(loaded.model, loaded.tokenizer),
        )
        trainer = GRPOTrainer(
            model=_trainable(loaded.model),
            processing_class=loaded.tokenizer,
            reward_funcs=[scorer],
            args=config,
            train_dataset=data,
            peft_config=lora,
            callbacks=[Progress()],
        )
        for noisy in (PrinterCallback, ProgressCallback):  # stdout is the command's JSON
            trainer.remove_callback(noisy)
        checkpoint = resume and any(run_dir.glob("checkpoint-*"))
        out = trainer.train(resume_from_checkpoint=True if checkpoint else None)
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    result = {
        "name": name,
        "base": base,
        "method": "grpo",
        "tasks": len(tasks),
        "examples": len(examples),
        "train": len(train),
        "held_out_tasks": [{"name": e.name, "source": e.task_source} for e in held],
        "held_out": len(held),
        "steps": trainer.state.global_step,
        "seconds": out.metrics.get("train_runtime", 0.0),
        "first_reward": rewards[0] if rewards else None,
        "final_reward": rewards[-1] if rewards else None,
        "answers": dict(scorer.tally),
        "interrupted": interrupted,
        "checkpoint": str(run_dir),
    }
    if interrupted:
        return result
    metrics = {
        k: result[k] for k in ("first_reward", "final_reward", "steps", "seconds", "answers")
    }
    result["adapter"] = str(
        keep_adapter(
            trainer.model, name, base, spec, examples, len(held), options, metrics, run_dir
        )
    )
    return result


def describe(d: dict[str, Any]) -> str:
    """One progress line: step, mean reward, how the answers fared so far."""
    tally = ", ".join(f"{k} {v}" for k, v in sorted(d["tally"].items()))
    return f"step {d['step']}/{d['steps']} reward {d['reward']:.3f} ({tally})"
