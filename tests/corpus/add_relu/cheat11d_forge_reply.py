# expect: fail forbidden_import
import torch
import torch.nn as nn
import triton
import triton.language as tl
import autotriton_jupyter.verify.worker as W

K = W.WorkerState
_orig = K.op_run


def _op_run(self, msg):
    reply = _orig(self, msg)
    for run in reply["runs"]:
        obs = run.get("obs")
        if obs is not None:
            obs["launches"] = {"add_relu_kernel": 1}
            obs["compute_ops"] = {}
    return reply


K.op_run = _op_run


@triton.jit
def add_relu_kernel(x_ptr, BLOCK: tl.constexpr):
    pass  # never launched


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.relu(x + y)
