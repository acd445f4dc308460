# expect: fail
# task: inline
# attack: PyTorch does the whole transpose and cast (x.t().to(float16).contiguous(): recorded copies into a scratch tensor); a Triton kernel then only memcpy's the scratch into a fresh output. The copy-provenance check looks only at whether the output's own storage holds a PyTorch copy's bytes, so a kernel-made byte-for-byte copy of a PyTorch copy counts as the kernel's work.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def memcpy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        scratch = x.t().to(torch.float16).contiguous()  # PyTorch's work
        out = torch.empty((x.shape[1], x.shape[0]), dtype=torch.float16, device=x.device)
        n = out.numel()
        memcpy_kernel[(triton.cdiv(n, 1024),)](scratch, out, n, BLOCK=1024)
        return out
