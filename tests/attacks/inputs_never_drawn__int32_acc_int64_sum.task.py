import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)  # int32 in, int64 out


def get_inputs():
    return [torch.randint(-1000, 1000, (32, 64), dtype=torch.int32)]


def get_init_inputs():
    return []
