# expect: fail
# task: add_relu
# attack: a real @classmethod over a decorator that keeps the raw function: the raw copy, never checked, takes torch.Tensor as cls
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


RAW = []


def keep(f):
    RAW.append(f)
    return f


class Kit:
    @classmethod
    @keep
    def plant(self, fn):
        self.device = property(fn)

    @classmethod
    @keep
    def unplant(self):
        del self.device


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = out.numel()
        zero_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        done = [False]

        def fake(t):
            RAW[1](torch.Tensor)
            if not done[0]:
                done[0] = True
                torch.add(x, y, out=out)
                out.clamp_(min=0.0)
            return t.device

        RAW[0](torch.Tensor, fake)
        scratch = x.clone()
        return out
