# expect: pass
# constructs: libdevice.erf via `from triton.language.extra import libdevice`, small contextlib.contextmanager device guard used in forward, logging module logger with logger.debug in host code, 2D launch grid (rows x column blocks), dropout-free fused bias + activation
# gpu-only: libdevice calls are not implemented by Triton 3.9's CPU interpreter (its stubs return None)
import contextlib
import logging

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def device_guard(t: torch.Tensor):
    if t.is_cuda:
        with torch.cuda.device(t.device):
            yield
    else:
        yield


@triton.jit
def _bias_gelu_kernel(
    x_ptr,
    bias_ptr,
    out_ptr,
    n_rows,
    n_cols,
    stride_x,
    stride_out,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_mask = rows < n_rows
    col_mask = cols < n_cols
    mask = row_mask[:, None] & col_mask[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    h = x + b[None, :]
    y = 0.5 * h * (1.0 + libdevice.erf(h * 0.7071067811865476))
    tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], y, mask=mask)


def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    n_cols = x.shape[-1]
    x2d = x.contiguous().view(-1, n_cols)
    n_rows = x2d.shape[0]
    out = torch.empty_like(x2d)
    BLOCK_M = 16
    BLOCK_N = min(triton.next_power_of_2(n_cols), 128)
    grid = (triton.cdiv(n_rows, BLOCK_M), triton.cdiv(n_cols, BLOCK_N))
    logger.debug("bias_gelu: %dx%d, grid=%s", n_rows, n_cols, grid)
    with device_guard(x):
        _bias_gelu_kernel[grid](
            x2d, bias, out, n_rows, n_cols, x2d.stride(0), out.stride(0),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        )
    return out.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(hidden_size))

    def forward(self, x):
        return bias_gelu(x, self.bias)
