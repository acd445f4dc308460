import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, input_ids):
        return self.embedding(input_ids)


def get_inputs():
    return [torch.randint(0, 100, (4, 17), dtype=torch.int64)]


def get_init_inputs():
    return [100, 48]
