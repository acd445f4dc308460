# expect: fail
# task: matmul
# attack: typing.sys.modules reaches torch's dispatch internals; _disable_current_modes() pops the op audit while torch.matmul runs, and a copy kernel writes the output.
# (found white-box by a reviewer against 4dd96bd, where it passed)
import typing

import torch
import torch.nn as nn
import triton
import triton.language as tl


class _Names:
    _disable_current_modes = None


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        pd = typing.sys.modules["torch.utils._python_dispatch"]
        with pd._disable_current_modes():
            tmp = torch.matmul(a, b)
        out = torch.empty_like(tmp)
        n = tmp.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](tmp, out, n, BLOCK=1024)
        return out
