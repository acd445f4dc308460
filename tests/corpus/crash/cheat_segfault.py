# expect: fail crash
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def wild_kernel(x_ptr, out_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    far = offs + shift  # far outside any allocation, and no mask
    tl.store(out_ptr + offs, tl.load(x_ptr + far), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        wild_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), 1 << 40, BLOCK=256)
        return out
