# expect: pass
# constructs: torch.promote_types for the output dtype (a dtype query, no data), fp16 input with an fp32 weight, eps from the constructor
"""RMSNorm, unsloth/Liger style: cast to fp32, normalize, cast back, multiply by weight."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms_norm_fwd(
    Y, Y_row_stride, X, X_row_stride, W, n_cols, eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X + row * X_row_stride + cols, mask=mask, other=0.0)
    x_f32 = x.to(tl.float32)
    mean_sq = tl.sum(x_f32 * x_f32, axis=0) / n_cols
    inv_rms = tl.math.rsqrt(mean_sq + eps)
    normed = (x_f32 * inv_rms).to(x.dtype)          # like hidden_states.to(input_dtype)
    w = tl.load(W + cols, mask=mask, other=0.0)     # fp32 weight
    y = w * normed.to(tl.float32)                   # promoted to fp32 as in torch
    tl.store(Y + row * Y_row_stride + cols, y.to(Y.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        shape = hidden_states.shape
        x = hidden_states.reshape(-1, shape[-1])
        n_rows, n_cols = x.shape
        out_dtype = torch.promote_types(self.weight.dtype, hidden_states.dtype)
        y = torch.empty((n_rows, n_cols), dtype=out_dtype, device=x.device)
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        _rms_norm_fwd[(n_rows,)](
            y, y.stride(0), x, x.stride(0), self.weight, n_cols, self.variance_epsilon,
            BLOCK_SIZE=BLOCK_SIZE, num_warps=4,
        )
        return y.view(shape)
