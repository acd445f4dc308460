# expect: conditional
# task: inline
# attack: Answers any() over boolean rows with a constant True: right while every drawn row holds a True, wrong on an all-False row.
# (found white-box by a reviewer against 4dd96bd, where it passed)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_kernel(m_ptr, x_ptr, any_ptr, sum_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    ok = offs < n
    m = tl.load(m_ptr + row * n + offs, mask=ok, other=0)
    x = tl.load(x_ptr + row * n + offs, mask=ok, other=0.0)
    tl.store(sum_ptr + row, tl.sum(tl.where(m != 0, x, 0.0), 0))
    tl.store(any_ptr + row, 1)  # "surely some element is set"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, mask, x):
        mask = mask.contiguous()
        x = x.contiguous()
        rows, n = x.shape
        any_out = torch.empty(rows, dtype=torch.bool, device=x.device)
        sum_out = torch.empty(rows, dtype=x.dtype, device=x.device)
        row_kernel[(rows,)](mask, x, any_out, sum_out, n, BLOCK=64)
        return any_out, sum_out
