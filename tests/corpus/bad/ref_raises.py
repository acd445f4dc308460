import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x @ torch.ones(3, 3)  # wrong inner size for the inputs below


def get_inputs():
    return [torch.randn(4, 5)]


def get_init_inputs():
    return []
