import torch
import torch.nn as nn


class Model(nn.Module):
    """Scale each row to unit RMS (no epsilon: the task promises nothing about magnitudes)."""

    def forward(self, x):
        return x / torch.sqrt((x * x).mean(dim=1, keepdim=True))


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return []
