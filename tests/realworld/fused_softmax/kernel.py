# expect: pass
# constructs: next_power_of_2 block size, num_warps from a size table, hip check via getattr(getattr(torch, "version", None), "hip", None), contextlib.nullcontext / torch.cuda.device guard, persistent row loop with tl.range and tl.num_programs
import contextlib

import torch
import torch.nn as nn
import triton
import triton.language as tl


def is_hip() -> bool:
    return getattr(getattr(torch, "version", None), "hip", None) is not None


# (largest block, num_warps): wider rows get more warps
_WARPS_BY_BLOCK = (
    (1024, 4),
    (4096, 8),
    (16384, 16),
)


def num_warps_for(block_size: int) -> int:
    for limit, warps in _WARPS_BY_BLOCK:
        if block_size <= limit:
            return warps
    return 32


@triton.jit
def softmax_kernel(
    output_ptr,
    input_ptr,
    input_row_stride,
    output_row_stride,
    n_rows,
    n_cols,
    BLOCK_SIZE: tl.constexpr,
):
    # each program walks over rows start, start + step, ...
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        tl.store(output_row_start_ptr + col_offsets, softmax_output, mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    n_cols = x.shape[-1]
    x2d = x.contiguous().view(-1, n_cols)
    n_rows = x2d.shape[0]
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = num_warps_for(BLOCK_SIZE)
    if is_hip():
        # wavefronts are 64 wide on AMD: half as many warps cover a row
        num_warps = max(num_warps // 2, 1)
    y = torch.empty_like(x2d)
    num_programs = min(n_rows, 64)
    guard = torch.cuda.device(x.device) if x.is_cuda else contextlib.nullcontext()
    with guard:
        softmax_kernel[(num_programs,)](
            y,
            x2d,
            x2d.stride(0),
            y.stride(0),
            n_rows,
            n_cols,
            BLOCK_SIZE=BLOCK_SIZE,
            num_warps=num_warps,
        )
    return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return softmax(x)
