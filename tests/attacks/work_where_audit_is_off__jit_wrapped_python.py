# expect: fail
# task: row_sum
# attack: A plain Python function (not decorated, so the lint does not treat it as kernel code) is wrapped with triton.jit(...) at run time; under the interpreter "launching" it runs its torch body inside the launch, unaudited, and it counts as the candidate's own kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_WORK = {}


def _reduce_rows(out_ptr, n_rows):
    x, out = _WORK["x"], _WORK["out"]
    torch.sum(x, dim=1, out=out)


reduce_rows_kernel = triton.jit(_reduce_rows)


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.sum(tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0), axis=0)
    tl.store(out_ptr + row, acc)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
        _WORK["x"], _WORK["out"] = x, out
        reduce_rows_kernel[(1,)](out, x.shape[0])
        return out
