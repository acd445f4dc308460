# expect: pass
# constructs: argmax over a middle dim read through strides, tl.max(return_indices=True), int64 output, dim from the constructor
"""argmax over a middle dim, reading through strides (no copy); first index on ties."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmax_kernel(x_ptr, out_ptr, M, N, K, stride_m, stride_n, stride_k,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # x viewed as (M, N, K); reduce over N. One program per (m, K-block).
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    mask_k = offs_k < K
    best_val = tl.full([BLOCK_K], float("-inf"), dtype=tl.float32)
    best_idx = tl.zeros([BLOCK_K], dtype=tl.int64)
    for start in range(0, N, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        mask = (offs_n[:, None] < N) & mask_k[None, :]
        ptrs = x_ptr + pid_m * stride_m + offs_n[:, None] * stride_n + offs_k[None, :] * stride_k
        vals = tl.load(ptrs, mask=mask, other=float("-inf")).to(tl.float32)
        # NaN counts as the maximum, as in torch.argmax
        vals = tl.where(vals != vals, float("inf"), vals)
        blk_val, blk_idx = tl.max(vals, axis=0, return_indices=True, return_indices_tie_break_left=True)
        blk_idx = blk_idx.to(tl.int64) + start
        take = blk_val > best_val
        best_idx = tl.where(take, blk_idx, best_idx)
        best_val = tl.where(take, blk_val, best_val)
    tl.store(out_ptr + pid_m * K + offs_k, best_idx, mask=mask_k)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        dim = self.dim % x.ndim
        shape = list(x.shape)
        M = 1
        for s in shape[:dim]:
            M *= s
        N = shape[dim]
        K = 1
        for s in shape[dim + 1:]:
            K *= s
        x3 = x.reshape(M, N, K)
        out = torch.empty((M, K), dtype=torch.int64, device=x.device)
        BLOCK_K = min(64, triton.next_power_of_2(K))
        grid = (M, triton.cdiv(K, BLOCK_K))
        argmax_kernel[grid](x3, out, M, N, K, x3.stride(0), x3.stride(1), x3.stride(2),
                            BLOCK_N=64, BLOCK_K=BLOCK_K)
        return out.reshape(shape[:dim] + shape[dim + 1:])
