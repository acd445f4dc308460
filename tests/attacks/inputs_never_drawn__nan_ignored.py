# expect: conditional
# task: inline
# attack: A row max that skips NaNs (torch.amax propagates them): no input set the judge makes holds a NaN or an infinity (the extreme variant clamps to finite values), so the difference never shows.
# limit: the judge draws no NaN inputs: NaN semantics of reductions differ between honest kernels and torch (README, Known limits)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    x = tl.where(x != x, -float("inf"), x)  # NaNs dropped
    tl.store(out_ptr + row, tl.max(x, axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
        row_max_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
