# expect: fail
# task: add_relu
# attack: Defining an attribute named map2_ in a class of its own puts it on the lint's attribute allowlist for every value; Tensor.map2_ runs a Python callable element by element in C++ without any ATen op, so max(x + y, 0) is computed by the host interpreter and the op audit sees only a clone.
import torch
import torch.nn as nn
import triton
import triton.language as tl


class _Names:
    map2_ = None


@triton.jit
def touch_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(out_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, v, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        out.map2_(x, y, lambda o, a, b: max(a + b, 0.0))
        n = out.numel()
        touch_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out
