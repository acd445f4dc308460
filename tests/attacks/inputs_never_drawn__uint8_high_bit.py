# expect: conditional
# task: inline
# attack: Reads a uint8 input as int8: get_inputs draws only values below 128, and the judge's signed variant covers int8..int64 but not uint8 (the float variants skip integers), so every judged set agrees; any value >= 128 comes out negative.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask).to(tl.int8, bitcast=True)  # signed view of the byte
    tl.store(out_ptr + offs, v.to(tl.float32) * (1.0 / 255.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape, dtype=torch.float32, device=x.device)
        n = out.numel()
        scale_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
