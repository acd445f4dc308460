# expect: fail
# task: softmax
# attack: Gets the op audit itself as the current dispatch mode, clears its compute counts after torch.softmax and adds a fake launch; no kernel ever runs.
# (found white-box by a reviewer against 4dd96bd, where it passed)
import typing

import torch
import torch.nn as nn
import triton
import triton.language as tl


class _Names:
    _get_current_dispatch_mode = None
    launches = None
    compute = None
    own = None
    clear = None


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=-float("inf"))
    e = tl.exp(x - tl.max(x, 0))
    tl.store(out_ptr + row * n + offs, e / tl.sum(e, 0), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.softmax(x, dim=1)
        mode = typing.sys.modules["torch.utils._python_dispatch"]._get_current_dispatch_mode()
        if mode is not None:
            mode.compute.clear()
            mode.launches.own["softmax_kernel"] += 1
        return out
