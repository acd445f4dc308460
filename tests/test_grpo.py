"""GRPO with the verifier as the reward: known answers get the rewards they deserve from
the real verifier, and a short run on the tiny model trains and keeps an adapter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotriton_jupyter.cli import main
from autotriton_jupyter.model.adapters import list_adapters
from autotriton_jupyter.training.grpo import VerifierReward, reward
from autotriton_jupyter.verify import Report, Verifier, VerifyOptions

from .test_finetune import accept_pairs, home  # noqa: F401  (home is a fixture)

pytest.importorskip("trl", reason="needs trl (the hf extra)")

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_rewards_follow_the_verdict_and_punish_cheats():
    def report(verdict, checks=(), speedup=None):
        r = Report(verdict=verdict, timing={"speedup_vs_compile": speedup} if speedup else None)
        for c in checks:
            r.add(c, "fail", "x")
        return r

    assert reward(None) == 0.0  # no code in the answer
    assert reward(report("pass")) == 1.0  # not timed (CPU)
    assert reward(report("pass", speedup=1.5)) == pytest.approx(1.585, abs=1e-3)
    assert reward(report("pass", speedup=4.0)) == 2.0 and reward(report("pass", speedup=0.5)) == 1.0
    assert reward(report("fail", ["correctness"])) == 0.0
    assert reward(report("fail", ["runs"])) == 0.0
    assert reward(report("fail", ["correctness", "torch_ops"])) == -1.0


def test_the_real_verifier_scores_honest_wrong_cheating_and_empty_answers():
    folder = EXAMPLES / "candidates" / "add_relu"
    names = ["pass_masked", "fail_sub", "cheat01_decoy", "cheat02_partial"]
    answers = [
        [{"role": "assistant", "content": "```python\n" + (folder / f"{n}.py").read_text() + "```"}]
        for n in names
    ]
    answers.append([{"role": "assistant", "content": "I cannot write this kernel."}])
    source = (EXAMPLES / "tasks" / "add_relu.py").read_text()
    with Verifier(VerifyOptions(device="cpu", seed=0)) as v:
        scorer = VerifierReward(v)
        got = scorer(prompts=[None] * 5, completions=answers, task_source=[source] * 5)
    assert got == [1.0, 0.0, -1.0, -1.0, 0.0]
    assert scorer.tally == {"pass": 1, "fail": 1, "cheat": 2, "no code": 1}


class _NoVerifier:
    """A verifier no answer should reach."""

    def verify_many(self, task, candidates):
        raise AssertionError(f"{len(candidates)} answers were sent to the verifier")


def test_an_answer_cut_at_the_token_limit_is_reported_as_truncated():
    """As in the pipeline: the finish reason comes with the answer, and one cut off inside
    its code block is no candidate (its half block is not judged)."""
    chat = [{"role": "user", "content": "Write ModelNew."}]
    cut = [{"role": "assistant", "content": "Here:\n```python\nimport triton\n@triton.jit\ndef k("}]
    none = [{"role": "assistant", "content": "I cannot write this kernel."}]
    scorer = VerifierReward(_NoVerifier(), max_tokens=8, end_tokens={0})
    got = scorer(
        prompts=[chat] * 3,
        completions=[cut, none, none],
        task_source=["source"] * 3,
        completion_ids=[[5] * 8, [5, 5, 0], [5] * 7 + [0]],  # the last two ended by themselves
    )
    assert got == [0.0, 0.0, 0.0]
    assert scorer.tally == {"truncated": 1, "no code": 2}
    answer = scorer.answer(0, chat, cut, [5] * 8)
    assert answer.finish_reason == "length" and answer.code is None
    assert answer.problem == "The answer was cut off inside its code block; raise --max-tokens."
    assert answer.chat == chat and answer.tokens == 8
    assert scorer.answer(0, chat, cut, [5] * 7 + [0]).finish_reason == "stop"


def test_grpo_on_the_tiny_model_trains_and_keeps_an_adapter(home, capsys):  # noqa: F811
    accept_pairs()
    code = main(
        [
            "finetune",
            "--method",
            "grpo",
            "--base",
            "tiny-hf",
            "--name",
            "rl",
            "--steps",
            "2",
            "--generations",
            "2",
            "--max-completion-tokens",
            "24",
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    result = json.loads(out.out)
    assert result["method"] == "grpo" and result["steps"] == 2 and result["tasks"] == 2
    assert sum(result["answers"].values()) == 4  # 2 steps x 2 answers, each scored
    assert "mean reward" in out.err and "step 2/2" in out.err
    info = list_adapters()[0]
    assert info.name == "rl" and info.options["method"] == "grpo"
    assert (Path(info.path) / "adapter_model.safetensors").exists()
    assert main(["finetune", "--method", "grpo", "--base", "tiny", "-q"]) == 2  # not transformers


def test_grpo_interrupted_keeps_a_checkpoint_and_resumes(home):  # noqa: F811
    from autotriton_jupyter.model.generator import Cancel
    from autotriton_jupyter.training.grpo import run_grpo
    from autotriton_jupyter.training.sft import FinetuneOptions

    accept_pairs()
    options = FinetuneOptions(method="grpo", steps=3, generations=2, max_completion_tokens=16)
    cancel = Cancel()
    seen = []

    def progress(d):
        seen.append(d["step"])
        cancel.set()  # Ctrl-C after the first step: the step under way finishes, then it stops

    first = run_grpo("tiny-hf", "rl", options, on_progress=progress, cancel=cancel)
    assert first["interrupted"] and first["steps"] == 2 and not list_adapters()
    assert list(Path(first["checkpoint"]).glob("checkpoint-2"))
    done = run_grpo("tiny-hf", "rl", options, resume=True)
    assert not done["interrupted"] and done["steps"] == 3
    assert sum(done["answers"].values()) == 2  # only the remaining step ran
    assert list_adapters()[0].name == "rl"
