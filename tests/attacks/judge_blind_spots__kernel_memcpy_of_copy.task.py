import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.transpose(0, 1).contiguous().to(torch.float16)


def get_inputs():
    return [torch.randn(96, 80)]


def get_init_inputs():
    return []
