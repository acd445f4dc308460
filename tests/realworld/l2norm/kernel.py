# expect: pass
# constructs: decorator-form @triton.heuristics({"EVEN_N": lambda args: args["n_cols"] % args["BLOCK_N"] == 0}), mask-free fast path under EVEN_N, tl.maximum clamp of the norm, two loops over column blocks (sum of squares, then scale), math.ceil for a block count in host code
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.heuristics({"EVEN_N": lambda args: args["n_cols"] % args["BLOCK_N"] == 0})
@triton.jit
def l2norm_fwd_kernel(
    X,
    Y,
    stride_x_row,
    stride_y_row,
    n_cols,
    eps,
    NUM_BLOCKS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    EVEN_N: tl.constexpr,
):
    row = tl.program_id(0)
    X += row * stride_x_row
    Y += row * stride_y_row
    sq = tl.zeros([BLOCK_N], dtype=tl.float32)
    for b in range(NUM_BLOCKS):
        cols = b * BLOCK_N + tl.arange(0, BLOCK_N)
        if EVEN_N:
            x = tl.load(X + cols).to(tl.float32)
        else:
            x = tl.load(X + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        sq += x * x
    norm = tl.sqrt(tl.sum(sq, axis=0))
    inv = 1.0 / tl.maximum(norm, eps)
    for b in range(NUM_BLOCKS):
        cols = b * BLOCK_N + tl.arange(0, BLOCK_N)
        if EVEN_N:
            x = tl.load(X + cols).to(tl.float32)
            tl.store(Y + cols, x * inv)
        else:
            x = tl.load(X + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
            tl.store(Y + cols, x * inv, mask=cols < n_cols)


def l2norm(x, eps):
    n_cols = x.shape[-1]
    x2d = x.contiguous().view(-1, n_cols)
    y = torch.empty_like(x2d)
    BLOCK_N = min(64, triton.next_power_of_2(n_cols))
    num_blocks = math.ceil(n_cols / BLOCK_N)
    l2norm_fwd_kernel[(x2d.shape[0],)](
        x2d, y, x2d.stride(0), y.stride(0), n_cols, eps,
        NUM_BLOCKS=num_blocks, BLOCK_N=BLOCK_N,
    )
    return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, eps=1e-12):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        return l2norm(x, self.eps)
