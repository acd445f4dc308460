"""Fine-tuning the tiny model on accepted kernels: it really learns, resumes, and adapters are checked."""

from __future__ import annotations

import json

import pytest

from autotriton_jupyter.cli import main
from autotriton_jupyter.model import registry
from autotriton_jupyter.model.adapters import (
    AdapterInfo,
    adapter_for,
    adapters_dir,
    likely_adapter,
    list_adapters,
)
from autotriton_jupyter.model.extract import extract
from autotriton_jupyter.model.generator import Cancel, GenerationError, GenerationParams
from autotriton_jupyter.model.prompts import task_chat
from autotriton_jupyter.model.registry import ModelOptions
from autotriton_jupyter.store import Store
from autotriton_jupyter.training.dataset import dataset_from_library
from autotriton_jupyter.training.sft import FinetuneOptions, run_finetune

TASK = (
    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return {op}\n"
    "def get_inputs():\n    return [torch.randn(8)]\ndef get_init_inputs():\n    return []\n"
)
CODE = (
    "import triton\n@triton.jit\ndef {k}_k(p, o, n, B: tl.constexpr):\n    i = tl.arange(0, B)\n"
    "    tl.store(o + i, {expr}, mask=i < n)\nclass ModelNew(torch.nn.Module):\n    pass\n"
)
PAIRS = {"double": ("x * 2", "tl.load(p + i) * 2"), "neg": ("-x", "-tl.load(p + i)")}
FAST = FinetuneOptions(epochs=12, lr=1e-3, rank=16, alpha=32)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTRITON_LIBRARY", str(tmp_path / "lib.sqlite"))
    monkeypatch.setenv("AUTOTRITON_ADAPTERS", str(tmp_path / "adapters"))
    registry.forget_loaded()
    yield tmp_path
    registry.forget_loaded()


def accept_pairs() -> dict[str, str]:
    codes = {}
    with Store() as s:
        for k, (op, expr) in PAIRS.items():
            src, code = TASK.format(op=op), CODE.format(k=k, expr=expr)
            t = s.add_task(k, src)
            cid = s.add_candidate(
                t,
                round=0,
                sample=0,
                model="tiny-hf",
                prompt=task_chat(src)[0]["content"],
                completion=f"```python\n{code}```",
                code=code,
                report=None,
            )
            s.accept(f"{k}_fast", t, code, candidate_id=cid)
            codes[k] = code
    return codes


@pytest.mark.timeout(1500)  # training, then greedy answers, on 2 cores: about 5 to 10 minutes
def test_the_loop_learns_the_accepted_kernels(home):
    codes = accept_pairs()
    res = run_finetune("tiny-hf", "mine", FAST)
    assert res["final_loss"] < res["first_loss"] / 10 and not res["interrupted"]
    gen = registry.load("tiny-hf", ModelOptions())
    assert gen.name == "tiny-hf+mine"  # the newest adapter for this base is used by default
    assert gen.adapter == "mine"  # what the library's adapter column gets
    for k, (op, _) in PAIRS.items():
        out = gen.generate(
            [task_chat(TASK.format(op=op))], 1, GenerationParams(max_tokens=120, temperature=0.0)
        )[0]
        assert extract(out.text, out.finish_reason).code == codes[k].strip() + "\n"
    info = list_adapters()[0]
    assert info.name == "mine" and info.examples == 2 and info.metrics["final_loss"] < 0.1
    plain = registry.load("tiny-hf", ModelOptions(adapter="none"))
    assert plain.name == "tiny-hf" and plain.adapter is None


def test_kernels_kept_without_their_chat_train_on_their_prompt(home):
    """Candidates stored before the chat was (prompt only) are one user turn, as they were."""
    codes = accept_pairs()  # add_candidate without chat=
    examples = dataset_from_library()
    assert [e.name for e in examples] == ["double_fast", "neg_fast"]
    for e, k in zip(examples, ("double", "neg")):
        assert e.chat == task_chat(TASK.format(op=PAIRS[k][0]))
        assert e.target == f"```python\n{codes[k]}```"


def test_interrupt_then_resume(home):
    accept_pairs()
    cancel = Cancel()

    def stop_at_5(d):
        if d["step"] >= 5:
            cancel.set()

    opts = FinetuneOptions(epochs=3, lr=1e-3)
    first = run_finetune("tiny-hf", "r", opts, on_progress=stop_at_5, cancel=cancel)
    assert first["interrupted"] and not list_adapters()
    state = json.loads((adapters_dir() / ".runs" / "r" / "checkpoint" / "state.json").read_text())
    assert state["epoch"] == 2 and state["step"] == 4  # epochs 1-2 were checkpointed
    done = run_finetune("tiny-hf", "r", opts, resume=True)
    assert not done["interrupted"] and done["steps"] == 6 and list_adapters()[0].name == "r"


def test_empty_library_and_wrong_base_are_clear(home, capsys):
    with pytest.raises(GenerationError, match="no accepted kernels to learn from"):
        run_finetune("tiny-hf", "x", FAST)
    assert main(["finetune", "-q"]) == 2
    assert "no accepted kernels" in capsys.readouterr().err
    other = adapters_dir() / "other"
    other.mkdir(parents=True)
    (other / "autotriton.json").write_text(
        json.dumps(AdapterInfo("other", "some-8b", "0000", "h", 1, 0, {}).__dict__)
    )
    with pytest.raises(GenerationError, match="trained on another base model"):
        adapter_for("ffff", "other")
    assert adapter_for("ffff") is None  # never picked by default for another base
    # The panel's hint, by name alone: none, the named one, the preferred one, the newest.
    assert likely_adapter("none") is None and likely_adapter("x") == "x"
    assert likely_adapter("") == "other"
    (adapters_dir() / "preferred").write_text("kept\n")
    assert likely_adapter("") == "kept"
    with pytest.raises(GenerationError, match="needs a transformers model"):
        run_finetune("tiny", "x", FAST)


def test_held_out_tasks_are_scored_before_and_after(home, capsys, monkeypatch):
    monkeypatch.setenv("AUTOTRITON_VERIFY_DEVICE", "cpu")
    monkeypatch.setenv("AUTOTRITON_VERIFY_TIMING", "false")
    ops = {"double": "x * 2", "neg": "-x", "half": "x * 0.5", "plus1": "x + 1", "sq": "x * x"}
    with Store() as s:
        for k, op in ops.items():
            src, code = TASK.format(op=op), CODE.format(k=k, expr="tl.load(p + i)")
            t = s.add_task(k, src)
            cid = s.add_candidate(
                t,
                round=0,
                sample=0,
                model="tiny-hf",
                prompt=task_chat(src)[0]["content"],
                completion=f"```python\n{code}```",
                code=code,
                report=None,
            )
            s.accept(f"{k}_fast", t, code, candidate_id=cid)
    assert main(["finetune", "--name", "ho", "--epochs", "1", "--max-tokens", "48", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["train"] == 4 and len(out["held_out_tasks"]) == 1
    scores = out["held_out_scores"]
    assert scores["before"]["tasks"] == scores["after"]["tasks"] == 1
    assert 0 <= scores["after"]["passed"] <= 1
