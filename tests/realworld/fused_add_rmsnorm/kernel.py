# expect: pass
# constructs: triton.heuristics({...})(fn) in call form computing BLOCK_SIZE from next_power_of_2, tuple output (normed, new residual), torch.cuda.device / contextlib.nullcontext guard chosen by x.device.type, tl.math.rsqrt, logging module logger
import contextlib
import logging

import torch
import torch.nn as nn
import triton
import triton.language as tl

logger = logging.getLogger(__name__)


@triton.jit
def _fused_add_rmsnorm_kernel(
    x_ptr,
    res_ptr,
    w_ptr,
    out_ptr,
    res_out_ptr,
    stride_row,
    n_cols,
    eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(res_ptr + row * stride_row + cols, mask=mask, other=0.0).to(tl.float32)
    h = x + r
    tl.store(res_out_ptr + row * stride_row + cols, h, mask=mask)
    var = tl.sum(h * h, axis=0) / n_cols
    rstd = tl.math.rsqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * stride_row + cols, h * rstd * w, mask=mask)


fused_add_rmsnorm_kernel = triton.heuristics(
    {"BLOCK_SIZE": lambda args: triton.next_power_of_2(args["n_cols"])}
)(_fused_add_rmsnorm_kernel)


def fused_add_rmsnorm(x, residual, weight, eps):
    shape = x.shape
    n_cols = shape[-1]
    x2d = x.contiguous().view(-1, n_cols)
    r2d = residual.contiguous().view(-1, n_cols)
    out = torch.empty_like(x2d)
    res_out = torch.empty_like(x2d)
    n_rows = x2d.shape[0]
    logger.debug("fused_add_rmsnorm rows=%d cols=%d", n_rows, n_cols)
    guard = torch.cuda.device(x.device) if x.device.type == "cuda" else contextlib.nullcontext()
    with guard:
        fused_add_rmsnorm_kernel[(n_rows,)](x2d, r2d, weight, out, res_out, x2d.stride(0), n_cols, eps)
    return out.view(shape), res_out.view(shape)


class ModelNew(nn.Module):
    def __init__(self, hidden_size, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x, residual):
        return fused_add_rmsnorm(x, residual, self.weight, self.eps)
