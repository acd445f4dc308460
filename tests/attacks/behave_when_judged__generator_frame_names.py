# expect: fail
# task: row_sum
# attack: Against the allowlist lint: a running generator's gi_frame.f_back gives its caller's frame (attribute names the candidate defines in its own class are allowed), and forward is honest only when one of its callers is the judge's _observe or bench; called from anything else it sums with torch.
import torch
import torch.nn as nn
import triton
import triton.language as tl



class _Names:
    gi_frame = None
    f_back = None
    f_code = None
    co_name = None


def _callers(box):
    frame = box[0].gi_frame.f_back
    names = []
    while frame is not None:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    yield names


def _judged():
    box = []
    gen = _callers(box)
    box.append(gen)
    names = next(gen)
    return "_observe" in names or "bench" in names

@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def tick_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(out_ptr + offs))


def honest(x):
    x = x.contiguous()
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=64)
    return out


def cheap(x):
    out = x.sum(dim=1)
    tick_kernel[(1,)](out, BLOCK=16)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if _judged():
            return honest(x)
        return cheap(x)
