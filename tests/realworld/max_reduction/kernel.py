# expect: pass
# constructs: two-pass reduction with two kernels (partial maxima per row chunk, then reduce the partials), math.ceil for the chunk count, tl.maximum accumulation, float32 scratch buffer from torch.empty, 2D launch grid
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _partial_max_kernel(x_ptr, partial_ptr, n_cols, stride_row, n_chunks, CHUNK: tl.constexpr,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    base = x_ptr + row * stride_row
    acc = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, CHUNK, BLOCK):
        cols = chunk * CHUNK + start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        acc = tl.maximum(acc, x)
    tl.store(partial_ptr + row * n_chunks + chunk, tl.max(acc, axis=0))


@triton.jit
def _final_max_kernel(partial_ptr, out_ptr, n_chunks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    vals = tl.load(partial_ptr + row * n_chunks + offs, mask=offs < n_chunks, other=float("-inf"))
    tl.store(out_ptr + row, tl.max(vals, axis=0))


def row_max(x, chunk=512, block=128):
    n_cols = x.shape[-1]
    x2d = x.contiguous().view(-1, n_cols)
    n_rows = x2d.shape[0]
    n_chunks = math.ceil(n_cols / chunk)
    partial = torch.empty((n_rows, n_chunks), dtype=torch.float32, device=x.device)
    _partial_max_kernel[(n_rows, n_chunks)](
        x2d, partial, n_cols, x2d.stride(0), n_chunks, CHUNK=chunk, BLOCK=block,
    )
    out = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    _final_max_kernel[(n_rows,)](partial, out, n_chunks, BLOCK=triton.next_power_of_2(n_chunks))
    return out.view(x.shape[:-1])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return row_max(x)
