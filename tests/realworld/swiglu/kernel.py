# expect: pass
# constructs: triton.jit in call form (kernel = triton.jit(_impl)), torch.__version__ parsed and compared to pick torch.amp.custom_fwd vs torch.cuda.amp.custom_fwd, torch.autograd.Function wrapper with a backward kernel, calculate_settings(n) helper returning (BLOCK_SIZE, num_warps), helper @triton.jit device function
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _version_tuple(v):
    parts = []
    for piece in v.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


if _version_tuple(torch.__version__) >= (2, 4, 0):
    amp_custom_fwd = torch.amp.custom_fwd(device_type="cuda")
    amp_custom_bwd = torch.amp.custom_bwd(device_type="cuda")
else:
    amp_custom_fwd = torch.cuda.amp.custom_fwd
    amp_custom_bwd = torch.cuda.amp.custom_bwd

MAX_FUSED_SIZE = 65536


def calculate_settings(n):
    BLOCK_SIZE = triton.next_power_of_2(n)
    if BLOCK_SIZE > MAX_FUSED_SIZE:
        raise RuntimeError(f"swiglu: hidden size {n} is over the fused limit {MAX_FUSED_SIZE}")
    num_warps = 4
    if BLOCK_SIZE >= 32768:
        num_warps = 32
    elif BLOCK_SIZE >= 8192:
        num_warps = 16
    elif BLOCK_SIZE >= 2048:
        num_warps = 8
    return BLOCK_SIZE, num_warps


@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


def _swiglu_forward_impl(a_ptr, b_ptr, c_ptr, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    a_ptr += program_id * stride
    b_ptr += program_id * stride
    c_ptr += program_id * stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    # sigmoid wants fp32
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b_ptr + col_offsets, mask=mask, other=0)
    c_row = silu(a_row).to(b_row.dtype) * b_row
    tl.store(c_ptr + col_offsets, c_row, mask=mask)


def _swiglu_backward_impl(dc_ptr, a_ptr, b_ptr, da_ptr, db_ptr, stride, n_cols: tl.constexpr,
                          BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    dc_ptr += program_id * stride
    a_ptr += program_id * stride
    b_ptr += program_id * stride
    da_ptr += program_id * stride
    db_ptr += program_id * stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    dc_row = tl.load(dc_ptr + col_offsets, mask=mask, other=0)
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b_ptr + col_offsets, mask=mask, other=0)
    sig_a = tl.sigmoid(a_row)
    silu_a = a_row * sig_a
    db_row = dc_row * silu_a
    da_row = dc_row * (silu_a * (1 - sig_a) + sig_a) * b_row
    tl.store(da_ptr + col_offsets, da_row, mask=mask)
    tl.store(db_ptr + col_offsets, db_row, mask=mask)


_swiglu_forward_kernel = triton.jit(_swiglu_forward_impl)
_swiglu_backward_kernel = triton.jit(_swiglu_backward_impl)


def swiglu_forward(a, b):
    ori_shape = a.shape
    n_cols = ori_shape[-1]
    a = a.contiguous().view(-1, n_cols)
    b = b.contiguous().view(-1, n_cols)
    c = torch.empty_like(a)
    n_rows = a.shape[0]
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    _swiglu_forward_kernel[(n_rows,)](
        a, b, c, c.stride(-2), n_cols=n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
    )
    return a, b, c.view(*ori_shape)


def swiglu_backward(a, b, dc):
    ori_shape = dc.shape
    n_cols = ori_shape[-1]
    dc = dc.contiguous().view(-1, n_cols)
    n_rows = dc.shape[0]
    da = torch.empty_like(a)
    db = torch.empty_like(b)
    BLOCK_SIZE, num_warps = calculate_settings(n_cols)
    _swiglu_backward_kernel[(n_rows,)](
        dc, a, b, da, db, dc.stride(-2), n_cols=n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps
    )
    return da.view(*ori_shape), db.view(*ori_shape)


class SiLUMulFunction(torch.autograd.Function):
    @staticmethod
    @amp_custom_fwd
    def forward(ctx, a, b):
        a, b, c = swiglu_forward(a, b)
        ctx.save_for_backward(a, b)
        return c

    @staticmethod
    @amp_custom_bwd
    def backward(ctx, dc):
        a, b = ctx.saved_tensors
        return swiglu_backward(a, b, dc)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, gate, up):
        return SiLUMulFunction.apply(gate, up)
