"""Code extraction from completions of every shape the model produces."""

from __future__ import annotations

from autotriton_jupyter.model.extract import extract

KERNEL = "import triton\n@triton.jit\ndef k(p):\n    pass\n"
MODEL = "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"


def fenced(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code}```\n"


def test_think_tags_then_code():
    e = extract(f"<think>Let me plan the tiling.</think>\nHere it is:\n{fenced(KERNEL + MODEL)}")
    assert e.code == (KERNEL + MODEL).strip() + "\n"
    assert "plan the tiling" in e.reasoning and e.problem is None


def test_untagged_reasoning_and_prose_around_code():
    text = f"First, I reason step by step.\n\n{fenced(KERNEL + MODEL)}\nThis should be fast."
    e = extract(text)
    assert e.code.startswith("import triton") and "class ModelNew" in e.code
    assert "step by step" in e.reasoning and "should be fast" in e.reasoning


def test_last_block_defining_model_new_wins():
    old = MODEL.replace("return x", "return x * 0")
    e = extract(fenced(KERNEL + old) + "Wait, fix:\n" + fenced(KERNEL + MODEL))
    assert "x * 0" not in e.code and "return x" in e.code


def test_kernels_in_an_earlier_block_are_kept():
    e = extract(fenced(KERNEL) + "Now the module:\n" + fenced(MODEL))
    assert e.code.index("@triton.jit") < e.code.index("class ModelNew")


def test_non_python_blocks_are_ignored():
    e = extract(fenced("pip install triton\n", "bash") + fenced(KERNEL + MODEL, "py"))
    assert "pip install" not in e.code


def test_tilde_fences_and_bare_code():
    assert "ModelNew" in extract(f"~~~python\n{KERNEL + MODEL}~~~\n").code
    assert "ModelNew" in extract(KERNEL + MODEL).code


def test_no_code():
    e = extract("I cannot write this kernel.")
    assert e.code is None and "no code block" in e.problem


def test_no_model_new_returns_the_last_block_with_a_problem():
    e = extract(fenced(KERNEL))
    assert e.code and "ModelNew" in e.problem


def test_truncated_inside_code_block():
    e = extract("<think>ok</think>\n```python\n" + KERNEL + "class ModelNew(nn.Mod", "length")
    assert e.code is None and e.truncated and "cut off inside its code block" in e.problem


def test_truncated_while_thinking():
    e = extract("<think>Let me think about block sizes and", "length")
    assert e.code is None and e.truncated and "still reasoning" in e.problem


def test_unclosed_block_at_a_natural_stop_is_still_used():
    e = extract("```python\n" + KERNEL + MODEL, "stop")
    assert e.code and not e.truncated
