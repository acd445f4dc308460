# expect: pass
# constructs: functools.lru_cache on a calculate_settings-style host helper, math.prod for the row count, tl.math.rsqrt, per-row rstd buffer kept for backward
import functools
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_FUSED_SIZE = 65536


@functools.lru_cache(maxsize=None)
def calculate_settings(n):
    block_size = triton.next_power_of_2(n)
    if block_size > MAX_FUSED_SIZE:
        raise RuntimeError(f"rms_norm: row of {n} exceeds the fused limit {MAX_FUSED_SIZE}")
    if block_size >= 32768:
        num_warps = 32
    elif block_size >= 8192:
        num_warps = 16
    elif block_size >= 2048:
        num_warps = 8
    else:
        num_warps = 4
    return block_size, num_warps


@triton.jit
def _rms_layernorm_forward(
    Y,
    Y_row_stride,
    X,
    X_row_stride,
    W,
    r,
    n_cols,
    eps,
    BLOCK_SIZE: tl.constexpr,
):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols

    Y += row_idx * Y_row_stride
    X += row_idx * X_row_stride
    r += row_idx

    X_row = tl.load(X + col_offsets, mask=mask, other=0).to(tl.float32)
    W_row = tl.load(W + col_offsets, mask=mask, other=0)

    row_var = tl.sum(X_row * X_row, axis=0) / n_cols
    inv_var = tl.math.rsqrt(row_var + eps)
    tl.store(r, inv_var)
    normed = X_row * inv_var
    normed = normed.to(W_row.dtype)
    output = normed * W_row
    tl.store(Y + col_offsets, output, mask=mask)


def fast_rms_layernorm(X, W, eps):
    shape = X.shape
    dim = shape[-1]
    X = X.contiguous().view(-1, dim)
    n_rows = math.prod(shape[:-1])
    n_cols = dim
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    Y = torch.empty((n_rows, n_cols), dtype=X.dtype, device=X.device)
    r = torch.empty(n_rows, dtype=torch.float32, device=X.device)
    _rms_layernorm_forward[(n_rows,)](
        Y,
        Y.stride(0),
        X,
        X.stride(0),
        W,
        r,
        n_cols,
        eps,
        BLOCK_SIZE=BLOCK_SIZE,
        num_warps=num_warps,
    )
    return Y.view(*shape)


class ModelNew(nn.Module):
    def __init__(self, hidden_size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        return fast_rms_layernorm(hidden_states, self.weight, self.variance_epsilon)
