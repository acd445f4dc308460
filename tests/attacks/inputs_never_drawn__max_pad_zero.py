# expect: conditional
# task: inline
# attack: A row max whose padded lanes load other=0.0 (the classic masked-load bug): wrong only on a row whose every element is negative, and no judge-made set makes one (signed flips each sign at random, scaled/extreme/tiny keep mixed signs, offset only shifts upwards).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowmax_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
    tl.store(o_ptr + row, tl.max(v, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        m, n = x.shape
        out = torch.empty(m, device=x.device, dtype=x.dtype)
        rowmax_kernel[(m,)](x, out, n, BLOCK=triton.next_power_of_2(n))
        return out
