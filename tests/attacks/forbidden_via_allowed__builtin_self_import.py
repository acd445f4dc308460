# expect: fail
# task: softmax
# attack: abs.__self__ is the builtins module (no banned name is written), so abs.__self__.__import__("numpy") loads NumPy; the softmax is computed on the host on a zero-copy NumPy view and copied into the output.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_np = abs.__self__.__import__("numpy")


@triton.jit
def row_pass_kernel(out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    tl.store(out_ptr + row * stride + cols, tl.load(out_ptr + row * stride + cols, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        a = _np.asarray(x)
        e = _np.exp(a - a.max(axis=1, keepdims=True))
        out = torch.empty_like(x)
        out.copy_(torch.from_numpy((e / e.sum(axis=1, keepdims=True)).astype(a.dtype)))
        rows, cols = out.shape
        row_pass_kernel[(rows,)](out, cols, out.stride(0), BLOCK=triton.next_power_of_2(cols))
        return out
