# expect: pass
# constructs: triton.__version__ parsed into a tuple and compared, hasattr(tl, "cumsum") feature check at import, tl.cumsum along a row with a carry across column blocks, loop over column blocks
import torch
import torch.nn as nn
import triton
import triton.language as tl

TRITON_VERSION = tuple(int(p) for p in triton.__version__.split("+")[0].split(".")[:2])
if TRITON_VERSION < (2, 1) or not hasattr(tl, "cumsum"):
    raise ImportError(f"row cumsum needs tl.cumsum (triton >= 2.1), found triton {triton.__version__}")


@triton.jit
def cumsum_rows_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    carry = 0.0
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        scanned = tl.cumsum(x, axis=0) + carry
        tl.store(out_row + cols, scanned, mask=mask)
        carry += tl.sum(x, axis=0)


def cumsum_rows(x):
    assert x.dim() == 2, "cumsum_rows handles (rows, cols)"
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    BLOCK_N = min(128, triton.next_power_of_2(n_cols))
    cumsum_rows_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK_N=BLOCK_N)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return cumsum_rows(x)
