# expect: pass
# constructs: split row reduction with tl.atomic_add into a zero-initialised output (torch.zeros), @triton.autotune with 2 configs, prune_configs_by={"early_config_prune": ...} and reset_to_zero=[...], key=[...], 2D launch grid from a grid lambda over meta
# note: multi-config autotune
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _prune_configs(configs, named_args, **kwargs):
    # a split wider than the row only adds empty programs
    n_cols = named_args["n_cols"]
    kept = [c for c in configs if c.kwargs["BLOCK_N"] <= max(triton.next_power_of_2(n_cols), 64)]
    return kept or configs[:1]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_N": 64}, num_warps=2),
        triton.Config({"BLOCK_N": 256}, num_warps=4),
    ],
    key=["n_cols"],
    prune_configs_by={"early_config_prune": _prune_configs},
    reset_to_zero=["out_ptr"],
)
@triton.jit
def split_row_sum_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    split = tl.program_id(1)
    cols = split * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    tl.atomic_add(out_ptr + row, tl.sum(x, axis=0))


def row_sum(x):
    n_cols = x.shape[-1]
    x2d = x.contiguous().view(-1, n_cols)
    n_rows = x2d.shape[0]
    out = torch.zeros(n_rows, dtype=torch.float32, device=x.device)
    grid = lambda meta: (n_rows, triton.cdiv(n_cols, meta["BLOCK_N"]))  # noqa: E731
    split_row_sum_kernel[grid](x2d, out, n_cols, x2d.stride(0))
    return out.view(x.shape[:-1])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return row_sum(x)
