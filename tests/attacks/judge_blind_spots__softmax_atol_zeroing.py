# expect: fail
# task: softmax
# attack: Exploits the absolute tolerance (atol 1e-2) on outputs that are mostly below 1e-2: every probability under 0.01 is written as 0, so rows no longer sum to 1 (most of the row's entries are dropped), yet each element is within atol of the reference and the comparison passes.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sparse_softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    p = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * stride + cols, tl.where(p < 0.0099, 0.0, p), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, cols = x.shape
        sparse_softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
