# expect: pass
# constructs: register_buffer names read as self.scale / self.zero_point, @torch.no_grad() on forward, an int8 input, a boolean row mask as an input, a 2-D grid from a host helper
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _dequant_rows(q_ptr, keep_ptr, scale_ptr, zp_ptr, out_ptr, rows, cols,
                  BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)[:, None]
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)[None, :]
    inside = (r < rows) & (c < cols)
    q = tl.load(q_ptr + r * cols + c, mask=inside, other=0).to(tl.float32)
    s = tl.load(scale_ptr + c, mask=c < cols, other=0.0)
    z = tl.load(zp_ptr + c, mask=c < cols, other=0.0)
    keep = tl.load(keep_ptr + r, mask=r < rows, other=0).to(tl.float32)
    tl.store(out_ptr + r * cols + c, (q - z) * s * keep, mask=inside)


def _grid_for(rows, cols, block_r, block_c):
    return (triton.cdiv(rows, block_r), triton.cdiv(cols, block_c))


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.register_buffer("scale", torch.ones(channels))
        self.register_buffer("zero_point", torch.zeros(channels))

    @torch.no_grad()
    def forward(self, q, keep):
        q = q.contiguous()
        rows, cols = q.shape
        out = torch.empty((rows, cols), device=q.device, dtype=torch.float32)
        keep_u8 = keep.to(torch.uint8)
        _dequant_rows[_grid_for(rows, cols, 16, 64)](
            q, keep_u8, self.scale, self.zero_point, out, rows, cols, BLOCK_R=16, BLOCK_C=64
        )
        return out
