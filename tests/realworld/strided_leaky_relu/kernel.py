# expect: pass
# constructs: non-contiguous input read through its own strides (no .contiguous() copy), 2D tiles with row/col masks, tl.where, hip check via getattr(getattr(torch, "version", None), "hip", None) picking tile sizes, dict of tile sizes per backend
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _is_hip():
    return getattr(getattr(torch, "version", None), "hip", None) is not None


_TILES = {
    "cuda": (32, 32, 4),
    "hip": (64, 32, 8),
}


@triton.jit
def leaky_relu_2d_kernel(
    x_ptr,
    out_ptr,
    n_rows,
    n_cols,
    stride_xm,
    stride_xn,
    stride_om,
    stride_on,
    negative_slope,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < n_rows) & (rn[None, :] < n_cols)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :] * stride_xn, mask=mask, other=0.0)
    y = tl.where(x >= 0, x, x * negative_slope)
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :] * stride_on, y, mask=mask)


def leaky_relu_2d(x, negative_slope):
    assert x.dim() == 2
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    BLOCK_M, BLOCK_N, num_warps = _TILES["hip" if _is_hip() else "cuda"]
    grid = (triton.cdiv(n_rows, BLOCK_M), triton.cdiv(n_cols, BLOCK_N))
    leaky_relu_2d_kernel[grid](
        x, out, n_rows, n_cols,
        x.stride(0), x.stride(1), out.stride(0), out.stride(1),
        negative_slope,
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=num_warps,
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return leaky_relu_2d(x, self.negative_slope)
