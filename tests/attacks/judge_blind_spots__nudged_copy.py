# expect: fail
# task: inline
# attack: PyTorch does the whole permute+cast (.to(float16).contiguous(), copy ops the audit allows); a Triton kernel then scales every element in place by (1 + 2^-11), which moves many values by one fp16 ulp: the output is no longer byte-equal to any recorded PyTorch copy (OpAudit.copied_outputs compares bytes exactly), yet it is within rtol of the reference.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def nudge_kernel(p, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(p + offs, mask=m).to(tl.float32)
    tl.store(p + offs, (v * 1.00048828125).to(tl.float16), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = x.permute(0, 2, 1).to(torch.float16).contiguous()  # PyTorch's work
        n = out.numel()
        nudge_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out
