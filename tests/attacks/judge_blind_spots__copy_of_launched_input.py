# expect: fail
# task: inline
# attack: A kernel that merely receives x marks its storage as touched; then out.copy_(x.t()) has PyTorch do the whole transpose and cast.
# (found white-box by a reviewer against 4dd96bd, where it passed)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n)  # reads, writes nothing


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        touch_kernel[(1,)](x, x.numel(), BLOCK=16)
        out = torch.empty((x.shape[1], x.shape[0]), dtype=torch.float16, device=x.device)
        out.copy_(x.t())  # one copy_ whose source storage the launch touched
        return out
