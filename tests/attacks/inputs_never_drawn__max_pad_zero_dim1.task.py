import torch
import torch.nn as nn


class Model(nn.Module):
    """KernelBench-style max reduction over dim 1 of a (batch, dim1, dim2) tensor."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.max(x, dim=self.dim)[0]


def get_inputs():
    return [torch.randn(8, 64, 48)]


def get_init_inputs():
    return [1]
