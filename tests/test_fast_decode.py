"""The fused Llama decoder gives transformers' own results; its Triton attention kernel
(run in Triton's interpreter here) matches plain attention over the live cache slots."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from autotriton_jupyter.bench.random_weights import TINY_SHAPE, random_llama
from autotriton_jupyter.model.backends.hf import HFGenerator
from autotriton_jupyter.model.fast_decode import LlamaDecoder, unsupported
from autotriton_jupyter.model.generator import GenerationParams


@pytest.fixture()
def model():
    torch.manual_seed(0)
    return random_llama(TINY_SHAPE, "cpu")


def test_prefill_logits_equal_transformers_and_fusing_keeps_the_model_intact(model):
    prompt = torch.randint(3, TINY_SHAPE["vocab_size"], (2, 24))
    with torch.inference_mode():
        before = model(input_ids=prompt).logits[:, -1]
        decoder = LlamaDecoder(model)
        decoder._ensure_cache(2, 24)
        fused = decoder.forward(prompt, torch.arange(24))
        after = model(input_ids=prompt).logits[:, -1]
    assert torch.allclose(fused, before, atol=1e-5, rtol=1e-5)
    assert torch.equal(after, before)  # transformers' forward still works on the views
    qkv = decoder.layers[0]["qkv"]
    assert model.model.layers[0].self_attn.k_proj.weight.data_ptr() != qkv.data_ptr()
    assert model.model.layers[0].self_attn.q_proj.weight.data_ptr() == qkv.data_ptr()


def test_greedy_tokens_equal_transformers_plain_decoding(model):
    prompt = torch.randint(3, TINY_SHAPE["vocab_size"], (3, 17))
    params = GenerationParams(max_tokens=25, temperature=0.0)
    plain = HFGenerator("r", model=model, tokenizer=None, device="cpu", static_cache=False)
    with torch.inference_mode():
        expected = [t.tolist() for t in plain._token_steps(prompt, 25, params)]
        decoder = LlamaDecoder(model)
        got = [t.tolist() for t in decoder.steps(prompt, 25, 0.0, 1.0)]
        # a second answer reuses the cache (stale slots from the first must not leak in)
        again = [t.tolist() for t in decoder.steps(prompt, 25, 0.0, 1.0)]
    assert got == expected and again == expected
    assert decoder.cache[0][0].shape[2] == 1024  # rounded up to the bucket


def test_models_it_cannot_run_are_named_with_the_reason():
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64))
    assert unsupported(gpt2) == "not a Llama-architecture model"
    with pytest.raises(ValueError, match="cannot run this model"):
        LlamaDecoder(gpt2)
    biased = random_llama({**TINY_SHAPE, "attention_bias": True}, "cpu")
    assert unsupported(biased) == "projection biases"


def test_decode_attention_kernel_in_the_triton_interpreter():
    script = textwrap.dedent(
        """
        import torch
        from autotriton_jupyter.model.decode_attention import decode_attention, reference_attention
        torch.manual_seed(0)
        worst = 0.0
        # (the interpreter's bf16 tl.dot is wrong, so bf16 is checked on the GPU only)
        for kind, dtype in [("vec", torch.float32), ("dot", torch.float32), ("dot", torch.float16)]:
            for b, h, kv, length, d, pos in [(2, 8, 2, 600, 32, 0), (2, 8, 2, 600, 32, 255),
                                             (2, 8, 2, 600, 32, 256), (1, 4, 4, 300, 16, 299),
                                             (3, 8, 2, 1024, 32, 700)]:
                q = torch.randn(b, h, d, dtype=dtype); k = torch.randn(b, kv, length, d, dtype=dtype)
                v = torch.randn(b, kv, length, d, dtype=dtype)
                # garbage past pos must not matter
                k[:, :, pos + 1:] = 1e4; v[:, :, pos + 1:] = float('nan')
                got = decode_attention(q, k, v, torch.tensor([pos]), d ** -0.5, 64, 32, 4, kind)
                want = reference_attention(q, k, v, pos, d ** -0.5)
                err = (got.float() - want.float()).abs().max().item()
                worst = max(worst, err / (1e-5 if dtype == torch.float32 else 2e-3))
        print(worst)
        """
    )
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert float(out.stdout.strip().splitlines()[-1]) < 1.0  # errors relative to each tolerance


def test_rows_sharing_a_prompt_are_prefilled_once_and_decode_as_plain_decoding(model):
    """n samples of one prompt: one prefill row copied into the cache gives the same tokens."""
    prompt = torch.randint(3, TINY_SHAPE["vocab_size"], (1, 19)).repeat(3, 1)
    params = GenerationParams(max_tokens=20, temperature=0.0)
    plain = HFGenerator("r", model=model, tokenizer=None, device="cpu", static_cache=False)
    with torch.inference_mode():
        expected = [t.tolist() for t in plain._token_steps(prompt, 20, params)]
        decoder = LlamaDecoder(model)
        calls = []
        forward = decoder.forward
        decoder.forward = lambda ids, pos: calls.append(ids.shape) or forward(ids, pos)
        got = list(decoder.steps(prompt, 20, 0.0, 1.0))  # kept tensors must stay valid
        sampled = torch.stack(list(decoder.steps(prompt, 20, 1.0, 1.0)), dim=1)
    assert [t.tolist() for t in got] == expected
    assert calls[0] == (1, 19)  # the prefill ran on one row
    assert len({tuple(r) for r in sampled.tolist()}) > 1  # rows still sample apart


def test_a_longer_cache_is_kept_where_attention_reads_only_the_filled_slots(model):
    """Its compiled step is specialised on the cache's length: a shorter answer after a
    longer one keeps the longer cache (no new compile) with the Triton attention, and
    gets a cache of its own size with the plain attention (which reads every slot)."""
    decoder = LlamaDecoder(model)
    decoder.max_len = 1 << 20  # the tiny shape's 2048 positions would cap the lengths
    decoder._ensure_cache(1, 3000)
    assert decoder.cache[0][0].shape[2] == 3072
    decoder._ensure_cache(1, 500)
    assert decoder.cache[0][0].shape[2] == 1024  # plain attention: as long as needed
    decoder.triton_attention = True  # what a CUDA device with the kernel has
    decoder._ensure_cache(1, 3000)
    decoder._ensure_cache(1, 500)
    assert decoder.cache[0][0].shape[2] == 3072  # kept
    decoder._ensure_cache(1, 5000)
    assert decoder.cache[0][0].shape[2] == 5120  # longer when needed
    decoder._ensure_cache(2, 500)
    assert decoder.cache[0][0].shape[:3] == (2, decoder.kv_heads, 1024)  # another batch: its own


def test_fewer_rows_decode_in_a_step_compiled_for_more_padded_with_the_first(model):
    """A step compiled for 4 rows (marked so here: compiling takes long on a CPU) serves an
    answer of 2: the same tokens as 2 rows decoded alone, with no new step made."""
    prompt = torch.randint(3, TINY_SHAPE["vocab_size"], (2, 17))
    with torch.inference_mode():
        alone = [t.tolist() for t in LlamaDecoder(model).steps(prompt, 12, 0.0, 1.0)]
        decoder = LlamaDecoder(model)
        list(decoder.steps(torch.randint(3, TINY_SHAPE["vocab_size"], (4, 30)), 12, 0.0, 1.0))
        # As on a GPU, where steps are compiled, and this one was (the step made above stays
        # eager: compiling it would take long on a CPU).
        decoder.compile_step = True
        decoder._compiled.add((4, decoder.cache[0][0].shape[2], 0.0, 1.0))
        padded = [t.tolist() for t in decoder.steps(prompt, 12, 0.0, 1.0)]
    assert padded == alone
    assert decoder.cache[0][0].shape[0] == 4  # decoded in the 4-row cache
