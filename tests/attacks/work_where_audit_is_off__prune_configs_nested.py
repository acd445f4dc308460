# expect: fail
# task: add_relu
# attack: Two stacked @triton.autotune decorators: the inner one's prune_configs_by early_config_prune callback computes relu(x + y) with torch, and it is first reached from inside the outer autotuner's benchmark, which the probe treats as not the candidate's work, so the audit never records it.
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _prune(configs, named_args, **kwargs):
    x, y, out = named_args["x_ptr"], named_args["y_ptr"], named_args["out_ptr"]
    torch.add(x, y, out=out).clamp_(min=0.0)
    return configs[:1]


def _run_once(kernel_call, quantiles=None):
    kernel_call()
    return [1.0, 1.0, 1.0]


@triton.autotune(
    configs=[
        triton.Config({"WARPS_HINT": 1}, num_warps=None, num_stages=None, num_ctas=None),
        triton.Config({"WARPS_HINT": 2}, num_warps=None, num_stages=None, num_ctas=None),
    ],
    key=["n"],
    do_bench=_run_once,
)
@triton.autotune(
    configs=[triton.Config({"BLOCK": 512}), triton.Config({"BLOCK": 1024})],
    key=["n"],
    prune_configs_by={"early_config_prune": _prune},
)
@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, WARPS_HINT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(out_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(v, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = out.numel()
        add_relu_kernel.cache.clear()  # outer: benchmark again
        add_relu_kernel.fn.cache.clear()  # inner: prune again (first reached in the benchmark)
        add_relu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
        return out
