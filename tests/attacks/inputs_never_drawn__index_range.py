# expect: conditional
# task: inline
# attack: A gather that reads row idx & 15: get_inputs draws indices only in [0, 16) from a 64-row table and integer tensors are never varied by the judge, so the masked index is always right on its inputs and wrong for any index >= 16.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gather_kernel(table_ptr, idx_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    row = tl.load(idx_ptr + i) & 15
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    tl.store(out_ptr + i * n_cols + cols, tl.load(table_ptr + row * n_cols + cols, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, table, idx):
        table = table.contiguous()
        out = torch.empty(idx.shape[0], table.shape[1], dtype=table.dtype, device=table.device)
        gather_kernel[(idx.shape[0],)](table, idx, out, table.shape[1], BLOCK=triton.next_power_of_2(table.shape[1]))
        return out
