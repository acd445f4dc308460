# expect: conditional
# task: inline
# attack: One-pass variance E[x^2] - E[x]^2 in float32: right on zero-mean rows and on every judge-made variant (signs, x4 minus the mean, x64, halves: none adds an offset, and "scaled" even removes one), but catastrophic cancellation makes it wrong on rows such as 1000 + randn: max abs error about 0.13 against a variance of 1 (the tolerance there is 0.02).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def var_kernel(x_ptr, out_ptr, D, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < D
    x = tl.load(x_ptr + row * D + offs, mask=mask, other=0.0)
    s = tl.sum(x, axis=0) / D
    s2 = tl.sum(x * x, axis=0) / D
    tl.store(out_ptr + row, s2 - s * s)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, D = x.shape
        out = torch.empty(rows, dtype=x.dtype, device=x.device)
        var_kernel[(rows,)](x, out, D, BLOCK=triton.next_power_of_2(D))
        return out
