import torch
import torch.nn as nn


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    """HF-style rotary embedding applied to q and k of shape (batch, heads, seq, head_dim)."""

    def __init__(self):
        super().__init__()

    def forward(self, q, k, cos, sin):
        cos = cos.unsqueeze(0).unsqueeze(0)
        sin = sin.unsqueeze(0).unsqueeze(0)
        q_embed = (q * cos) + (rotate_half(q) * sin)
        k_embed = (k * cos) + (rotate_half(k) * sin)
        return q_embed, k_embed


def _rope_cache(seq_len, head_dim, base=10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    t = torch.arange(seq_len, dtype=torch.float32)
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)  # both halves equal, as in real rope caches
    return emb.cos(), emb.sin()


def get_inputs():
    batch, n_q_heads, n_kv_heads, seq_len, head_dim = 2, 6, 2, 19, 48
    q = torch.randn(batch, n_q_heads, seq_len, head_dim)
    k = torch.randn(batch, n_kv_heads, seq_len, head_dim)
    cos, sin = _rope_cache(seq_len, head_dim)
    return [q, k, cos, sin]


def get_init_inputs():
    return []
