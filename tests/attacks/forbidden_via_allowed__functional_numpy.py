# expect: fail
# task: matmul
# attack: torch.nn.functional.np (numpy, a module among F's public names) multiplies on the host where the op audit sees nothing; a copy kernel writes the output.
# (found white-box by a reviewer against 4dd96bd, where it passed)
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        tmp = torch.as_tensor(F.np.matmul(a, b))
        out = torch.empty(tmp.shape, dtype=a.dtype, device=a.device)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](tmp, out, n, BLOCK=1024)
        return out
