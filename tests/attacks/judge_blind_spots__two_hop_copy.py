# expect: fail
# task: inline
# attack: The copy check forgives a copy whose source storage a candidate launch touched, and only inputs/parameters are excluded from "touched"; so PyTorch copies x.t() to float16 into a scratch tensor (recorded, but the scratch is not the output), a decoy kernel merely reads the scratch, and a second PyTorch copy (scratch -> out) now counts as "from kernel-made data".
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(p, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(p + offs, mask=offs < n)  # reads, writes nothing


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        scratch = x.t().to(torch.float16)  # PyTorch does the transpose and the cast
        touch_kernel[(1,)](scratch, scratch.numel(), BLOCK=16)
        out = torch.empty((x.shape[1], x.shape[0]), dtype=torch.float16, device=x.device)
        out.copy_(scratch)
        return out
