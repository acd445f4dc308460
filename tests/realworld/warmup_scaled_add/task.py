import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, residual):
        return x + self.alpha * residual


def get_inputs():
    return [torch.randn(37, 131), torch.randn(37, 131)]


def get_init_inputs():
    return [0.5]
