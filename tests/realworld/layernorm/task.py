import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, hidden_size, eps):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden_size))
        self.bias = nn.Parameter(0.1 * torch.randn(hidden_size))

    def forward(self, x):
        return F.layer_norm(x, (self.hidden_size,), self.weight, self.bias, self.eps)


def get_inputs():
    return [torch.randn(4, 13, 96) * 2.0 + 0.5]


def get_init_inputs():
    return [96, 1e-5]
