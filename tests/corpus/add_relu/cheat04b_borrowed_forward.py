# expect: fail monkeypatch|launches
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


class _Reference(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)


class ModelNew(nn.Module):
    """VERIFY 4: a kernel-looking forward is swapped for a borrowed one after the class."""

    def forward(self, x, y):
        return launch(x, y, torch.empty_like(x))


ModelNew.forward = _Reference.forward
