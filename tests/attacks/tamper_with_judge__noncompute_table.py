# expect: fail
# task: softmax
# attack: Gets the judge's probes module from torch.sys.modules and replaces its NON_COMPUTE_OPS frozenset with a subclass that contains every op name; it is data, not a callable, so the identity snapshot does not cover it, and torch.softmax is then recorded as "non-compute".
import torch
import torch.nn as nn
import triton
import triton.language as tl


class _EveryOp(frozenset):
    def __contains__(self, name):
        return True


_probes = torch.sys.modules.get("autotriton_jupyter.verify.probes")
if _probes is not None:
    _probes.NON_COMPUTE_OPS = _EveryOp(_probes.NON_COMPUTE_OPS)


@triton.jit
def row_copy_kernel(src_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    tl.store(out_ptr + row * stride + cols, tl.load(src_ptr + row * stride + cols, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        src = torch.softmax(x, dim=1).contiguous()
        out = torch.empty_like(src)
        rows, cols = src.shape
        row_copy_kernel[(rows,)](src, out, cols, src.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
