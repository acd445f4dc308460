import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.float() * (1.0 / 255.0)


def get_inputs():
    # 7-bit "image" data: the high bit is never set in what get_inputs draws
    return [torch.randint(0, 128, (64, 96), dtype=torch.uint8)]


def get_init_inputs():
    return []
