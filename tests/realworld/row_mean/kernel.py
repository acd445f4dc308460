# expect: pass
# constructs: autotune configs from a list comprehension of triton.Config filtered with filter(...) (3 configs survive), key=["n_cols"], looped row-wise sum then divide (mean), reshape of leading dims
# note: multi-config autotune
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _keep(config):
    # at least 32 elements per warp, otherwise most lanes idle
    return config.kwargs["BLOCK_N"] // config.num_warps >= 32


_CONFIGS = list(
    filter(
        _keep,
        [triton.Config({"BLOCK_N": block_n}, num_warps=w) for block_n in (128, 256) for w in (4, 8)],
    )
)


@triton.autotune(configs=_CONFIGS, key=["n_cols"])
@triton.jit
def row_mean_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * stride_row
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        acc += tl.load(base + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + row, total / n_cols)


def row_mean(x):
    n_cols = x.shape[-1]
    lead = x.shape[:-1]
    x2d = x.contiguous().view(-1, n_cols)
    n_rows = x2d.shape[0]
    out = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    row_mean_kernel[(n_rows,)](x2d, out, n_cols, x2d.stride(0))
    return out.view(lead)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return row_mean(x)
