# expect: fail
# task: row_sum
# attack: each row is split over 9 programs that add their partial sums into out[row] with a plain tl.load + tl.store (no atomic_add): a lost-update race on any GPU, but Triton's CPU interpreter runs a grid's programs one after another, so the verdict on the CPU (the only place the race cannot happen) is pass.
# limit: Triton's CPU interpreter runs a grid's programs one after another, so a race between programs cannot happen there; the GPU verdict (tests/gpu, run_attacks.py --device cuda) is the one that sees it
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def racy_row_sum(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    offs = chunk * BLOCK + tl.arange(0, BLOCK)
    part = tl.sum(tl.load(x_ptr + row * N + offs, mask=offs < N, other=0.0), axis=0)
    acc = tl.load(out_ptr + row)  # read-modify-write across programs: a race on a GPU
    tl.store(out_ptr + row, acc + part)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        M, N = x.shape
        out = torch.zeros((M,), dtype=x.dtype, device=x.device)
        racy_row_sum[(M, triton.cdiv(N, 32))](x, out, N, BLOCK=32)
        return out
