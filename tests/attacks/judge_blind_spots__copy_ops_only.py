# expect: fail
# task: inline
# attack: The whole task (a permute plus a float16 cast) is done by torch's contiguous() and .to(), which the audit files under "view/copy" ops (clone, copy_, _to_copy) and allows; a one-block kernel launch satisfies the launch check, so none of the work is Triton's.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def check_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(out_ptr + offs))


class ModelNew(nn.Module):
    def forward(self, x):
        out = x.permute(0, 2, 1).contiguous().to(torch.float16)
        check_kernel[(1,)](out, BLOCK=16)
        return out
