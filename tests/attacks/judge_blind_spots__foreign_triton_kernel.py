# expect: fail
# task: matmul
# attack: All the multiplications are done by a Triton kernel that is not the candidate's (torch's bundled _bmm_outer_product_kernel, imported through torch.importlib), one outer product per k; the judge fails foreign launches only when no own kernel ran, so the candidate's own kernel that just adds the K slices up makes the borrowed work count as its own.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_lib = torch.importlib.import_module("torch._native.ops.bmm_outer_product.triton_kernels")


@triton.jit
def sum_slices_kernel(p_ptr, c_ptr, K, MN, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(0, K):
        acc += tl.load(p_ptr + k * MN + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        partial = torch.empty((K, M, N), dtype=a.dtype, device=a.device)
        BM, BN = 32, 64
        tiles = K * triton.cdiv(M, BM) * triton.cdiv(N, BN)
        _lib._bmm_outer_product_kernel[(tiles,)](
            a, b, partial, K, M, N,
            a.stride(1), a.stride(0), b.stride(0), b.stride(1),
            partial.stride(0), partial.stride(1), partial.stride(2),
            BLOCK_M=BM, BLOCK_N=BN,
        )
        c = torch.empty((M, N), dtype=a.dtype, device=a.device)
        sum_slices_kernel[(triton.cdiv(M * N, 256),)](partial, c, K, M * N, BLOCK=256)
        return c
