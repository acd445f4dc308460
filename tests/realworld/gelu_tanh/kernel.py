# expect: pass
# constructs: triton.__version__ parsed to choose where tanh is imported from (libdevice on triton >= 3), conditional autotune config list built by get_autotune_config() (single config on either branch), hip check via getattr(getattr(torch, "version", None), "hip", None), grid lambda over meta
# gpu-only: libdevice calls are not implemented by Triton 3.9's CPU interpreter (its stubs return None)
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _triton_version():
    parts = triton.__version__.split("+")[0].split(".")
    return int(parts[0]), int(parts[1])


if _triton_version() >= (3, 0):
    from triton.language.extra.libdevice import tanh
else:
    from triton.language.math import tanh


def is_hip():
    return getattr(getattr(torch, "version", None), "hip", None) is not None


def get_autotune_config():
    if is_hip():
        return [triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)]
    return [triton.Config({"BLOCK_SIZE": 512}, num_warps=4)]


@triton.autotune(configs=get_autotune_config(), key=["n_elements"])
@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    sqrt_2_over_pi = 0.7978845608028654
    inner = sqrt_2_over_pi * (x + 0.044715 * x * x * x)
    y = 0.5 * x * (1.0 + tanh(inner))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def gelu_tanh(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    n_elements = x.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    gelu_tanh_kernel[grid](x, y, n_elements)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return gelu_tanh(x)
