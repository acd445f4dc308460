# expect: fail
# task: add_relu
# attack: The tensors are passed as tl.constexpr arguments, which Triton's interpreter hands to the kernel body untouched, so the "kernel" body calls torch methods on them (X.add(Y).clamp_min(0)) inside the launch, where the audit is off; the lint allows method calls on kernel arguments.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu_kernel(n, X: tl.constexpr, Y: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr):
    OUT.copy_(X.add(Y).clamp_min(0.0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        add_relu_kernel[(1,)](x.numel(), X=x, Y=y, OUT=out, BLOCK=1024)
        return out
