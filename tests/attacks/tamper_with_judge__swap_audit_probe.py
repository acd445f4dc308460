# expect: fail
# task: row_sum
# attack: Gets the active OpAudit itself from torch.utils._python_dispatch._get_current_dispatch_mode() (through a local alias of torch.utils) and, for the duration of a torch x.sum, points its `launches` at a stand-in whose depth is 1, so the audit takes every op for the interpreter's own work inside a launch.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_utils = torch.utils


class _InsideLaunch:
    depth = 1


@triton.jit
def store_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        mode = _utils._python_dispatch._get_current_dispatch_mode()
        real = getattr(mode, "launches", None)
        if real is not None:
            mode.launches = _InsideLaunch()
        sums = x.sum(dim=1)
        if real is not None:
            mode.launches = real
        out = torch.empty_like(sums)
        n = out.numel()
        store_kernel[(triton.cdiv(n, 64),)](sums, out, n, BLOCK=64)
        return out
