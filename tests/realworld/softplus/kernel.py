# expect: pass
# constructs: tl.exp2 / tl.log2 with log2(e) scaling, tl.where for the linear region above the threshold, tl.maximum in the stable form max(z, 0) + log1p(exp(-|z|)), decorator-form @triton.heuristics({"EVEN_N": lambda args: args["n"] % args["BLOCK"] == 0}), math constants in host code
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

_LOG2E = math.log2(math.e)
_LN2 = math.log(2.0)


@triton.heuristics({"EVEN_N": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def softplus_kernel(x_ptr, y_ptr, n, beta, threshold, log2e, ln2, BLOCK: tl.constexpr, EVEN_N: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN_N:
        x = tl.load(x_ptr + offs).to(tl.float32)
    else:
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    z = x * beta
    # log(1 + exp(z)) = max(z, 0) + log(1 + exp(-|z|)), evaluated in base 2
    soft = tl.maximum(z, 0.0) + tl.log2(1.0 + tl.exp2(-tl.abs(z) * log2e)) * ln2
    y = tl.where(z > threshold, x, soft / beta)
    if EVEN_N:
        tl.store(y_ptr + offs, y)
    else:
        tl.store(y_ptr + offs, y, mask=offs < n)


def softplus(x, beta, threshold):
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    BLOCK = 1024
    softplus_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, beta, threshold, _LOG2E, _LN2, BLOCK=BLOCK)
    return y


class ModelNew(nn.Module):
    def __init__(self, beta, threshold):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x):
        return softplus(x, self.beta, self.threshold)
