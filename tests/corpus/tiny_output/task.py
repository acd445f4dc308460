import torch
import torch.nn as nn


class Model(nn.Module):
    """Outputs around 1e-8: far below atol=1e-2, so zeros would also 'match'."""

    def forward(self, x):
        return x * 1e-8


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return []
