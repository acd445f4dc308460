# expect: fail memory
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def k(p):
    pass


class ModelNew(nn.Module):
    def forward(self, x, y):
        hoard = []
        while True:
            hoard.append(torch.ones(64 * 1024 * 1024, dtype=torch.uint8))
