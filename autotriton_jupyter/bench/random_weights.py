"""Random-weight Llama models for the model benchmarks (`bench generate`, `bench finetune`).

Speed does not depend on weight values, so a benchmark's model can be AutoTriton's exact
shape (MODEL.md) with random weights, built directly on the device, or a tiny one of the
same architecture (tests, CPU runs).
"""

from __future__ import annotations

from typing import Any

AUTOTRITON_SHAPE = {
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 155136,
    "rope_theta": 500000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
    "max_position_embeddings": 32768,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "pad_token_id": 1,
}
TINY_SHAPE = {
    **AUTOTRITON_SHAPE,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 512,
    "max_position_embeddings": 2048,
}


def random_llama(shape: dict[str, Any], device: str, dtype: Any = None) -> Any:
    """A LlamaForCausalLM of the given shape with random weights, allocated on the device."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**shape)
    if dtype is None:
        dtype = torch.bfloat16 if device == "cuda" else torch.float32
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    model = model.to(dtype).to_empty(device=device)  # cast on meta: never a float32 copy
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)
    # Rotary tables are buffers computed at construction, left empty on the meta device:
    # build those modules again, on the device, with their own initialisation.
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if hasattr(child, "inv_freq"):
                setattr(parent, child_name, type(child)(config=config).to(device))
    return model.eval()
