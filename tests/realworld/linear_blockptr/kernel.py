# expect: pass
# constructs: block pointers (tl.make_block_ptr, tl.advance, boundary_check, padding_option), triton.__version__ parsed to pick the block-pointer kernel or a plain-pointer kernel (Triton 3.9 removed block pointers), weight read transposed through swapped strides, single-config @triton.autotune built by a function on both kernels, helper @triton.jit activation function, fused bias + relu epilogue, nn.Linear kept only as the parameter holder
# note: on Triton >= 3.9 (the installed 3.9 too) the plain-pointer kernel runs; the block-pointer kernel runs on older Triton (checked on a GPU with Triton 3.6)
import torch
import torch.nn as nn
import triton
import triton.language as tl


TRITON_VERSION = tuple(int(p) for p in triton.__version__.split("+")[0].split(".")[:2])
# Triton 3.9 removed block pointers in favour of tensor descriptors: tl.make_block_ptr raises there
HAS_BLOCK_PTR = TRITON_VERSION < (3, 9)


def get_autotune_config():
    return [triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_stages=3, num_warps=4)]


@triton.jit
def relu(x):
    return tl.maximum(x, 0.0)


@triton.autotune(configs=get_autotune_config(), key=["M", "N", "K"])
@triton.jit
def linear_bias_relu_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,
    M, N, K,
    stride_xm, stride_xk,
    stride_wk, stride_wn,
    stride_ym, stride_yn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x_block = tl.make_block_ptr(
        base=x_ptr, shape=(M, K), strides=(stride_xm, stride_xk),
        offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K), order=(1, 0),
    )
    # W is (N, K) in memory; read it as (K, N) by swapping the strides
    w_block = tl.make_block_ptr(
        base=w_ptr, shape=(K, N), strides=(stride_wk, stride_wn),
        offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N), order=(0, 1),
    )
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(x_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(w_block, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a, b, input_precision="ieee")
        x_block = tl.advance(x_block, (0, BLOCK_K))
        w_block = tl.advance(w_block, (BLOCK_K, 0))

    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    bias = tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    acc = relu(acc + bias[None, :])

    y_block = tl.make_block_ptr(
        base=y_ptr, shape=(M, N), strides=(stride_ym, stride_yn),
        offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0),
    )
    tl.store(y_block, acc.to(y_ptr.dtype.element_ty), boundary_check=(0, 1))


@triton.autotune(configs=get_autotune_config(), key=["M", "N", "K"])
@triton.jit
def linear_bias_relu_kernel_ptrs(
    x_ptr, w_ptr, b_ptr, y_ptr,
    M, N, K,
    stride_xm, stride_xk,
    stride_wk, stride_wn,
    stride_ym, stride_yn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + ks[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(w_ptr + ks[:, None] * stride_wk + offs_n[None, :] * stride_wn,
                    mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    bias = tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    acc = relu(acc + bias[None, :])
    y_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn,
             acc.to(y_ptr.dtype.element_ty), mask=y_mask)


def linear_bias_relu(x, weight, bias):
    lead = x.shape[:-1]
    K = x.shape[-1]
    x2d = x.contiguous().view(-1, K)
    M = x2d.shape[0]
    N = weight.shape[0]
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    kernel = linear_bias_relu_kernel if HAS_BLOCK_PTR else linear_bias_relu_kernel_ptrs
    kernel[grid](
        x2d, weight, bias, y,
        M, N, K,
        x2d.stride(0), x2d.stride(1),
        weight.stride(1), weight.stride(0),
        y.stride(0), y.stride(1),
    )
    return y.view(*lead, N)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return linear_bias_relu(x, self.linear.weight, self.linear.bias)
