# expect: fail host_compute
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr, BLOCK: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        fx, fy, fo = x.reshape(-1), y.reshape(-1), out.view(-1)
        for i in range(fx.shape[0]):
            fo[i] = max(fx[i].item() + fy[i].item(), 0.0)
        touch_kernel[(1,)](out, BLOCK=16)
        return out
