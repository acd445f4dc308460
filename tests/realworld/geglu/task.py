import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, gate, up):
        return F.gelu(gate, approximate="tanh") * up


def get_inputs():
    return [torch.randn(24, 300) * 2.0, torch.randn(24, 300)]


def get_init_inputs():
    return []
