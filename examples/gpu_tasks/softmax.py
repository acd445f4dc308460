"""Row-wise softmax at a GPU-sized shape (the figure GPU.md quotes for torch.compile). Too big for the CPU interpreter."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(8192, 4096)]


def get_init_inputs():
    return []
