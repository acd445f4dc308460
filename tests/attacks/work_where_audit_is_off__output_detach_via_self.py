# expect: fail
# task: add_relu
# attack: Through self (the lint lets a candidate set attributes on its own objects): The output tensor gets an instance attribute `detach` (a plain attribute store on a local, which the lint allows); the worker's wire.encode calls v.detach() when it serialises the reply, after the audit, so torch computes relu(x + y) there while forward only launched a decoy kernel.
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
        x, y = self.saved
        return torch.relu(x + y)

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = out.numel()
        zero_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        self.saved = (x, y)
        self.out = out
        self.out.detach = self.finish
        return out
