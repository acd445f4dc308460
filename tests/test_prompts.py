"""The model's own prompt format and chat handling."""

from __future__ import annotations

import ast

from autotriton_jupyter.model.prompts import (
    fold_system,
    kernelbench_prompt,
    rename_class,
    render_seed_coder,
    repair_chat,
    task_chat,
)

REF = "import torch\nclass MyNet(torch.nn.Module):\n    def forward(self, x):\n        return MyNet.f(x)  # MyNet stays in comments\n"


def test_kernelbench_prompt_matches_the_training_format():
    p = kernelbench_prompt("class Model: pass")
    assert p.startswith(
        "You are given a pytorch function, and your task is to write the same triton"
    )
    assert (
        "**Remember to Name your optimized output architecture ModelNew, do not use Model again!**"
        in p
    )
    assert p.endswith("```\nclass Model: pass\n```\n")


def test_user_class_is_renamed_to_model():
    out = rename_class(REF, "MyNet", "Model")
    tree = ast.parse(out)
    assert [n.name for n in tree.body if isinstance(n, ast.ClassDef)] == ["Model"]
    assert "return Model.f(x)" in out and "# MyNet stays in comments" in out
    chat = task_chat(REF, "MyNet")
    assert chat[0]["role"] == "user" and "class Model(" in chat[0]["content"]


def test_system_is_folded_into_the_user_turn():
    chat = fold_system(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    )
    assert chat == [{"role": "user", "content": "Be brief.\n\nHi"}]


def test_seed_coder_rendering():
    text = render_seed_coder([{"role": "user", "content": "Hi"}], "<s>", "</s>")
    assert text == "<s>user\nHi</s><s>assistant\n"


def test_repair_chat_carries_the_reasons():
    chat = repair_chat([{"role": "user", "content": "q"}], "answer", ["launches: none"])
    assert [m["role"] for m in chat] == ["user", "assistant", "user"]
    assert "- launches: none" in chat[-1]["content"]
