# expect: conditional
# task: inline
# attack: Ignores the constructor's negative_slope and hard-codes 0.2: the judge varies float arguments of forward (scaled/extreme) but always builds ModelNew from the same get_init_inputs(), so a constant fitted to the one init value is never exposed.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m)
    tl.store(o_ptr + offs, tl.where(v > 0, v, v * 0.2), mask=m)


class ModelNew(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        leaky_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
