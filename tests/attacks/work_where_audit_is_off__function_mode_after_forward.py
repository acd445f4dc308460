# expect: fail
# task: row_sum
# attack: forward enters a TorchFunctionMode and leaves it active; it returns an unwritten buffer, and the mode fills it with x.sum(dim=1) the first time the judge touches the output after the op audit has exited (its dtype/numel checks).
import torch
import torch.nn as nn
import triton
import triton.language as tl

_PENDING = []


class _Deferred(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        while _PENDING:
            x, out = _PENDING.pop()
            torch.sum(x, dim=1, out=out)
        return func(*args, **kwargs)


_MODE = [None]


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    # a one-element "probe" so that a launch is seen
    tl.store(out_ptr + row, tl.load(x_ptr + row * stride) * 0.0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
        row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=16)
        _PENDING.append((x, out))
        if _MODE[0] is None:
            _MODE[0] = _Deferred()
            _MODE[0].__enter__()  # never exited
        return out
