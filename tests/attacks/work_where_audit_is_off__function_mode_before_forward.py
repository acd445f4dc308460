# expect: fail
# task: add_relu
# attack: A TorchFunctionMode entered at import stays active; it sees the judge clone each input just before the audited call and computes relu(x + y) with torch right then, outside the audit, so forward only copies the precomputed result with its own kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_SEEN = []
_READY = {}


class _Watcher(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        if func is torch.Tensor.clone and args and args[0].dim() == 2:
            _SEEN.append(args[0])
            if len(_SEEN) >= 2:
                x, y = _SEEN[-2], _SEEN[-1]
                if x.shape == y.shape:
                    _READY[(x.data_ptr(), y.data_ptr())] = torch.relu(x + y)
        return result


_Watcher().__enter__()


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        src = _READY.pop((x.data_ptr(), y.data_ptr()))
        out = torch.empty_like(x)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](src, out, n, BLOCK=1024)
        return out
