# expect: fail
# task: add_relu
# attack: Through self (the lint lets a candidate set attributes on its own objects): forward sets an instance attribute `is_contiguous` on the judge's own input tensor (the slot buffer it reuses); after the audit the worker's mutation check calls x.is_contiguous(), which runs the candidate's function: torch computes relu(x + y) into the output forward returned (a decoy kernel only zeroed it), then says True.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.saved = None

    def finish(self):
        x, y, out = self.saved
        out.copy_(torch.relu(x + y))
        return True

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = out.numel()
        zero_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        self.saved = (x, y, out)
        self.inp = x
        self.inp.is_contiguous = self.finish
        return out
