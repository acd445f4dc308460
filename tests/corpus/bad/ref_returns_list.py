import torch


class Model(torch.nn.Module):
    def forward(self, x, y):
        return [float(v) for v in (x + y).flatten()[:4]]  # a list of floats, not a tensor


def get_inputs():
    return [torch.randn(64), torch.randn(64)]


def get_init_inputs():
    return []
