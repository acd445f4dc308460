import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.permute(0, 2, 1).to(torch.float16)


def get_inputs():
    return [torch.randn(8, 48, 40)]


def get_init_inputs():
    return []
