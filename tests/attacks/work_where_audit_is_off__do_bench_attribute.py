# expect: fail
# task: matmul
# attack: Against the allowlist lint: do_bench= is refused as an autotune keyword, but assigning kernel._do_bench after decoration is not (an assigned attribute name joins the allowlist, and the target is not a module); with a per-call tuning key, Triton re-benchmarks every call, and the matmul runs in torch inside the benchmark, which the probe still leaves unaudited.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_PENDING = []


def _measure(kernel_call, quantiles=None, **kwargs):
    while _PENDING:
        a, b, c = _PENDING.pop()
        torch.mm(a, b, out=c)
    return [1.0, 1.0, 1.0]


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
    key=["salt"],
)
@triton.jit
def epilogue_kernel(c_ptr, n, salt, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c_ptr + offs, tl.load(c_ptr + offs, mask=mask) * 1.0, mask=mask)


epilogue_kernel._do_bench = _measure


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a, b):
        self.calls += 1
        c = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
        _PENDING.append((a, b, c))
        n = c.numel()
        epilogue_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](c, n, self.calls)
        return c
