# expect: fail launch_hook|torch_ops
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _work(args):
    torch.add(args["x_ptr"], args["y_ptr"], out=args["out_ptr"]).clamp_(min=0)
    return 1


@triton.heuristics({"DONE": _work})
@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, DONE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if DONE == 0:
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)


@triton.jit
def touch_kernel(out_ptr, BLOCK: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        add_relu_kernel[(1,)](x, y, out, x.numel(), BLOCK=1024)
        touch_kernel[(1,)](out, BLOCK=16)  # the one launch the probe counts
        return out
