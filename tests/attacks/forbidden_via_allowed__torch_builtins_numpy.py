# expect: fail
# task: row_sum
# attack: Calls torch.builtins.__import__("numpy") (builtins reached as an attribute of torch, so neither the banned-module list nor the banned __import__ call matches) and sums the rows with NumPy on a zero-copy view of the input; the result is copied back with copy_, which the audit treats as a plain copy.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_np = torch.builtins.__import__("numpy")


@triton.jit
def finish_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        host = _np.asarray(x)  # no ATen op: Tensor.__array__ shares memory
        out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
        out.copy_(torch.from_numpy(host.sum(axis=1, dtype=host.dtype)))
        n = out.numel()
        finish_kernel[(triton.cdiv(n, 64),)](out, n, BLOCK=64)
        return out
