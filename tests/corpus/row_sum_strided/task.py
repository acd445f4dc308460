import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=1)


def get_inputs():
    return [torch.randn(257, 33).t()]  # non-contiguous (33, 257) view, as a user's data may be


def get_init_inputs():
    return []
