# expect: pass
# constructs: kernel.warmup(..., grid=...) ahead-of-time compile returning a CompiledKernel, compiled[grid](...) launch with a 3-tuple grid, module-level dict of compiled kernels keyed by dtype/device/specialisation, functools.reduce(operator.mul) numel
# gpu-only: warmup needs a GPU (the CPU interpreter's warmup compiles nothing and returns None)
import functools
import operator

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 1024


@triton.jit
def scaled_add_kernel(x_ptr, r_ptr, out_ptr, n_elements, alpha, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    r = tl.load(r_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + alpha * r, mask=mask)


# compiled kernels, one per dtype, device and the integer/pointer specialisations Triton makes
_compiled_cache = {}


def _specialisation(x, r, out, n_elements):
    return (
        x.dtype,
        x.device,
        n_elements % 16 == 0,
        n_elements == 1,
        tuple(t.data_ptr() % 16 == 0 for t in (x, r, out)),
    )


def _get_compiled(x, r, out, n_elements, alpha):
    key = _specialisation(x, r, out, n_elements)
    compiled = _compiled_cache.get(key)
    if compiled is None:
        compiled = scaled_add_kernel.warmup(
            x, r, out, n_elements, alpha, BLOCK_SIZE=BLOCK_SIZE, grid=(1,)
        )
        _compiled_cache[key] = compiled
    return compiled


def scaled_add(x, r, alpha):
    x = x.contiguous()
    r = r.contiguous()
    out = torch.empty_like(x)
    n_elements = functools.reduce(operator.mul, x.shape, 1)
    compiled = _get_compiled(x, r, out, n_elements, alpha)
    grid = (triton.cdiv(n_elements, BLOCK_SIZE), 1, 1)
    compiled[grid](x, r, out, n_elements, alpha, BLOCK_SIZE)
    return out


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, residual):
        return scaled_add(x, residual, self.alpha)
