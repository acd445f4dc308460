# expect: pass
# constructs: torch.autograd.Function whose forward goes through an ensure_contiguous decorator with a nested wrapper(ctx, *args), @triton.jit(do_not_specialize=[...]), logging
"""RMSNorm, Liger-Kernel style: an autograd.Function with an ensure_contiguous decorator,
a do_not_specialize'd eps and logging of the launch settings."""
import functools
import logging

import torch
import torch.nn as nn
import triton
import triton.language as tl

log = logging.getLogger("rmsnorm_triton")


def ensure_contiguous(fn):
    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        def maybe_to_contiguous(x):
            return x.contiguous() if isinstance(x, torch.Tensor) else x

        args = [maybe_to_contiguous(arg) for arg in args]
        kwargs = {k: maybe_to_contiguous(v) for k, v in kwargs.items()}
        return fn(ctx, *args, **kwargs)

    return wrapper


@triton.jit(do_not_specialize=["eps"])
def _rms_norm_forward_kernel(Y_ptr, X_ptr, W_ptr, RSTD_ptr, stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(X_ptr + row * stride + offs, mask=mask, other=0.0)
    xf = x.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(xf * xf, axis=0) / n_cols + eps)
    tl.store(RSTD_ptr + row, rstd)
    normed = (xf * rstd).to(x.dtype)
    w = tl.load(W_ptr + offs, mask=mask, other=0.0)
    y = w.to(tl.float32) * normed.to(tl.float32)
    tl.store(Y_ptr + row * stride + offs, y.to(Y_ptr.dtype.element_ty), mask=mask)


class TritonRMSNormFunction(torch.autograd.Function):
    @staticmethod
    @ensure_contiguous
    def forward(ctx, X, W, eps):
        shape = X.shape
        X = X.view(-1, shape[-1])
        n_rows, n_cols = X.shape
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        num_warps = 8 if BLOCK_SIZE >= 2048 else 4
        log.debug("rmsnorm launch: rows=%d cols=%d BLOCK_SIZE=%d warps=%d", n_rows, n_cols, BLOCK_SIZE, num_warps)
        out_dtype = torch.float32 if W.dtype == torch.float32 else X.dtype
        Y = torch.empty((n_rows, n_cols), dtype=out_dtype, device=X.device)
        RSTD = torch.empty(n_rows, dtype=torch.float32, device=X.device)
        _rms_norm_forward_kernel[(n_rows,)](Y, X, W, RSTD, X.stride(0), n_cols, eps,
                                            BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
        ctx.save_for_backward(X, W, RSTD)
        ctx.eps = eps
        return Y.view(*shape)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        return TritonRMSNormFunction.apply(hidden_states, self.weight, self.variance_epsilon)
