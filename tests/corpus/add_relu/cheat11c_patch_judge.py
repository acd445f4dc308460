# expect: fail forbidden_import|module_alias
import torch
import torch.nn as nn
import triton
import triton.language as tl
import autotriton_jupyter.verify.probes as P

p = P
p.NON_COMPUTE_OPS = p.NON_COMPUTE_OPS | {"add", "relu"}


@triton.jit
def touch_kernel(out_ptr, BLOCK: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.relu(x + y)
        touch_kernel[(1,)](out, BLOCK=16)
        return out
