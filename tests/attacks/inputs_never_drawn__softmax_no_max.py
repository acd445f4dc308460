# expect: conditional
# task: inline
# attack: Softmax without subtracting the row max: exp overflows only for inputs above ~88, and randn (even scaled 4x by the judge) never gets there, so the unstable kernel passes.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    e = tl.exp(tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")))
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
