# expect: pass
# constructs: @triton.jit(do_not_specialize=[...]) decorator with arguments, module-level tl.constexpr global used inside kernels as a tile height, two kernels (partial column sums per row chunk, then a reduction over chunks), math.ceil chunk count
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

ROWS_PER_STEP: tl.constexpr = tl.constexpr(4)


@triton.jit(do_not_specialize=["n_rows"])
def _column_partial_sum_kernel(
    x_ptr,
    partial_ptr,
    n_rows,
    n_cols,
    stride_row,
    ROWS_PER_CHUNK: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    chunk = tl.program_id(0)
    pid_n = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    row0 = chunk * ROWS_PER_CHUNK
    for step in range(0, ROWS_PER_CHUNK, ROWS_PER_STEP):
        rows = row0 + step + tl.arange(0, ROWS_PER_STEP)
        mask = (rows[:, None] < n_rows) & col_mask[None, :]
        tile = tl.load(x_ptr + rows[:, None] * stride_row + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(tile.to(tl.float32), axis=0)
    tl.store(partial_ptr + chunk * n_cols + cols, acc, mask=col_mask)


@triton.jit(do_not_specialize=["n_chunks"])
def _sum_chunks_kernel(partial_ptr, out_ptr, n_chunks, n_cols, BLOCK_N: tl.constexpr):
    pid_n = tl.program_id(0)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for c in range(0, n_chunks):
        acc += tl.load(partial_ptr + c * n_cols + cols, mask=col_mask, other=0.0)
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=col_mask)


def column_sum(x, rows_per_chunk=16):
    assert x.dim() == 2
    assert rows_per_chunk % 4 == 0
    n_rows, n_cols = x.shape
    x = x.contiguous()
    n_chunks = max(1, math.ceil(n_rows / rows_per_chunk))
    BLOCK_N = min(128, triton.next_power_of_2(n_cols))
    partial = torch.empty((n_chunks, n_cols), dtype=torch.float32, device=x.device)
    grid = (n_chunks, triton.cdiv(n_cols, BLOCK_N))
    _column_partial_sum_kernel[grid](
        x, partial, n_rows, n_cols, x.stride(0), ROWS_PER_CHUNK=rows_per_chunk, BLOCK_N=BLOCK_N,
    )
    out = torch.empty(n_cols, dtype=x.dtype, device=x.device)
    _sum_chunks_kernel[(triton.cdiv(n_cols, BLOCK_N),)](partial, out, n_chunks, n_cols, BLOCK_N=BLOCK_N)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return column_sum(x)
