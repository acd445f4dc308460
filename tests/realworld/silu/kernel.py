# expect: pass
# constructs: triton.jit in call form, triton.heuristics({...})(fn) in call form, triton.autotune(configs=get_autotune_config(), key=[...])(fn) in call form with a single config, EVEN_N heuristic skipping the mask, x * sigmoid(x)
import torch
import torch.nn as nn
import triton
import triton.language as tl


def get_autotune_config():
    return [triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)]


def _silu_kernel_impl(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN_N: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN_N:
        x = tl.load(x_ptr + offsets).to(tl.float32)
    else:
        x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0).to(tl.float32)
    y = x * tl.sigmoid(x)
    if EVEN_N:
        tl.store(y_ptr + offsets, y)
    else:
        tl.store(y_ptr + offsets, y, mask=offsets < n_elements)


_silu_jit = triton.jit(_silu_kernel_impl)
_silu_heuristics = triton.heuristics({"EVEN_N": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0})(_silu_jit)
silu_kernel = triton.autotune(configs=get_autotune_config(), key=["n_elements"])(_silu_heuristics)


def silu(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    silu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, n)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return silu(x)
