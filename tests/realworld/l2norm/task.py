import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, eps=1e-12):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        return F.normalize(x, p=2.0, dim=-1, eps=self.eps)


def get_inputs():
    return [torch.randn(40, 192) * 0.5]


def get_init_inputs():
    return [1e-12]
