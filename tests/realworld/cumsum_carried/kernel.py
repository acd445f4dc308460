# expect: pass
# constructs: tl.cumsum per block with a carried prefix, dim from the constructor (an int the judge cannot vary)
"""Row-wise inclusive cumsum with tl.cumsum, block-wise with a carried prefix."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_rows_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = tl.zeros([1], dtype=tl.float32)
    carry = tl.sum(carry, axis=0)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=0.0).to(tl.float32)
        s = tl.cumsum(x, axis=0) + carry
        tl.store(y_ptr + row * stride_y + offs, s.to(y_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        dim = self.dim % x.ndim
        xt = x.movedim(dim, -1).contiguous()
        shape = xt.shape
        x2 = xt.reshape(-1, shape[-1])
        y2 = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        cumsum_rows_kernel[(n_rows,)](x2, y2, n_cols, x2.stride(0), y2.stride(0), BLOCK=128)
        return y2.reshape(shape).movedim(-1, dim).contiguous()
