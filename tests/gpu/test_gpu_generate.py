"""On a GPU: the static-cache, CUDA-graph decode path gives the same greedy tokens as the plain one."""

from __future__ import annotations

import torch

from autotriton_jupyter.bench.random_weights import TINY_SHAPE, random_llama
from autotriton_jupyter.model.backends.hf import HFGenerator
from autotriton_jupyter.model.generator import GenerationParams

SHAPE = {
    **TINY_SHAPE,
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 32,
    "vocab_size": 4096,
}


def greedy(gen: HFGenerator, prompt: torch.Tensor, n: int) -> list[list[int]]:
    params = GenerationParams(max_tokens=n, temperature=0.0)
    with torch.inference_mode():
        return [t.tolist() for t in gen._token_steps(prompt, n, params)]


def test_fast_path_matches_plain_decoding():
    torch.manual_seed(0)
    model = random_llama(SHAPE, "cuda", dtype=torch.float32)
    prompt = torch.randint(3, SHAPE["vocab_size"], (2, 48), device="cuda")
    fast = HFGenerator("random", model=model, tokenizer=None, device="cuda", static_cache=True)
    plain = HFGenerator("random", model=model, tokenizer=None, device="cuda", static_cache=False)
    assert fast.static_cache and not plain.static_cache
    a, b = greedy(fast, prompt, 40), greedy(plain, prompt, 40)
    assert a == b
    # A second call reuses the compiled step and still agrees.
    assert greedy(fast, prompt, 40) == a


def test_sampling_gives_different_rows_on_the_fast_path():
    model = random_llama(SHAPE, "cuda")
    gen = HFGenerator("random", model=model, tokenizer=None, device="cuda", static_cache=True)
    prompt = torch.randint(3, SHAPE["vocab_size"], (1, 16), device="cuda").repeat(4, 1)
    params = GenerationParams(max_tokens=24, temperature=1.0, top_p=0.95)
    with torch.inference_mode():
        rows = torch.stack(list(gen._token_steps(prompt, 24, params)), dim=1)
    assert len({tuple(r) for r in rows.tolist()}) > 1


def test_fused_decoder_is_used_and_matches_transformers_static_cache():
    torch.manual_seed(1)
    model = random_llama(SHAPE, "cuda", dtype=torch.float32)
    prompt = torch.randint(3, SHAPE["vocab_size"], (3, 40), device="cuda")
    hf_static = HFGenerator(
        "random", model=model, tokenizer=None, device="cuda", static_cache=True, fused=False
    )
    assert hf_static.decoder is None
    expected = greedy(hf_static, prompt, 48)
    fused = HFGenerator("random", model=model, tokenizer=None, device="cuda", static_cache=True)
    assert fused.decoder is not None and fused.decoder.triton_attention
    assert greedy(fused, prompt, 48) == expected
    # A longer answer budget reuses the compiled step through a bigger cache and agrees.
    params = GenerationParams(max_tokens=3000, temperature=0.0)
    with torch.inference_mode():
        steps = fused._token_steps(prompt, 3000, params)
        longer = [next(steps).tolist() for _ in range(48)]
    assert longer == expected


def test_fewer_rows_and_a_shorter_answer_reuse_the_compiled_step():
    """After a 4-row answer with a long budget, a 2-row answer with a short one decodes
    in the same compiled step (padded, in the longer cache): the same tokens as plain
    decoding, and no step compiled for it."""
    torch.manual_seed(3)
    model = random_llama(SHAPE, "cuda", dtype=torch.float32)
    fast = HFGenerator("random", model=model, tokenizer=None, device="cuda", static_cache=True)
    plain = HFGenerator("random", model=model, tokenizer=None, device="cuda", static_cache=False)
    params = GenerationParams(max_tokens=3000, temperature=0.0)
    with torch.inference_mode():
        steps = fast._token_steps(torch.randint(3, SHAPE["vocab_size"], (4, 40), device="cuda"), 3000, params)
        [next(steps) for _ in range(8)]
    compiled = set(fast.decoder._compiled)
    prompt = torch.randint(3, SHAPE["vocab_size"], (2, 24), device="cuda")
    assert greedy(fast, prompt, 32) == greedy(plain, prompt, 32)
    assert fast.decoder._compiled == compiled


def test_decode_attention_kernel_matches_reference_in_bf16():
    from autotriton_jupyter.model.decode_attention import decode_attention, reference_attention

    torch.manual_seed(2)
    b, h, kv, length, d = 4, 32, 8, 4096, 128
    q = torch.randn(b, h, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, kv, length, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, kv, length, d, device="cuda", dtype=torch.bfloat16)
    for kind in ("vec", "dot"):
        for pos in (0, 1, 255, 256, 1000, length - 1):
            p = torch.tensor([pos], device="cuda")
            got = decode_attention(q, k, v, p, d**-0.5, kind=kind).float()
            want = reference_attention(q, k, v, pos, d**-0.5).float()
            assert (got - want).abs().max().item() < 2e-2, (kind, pos)
