import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, ignore_index=-100):
        super().__init__()
        self.ignore_index = ignore_index

    def forward(self, logits, target):
        return F.cross_entropy(logits, target, ignore_index=self.ignore_index)


def get_inputs():
    n_tokens, vocab = 24, 1000
    logits = torch.randn(n_tokens, vocab) * 2.0
    target = torch.randint(0, vocab, (n_tokens,), dtype=torch.int64)
    return [logits, target]


def get_init_inputs():
    return [-100]
