# expect: conditional
# task: inline
# attack: Ignores the alpha argument and hard-codes 0.5: get_inputs always passes 0.5, and the judge varies only tensors (variants and --shapes keep other arguments), so a kernel wrong for every other alpha passes.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    t = tl.where(x < 0, -t, t)
    tl.store(out_ptr + offs, t * 0.5, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, alpha):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        tanh_scale_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
