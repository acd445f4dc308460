# expect: fail module_alias|tampering
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


class ModelNew(nn.Module):
    """VERIFY 11: patches torch through an alias the lint cannot follow."""

    def __init__(self):
        super().__init__()
        module = [torch][0]
        module.allclose = lambda *args, **kwargs: True

    def forward(self, x, y):
        return launch(x, y, torch.empty_like(x))
