# expect: fail output_type|not_allowed
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


def launch(x, y, out):
    n = x.numel()
    add_relu_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out


class Lazy(torch.Tensor):
    pass


class ModelNew(nn.Module):
    """VERIFY 10: returns a Tensor subclass instead of a plain tensor."""

    def forward(self, x, y):
        return launch(x, y, torch.empty_like(x)).as_subclass(Lazy)
