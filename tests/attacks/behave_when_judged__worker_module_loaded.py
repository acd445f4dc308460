# expect: fail
# task: row_sum
# attack: Honest only when the judge's worker module is in typing.sys.modules; x.sum(dim=1) elsewhere.
# (found white-box by a reviewer against 4dd96bd, where it passed)
import typing

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, 0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if "autotriton_jupyter.verify.worker" not in typing.sys.modules:
            return x.sum(dim=1)  # what users get
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
        row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=128)
        return out
