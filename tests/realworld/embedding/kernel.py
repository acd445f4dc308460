# expect: pass
# constructs: embedding-style gather with an int64 index input, math.prod over the index shape, 2D launch grid (token blocks x embedding-dim blocks), nn.Embedding kept only as the weight holder, output shape from shape arithmetic
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def embedding_forward_kernel(
    embeddings_ptr,
    indices_ptr,
    output_ptr,
    n_elements,
    embedding_dim,
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offsets_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    mask_m = offsets_m < n_elements
    indices = tl.load(indices_ptr + offsets_m, mask=mask_m, other=0)
    offsets_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    mask_n = offsets_n < embedding_dim
    mask = mask_m[:, None] & mask_n[None, :]
    embedding_offsets = indices[:, None] * embedding_dim + offsets_n[None, :]
    embeddings = tl.load(embeddings_ptr + embedding_offsets, mask=mask, other=0.0)
    output_offsets = offsets_m[:, None].to(tl.int64) * embedding_dim + offsets_n[None, :]
    tl.store(output_ptr + output_offsets, embeddings, mask=mask)


def embedding_forward(weight, indices):
    weight = weight.contiguous()
    ori_shape = indices.shape
    indices = indices.contiguous().view(-1)
    n_elements = math.prod(ori_shape)
    embedding_dim = weight.shape[1]
    output = torch.empty((n_elements, embedding_dim), dtype=weight.dtype, device=weight.device)
    BLOCK_SIZE_M = min(64, triton.next_power_of_2(n_elements))
    BLOCK_SIZE_N = min(128, triton.next_power_of_2(embedding_dim))
    grid = (triton.cdiv(n_elements, BLOCK_SIZE_M), triton.cdiv(embedding_dim, BLOCK_SIZE_N))
    embedding_forward_kernel[grid](
        weight, indices, output, n_elements, embedding_dim,
        BLOCK_SIZE_M=BLOCK_SIZE_M, BLOCK_SIZE_N=BLOCK_SIZE_N,
    )
    return output.view(*ori_shape, embedding_dim)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, input_ids):
        return embedding_forward(self.embedding.weight, input_ids)
