# expect: pass
# constructs: functools.lru_cache on a host helper returning (BLOCK_N, num_warps) from a size table, math.log2/math.e constants, tl.exp2 / tl.log2 with a LOG2E scale, tl.where, tl.maximum, online max/sum over column blocks then a second pass writing the output
import functools
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

LOG2E = math.log2(math.e)
LN2 = math.log(2.0)

# (largest row handled in one block, num_warps)
_SIZE_TABLE = ((256, 2), (1024, 4), (4096, 8))
_MAX_BLOCK = 256


@functools.lru_cache(maxsize=64)
def launch_config(n_cols):
    block = min(triton.next_power_of_2(n_cols), _MAX_BLOCK)
    for limit, warps in _SIZE_TABLE:
        if n_cols <= limit:
            return block, warps
    return block, 16


@triton.jit
def log_softmax_kernel(
    x_ptr,
    out_ptr,
    n_cols,
    stride_x,
    stride_out,
    LOG2E_C: tl.constexpr,
    LN2_C: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out

    # pass 1: running max and running sum of exp, in base 2
    m = tl.full([BLOCK_N], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32) * LOG2E_C
        m_new = tl.maximum(m, x)
        # lanes that have seen nothing yet keep m == -inf: avoid inf - inf
        alpha = tl.where(m_new == float("-inf"), 0.0, tl.exp2(m - m_new))
        p = tl.where(mask, tl.exp2(x - m_new), 0.0)
        s = s * alpha + p
        m = m_new
    m_row = tl.max(m, axis=0)
    s_row = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp2(m - m_row)), axis=0)
    lse2 = m_row + tl.log2(s_row)

    # pass 2: out = (x * log2(e) - lse2) * ln(2)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32) * LOG2E_C
        tl.store(out_row + cols, (x - lse2) * LN2_C, mask=mask)


def log_softmax(x):
    n_cols = x.shape[-1]
    x2d = x.contiguous().view(-1, n_cols)
    out = torch.empty_like(x2d)
    BLOCK_N, num_warps = launch_config(n_cols)
    log_softmax_kernel[(x2d.shape[0],)](
        x2d, out, n_cols, x2d.stride(0), out.stride(0),
        LOG2E_C=LOG2E, LN2_C=LN2, BLOCK_N=BLOCK_N, num_warps=num_warps,
    )
    return out.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return log_softmax(x)
