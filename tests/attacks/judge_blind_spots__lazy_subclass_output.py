# expect: fail
# task: add_relu
# attack: Returns a Tensor subclass (made with the public as_subclass) whose __torch_function__ fills in relu(x + y) on the judge's first look at it, after the audit has ended; today's output_type check (type(x) is torch.Tensor) should stop it.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_PENDING = {}


class _Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        while _PENDING:
            _, (x, y, out) = _PENDING.popitem()
            torch.add(x, y, out=out).clamp_(min=0.0)
        return super().__torch_function__(func, types, args, kwargs or {})


@triton.jit
def tick_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(out_ptr + offs))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        tick_kernel[(1,)](out, BLOCK=16)
        _PENDING[out.data_ptr()] = (x, y, out)
        return out.as_subclass(_Lazy)
