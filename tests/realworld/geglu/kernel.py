# expect: pass
# constructs: libdevice.tanh via `from triton.language.extra import libdevice`, functools.partial binding the approximation mode of a host launcher, tl.constexpr string switch inside the kernel, calculate_settings(n) helper returning (BLOCK_SIZE, num_warps)
# gpu-only: libdevice calls are not implemented by Triton 3.9's CPU interpreter (its stubs return None)
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice

MAX_FUSED_SIZE = 65536


def calculate_settings(n):
    BLOCK_SIZE = triton.next_power_of_2(n)
    if BLOCK_SIZE > MAX_FUSED_SIZE:
        raise RuntimeError(f"geglu: {n} columns exceed the fused limit {MAX_FUSED_SIZE}")
    num_warps = 4
    if BLOCK_SIZE >= 32768:
        num_warps = 32
    elif BLOCK_SIZE >= 8192:
        num_warps = 16
    elif BLOCK_SIZE >= 2048:
        num_warps = 8
    return BLOCK_SIZE, num_warps


@triton.jit
def _geglu_forward_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    stride,
    n_cols,
    APPROXIMATE: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    a_ptr += row * stride
    b_ptr += row * stride
    c_ptr += row * stride
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    a = tl.load(a_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    if APPROXIMATE == "tanh":
        sqrt_2_over_pi = 0.7978845608028654
        inner = sqrt_2_over_pi * (a + 0.044715 * a * a * a)
        gelu_a = 0.5 * a * (1.0 + libdevice.tanh(inner))
    else:
        gelu_a = 0.5 * a * (1.0 + tl.math.erf(a * 0.7071067811865476))
    tl.store(c_ptr + cols, gelu_a.to(b.dtype) * b, mask=mask)


def geglu_forward(a, b, approximate="none"):
    assert a.shape == b.shape
    ori_shape = a.shape
    n_cols = ori_shape[-1]
    a = a.contiguous().view(-1, n_cols)
    b = b.contiguous().view(-1, n_cols)
    c = torch.empty_like(a)
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    _geglu_forward_kernel[(a.shape[0],)](
        a, b, c, c.stride(0), n_cols,
        APPROXIMATE=approximate, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps,
    )
    return c.view(*ori_shape)


geglu_tanh = functools.partial(geglu_forward, approximate="tanh")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, gate, up):
        return geglu_tanh(gate, up)
