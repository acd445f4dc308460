# expect: conditional (the judge's signed input variant breaks the equal halves that every real rope cache has; decided in issue 13)
# constructs: torch.cuda.device(...) guard in forward (index -1 on CPU is a no-op), next_power_of_2 paddings for heads and half head_dim, helper @triton.jit device function called twice from the kernel, cos/sin read from the first half only (real rope caches repeat the halves), tuple output
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rotate_heads(
    src_ptr,
    dst_ptr,
    head_stride,
    n_heads,
    cos_row,
    sin_row,
    HALF: tl.constexpr,
    PAD_HEADS: tl.constexpr,
    PAD_HALF: tl.constexpr,
):
    h = tl.arange(0, PAD_HEADS)[:, None]
    d = tl.arange(0, PAD_HALF)[None, :]
    mask = (h < n_heads) & (d < HALF)
    first = h * head_stride + d
    second = first + HALF
    x1 = tl.load(src_ptr + first, mask=mask, other=0.0)
    x2 = tl.load(src_ptr + second, mask=mask, other=0.0)
    # [x1, x2] * cos + [-x2, x1] * sin
    tl.store(dst_ptr + first, x1 * cos_row - x2 * sin_row, mask=mask)
    tl.store(dst_ptr + second, x2 * cos_row + x1 * sin_row, mask=mask)


@triton.jit
def _rope_forward_kernel(
    q_ptr,
    k_ptr,
    q_out_ptr,
    k_out_ptr,
    cos_ptr,
    sin_ptr,
    q_batch_stride,
    q_head_stride,
    q_seq_stride,
    k_batch_stride,
    k_head_stride,
    k_seq_stride,
    cos_seq_stride,
    seq_len,
    n_q_heads,
    n_kv_heads,
    HALF: tl.constexpr,
    PAD_Q_HEADS: tl.constexpr,
    PAD_KV_HEADS: tl.constexpr,
    PAD_HALF: tl.constexpr,
):
    pid = tl.program_id(0)
    batch = pid // seq_len
    pos = pid % seq_len

    d = tl.arange(0, PAD_HALF)
    # only the first half of each cos/sin row is read: both halves are the same
    cos_row = tl.load(cos_ptr + pos * cos_seq_stride + d, mask=d < HALF, other=0.0)[None, :]
    sin_row = tl.load(sin_ptr + pos * cos_seq_stride + d, mask=d < HALF, other=0.0)[None, :]

    q_off = batch * q_batch_stride + pos * q_seq_stride
    k_off = batch * k_batch_stride + pos * k_seq_stride
    _rotate_heads(q_ptr + q_off, q_out_ptr + q_off, q_head_stride, n_q_heads, cos_row, sin_row,
                  HALF, PAD_Q_HEADS, PAD_HALF)
    _rotate_heads(k_ptr + k_off, k_out_ptr + k_off, k_head_stride, n_kv_heads, cos_row, sin_row,
                  HALF, PAD_KV_HEADS, PAD_HALF)


def rope_forward(q, k, cos, sin):
    q = q.contiguous()
    k = k.contiguous()
    cos = cos.contiguous()
    sin = sin.contiguous()
    batch, n_q_heads, seq_len, head_dim = q.shape
    n_kv_heads = k.shape[1]
    assert head_dim % 2 == 0, "rotary embedding needs an even head_dim"
    half = head_dim // 2
    q_out = torch.empty_like(q)
    k_out = torch.empty_like(k)
    grid = (batch * seq_len,)
    with torch.cuda.device(q.device.index if q.is_cuda else -1):
        _rope_forward_kernel[grid](
            q, k, q_out, k_out, cos, sin,
            q.stride(0), q.stride(1), q.stride(2),
            k.stride(0), k.stride(1), k.stride(2),
            cos.stride(0),
            seq_len, n_q_heads, n_kv_heads,
            HALF=half,
            PAD_Q_HEADS=triton.next_power_of_2(n_q_heads),
            PAD_KV_HEADS=triton.next_power_of_2(n_kv_heads),
            PAD_HALF=triton.next_power_of_2(half),
        )
    return q_out, k_out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, cos, sin):
        return rope_forward(q, k, cos, sin)
