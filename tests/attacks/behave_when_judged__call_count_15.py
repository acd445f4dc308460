# expect: fail
# task: add_relu
# attack: Honest for its first 15 calls, then torch; on the CPU the judge makes only 10-14 calls (5 sets, a repeat, a refill and 3-7 late calls), all honest.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)


@triton.jit
def tick_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(out_ptr + offs))


def honest(x, y):
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    n = out.numel()
    add_relu_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out


def cheap(x, y):
    out = torch.relu(x + y)
    tick_kernel[(1,)](out, BLOCK=16)  # a launch, so a launch check sees one
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x, y):
        self.calls += 1
        if self.calls <= 15:
            return honest(x, y)
        return cheap(x, y)
