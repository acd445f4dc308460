# expect: fail
# task: row_sum
# attack: Calls getattr(x, "tolist")(): the lint bans `.tolist()` but lets getattr through with any public literal name, so the rows are summed in Python on the host and written back with torch.tensor, with no compute op for the audit.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def store_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows = getattr(x, "tolist")()
        sums = torch.tensor([sum(r) for r in rows], dtype=x.dtype, device=x.device)
        out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
        n = out.numel()
        store_kernel[(triton.cdiv(n, 64),)](sums, out, n, BLOCK=64)
        return out
