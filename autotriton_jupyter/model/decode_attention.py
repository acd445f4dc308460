"""Attention for one decode step over a static KV cache, reading only the filled part.

The cache is allocated for the whole answer (thousands of tokens), but at step t only
t keys exist. Attention through a mask reads every slot at every step: at batch 8 with
a 10k-token cache that is as much memory traffic as the weights. This Triton kernel
takes the current length from a device tensor, so it stays inside one CUDA graph, and
each program skips the slots past it (split-K "flash decoding": every program handles
one chunk of keys for the query heads sharing a KV head; a cheap combine follows).
"""

from __future__ import annotations

import os
from typing import Any

import triton
import triton.language as tl


def _tuning() -> tuple[str, int, int, int]:
    """(kernel, keys per program, keys per inner step, warps). The kernel is "dot" (tensor
    cores, the query heads of a KV head padded to 16 rows) or "vec" (CUDA cores).
    AUTOTRITON_DECODE_ATTENTION="dot,64,32,4" overrides them
    (scripts/bench_decode_attention.py measures the choices)."""
    raw = os.environ.get("AUTOTRITON_DECODE_ATTENTION", "")
    try:
        kind, chunk, block, warps = raw.split(",")
        if kind in ("dot", "vec"):
            return kind, int(chunk), int(block), int(warps)
    except ValueError:
        pass
    return "dot", 256, 64, 4  # measured best on the H200 (docs/benchmarks.md)


KIND, CHUNK, BLOCK_N, WARPS = _tuning()


@triton.jit
def _partial_kernel(
    q_ptr,  # [B, H, D]
    k_ptr,  # [B, KV, L, D]
    v_ptr,
    pos_ptr,  # [1] int: the position being decoded; keys 0..pos are live
    acc_ptr,  # [B, H, S, D] float32
    max_ptr,  # [B, H, S] float32
    sum_ptr,  # [B, H, S] float32
    stride_qb,
    stride_qh,
    stride_kb,
    stride_kh,
    stride_kl,
    stride_vb,
    stride_vh,
    stride_vl,
    n_heads,
    n_splits,
    GROUP: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    CHUNK_N: tl.constexpr,
    BLOCK: tl.constexpr,
):
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    live = tl.load(pos_ptr) + 1
    start = split * CHUNK_N
    stop = tl.minimum(start + CHUNK_N, live)
    heads = kvh * GROUP + tl.arange(0, GROUP)
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + b * stride_qb + heads[:, None] * stride_qh + d[None, :]).to(tl.float32)
    m = tl.full([GROUP], -1.0e30, tl.float32)
    den = tl.zeros([GROUP], tl.float32)
    acc = tl.zeros([GROUP, HEAD_DIM], tl.float32)
    k_base = k_ptr + b * stride_kb + kvh * stride_kh
    v_base = v_ptr + b * stride_vb + kvh * stride_vh
    for n0 in range(start, stop, BLOCK):
        n = n0 + tl.arange(0, BLOCK)
        ok = n < stop
        k = tl.load(k_base + n[:, None] * stride_kl + d[None, :], mask=ok[:, None], other=0.0)
        v = tl.load(v_base + n[:, None] * stride_vl + d[None, :], mask=ok[:, None], other=0.0)
        s = tl.sum(q[:, None, :] * k.to(tl.float32)[None, :, :], axis=2)
        s = tl.where(ok[None, :], s, -1.0e30)
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.where(ok[None, :], tl.exp(s - m_new[:, None]), 0.0)
        alpha = tl.exp(m - m_new)
        den = den * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v.to(tl.float32)[None, :, :], axis=1)
        m = m_new
    row = (b * n_heads + heads) * n_splits + split
    tl.store(max_ptr + row, m)
    tl.store(sum_ptr + row, den)
    tl.store(acc_ptr + row[:, None] * HEAD_DIM + d[None, :], acc)


@triton.jit
def _partial_dot_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    pos_ptr,
    acc_ptr,
    max_ptr,
    sum_ptr,
    stride_qb,
    stride_qh,
    stride_kb,
    stride_kh,
    stride_kl,
    stride_vb,
    stride_vh,
    stride_vl,
    n_heads,
    n_splits,
    GROUP: tl.constexpr,
    ROWS: tl.constexpr,  # GROUP padded to at least 16, the smallest tl.dot tile
    HEAD_DIM: tl.constexpr,
    CHUNK_N: tl.constexpr,
    BLOCK: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """The same as _partial_kernel, with both products on tensor cores."""
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    live = tl.load(pos_ptr) + 1
    start = split * CHUNK_N
    stop = tl.minimum(start + CHUNK_N, live)
    r = tl.arange(0, ROWS)
    real = r < GROUP
    heads = kvh * GROUP + r
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + b * stride_qb + heads[:, None] * stride_qh + d[None, :],
        mask=real[:, None],
        other=0.0,
    ).to(k_ptr.dtype.element_ty)
    m = tl.full([ROWS], -1.0e30, tl.float32)
    den = tl.zeros([ROWS], tl.float32)
    acc = tl.zeros([ROWS, HEAD_DIM], tl.float32)
    k_base = k_ptr + b * stride_kb + kvh * stride_kh
    v_base = v_ptr + b * stride_vb + kvh * stride_vh
    for n0 in range(start, stop, BLOCK):
        n = n0 + tl.arange(0, BLOCK)
        ok = n < stop
        k = tl.load(k_base + n[:, None] * stride_kl + d[None, :], mask=ok[:, None], other=0.0)
        v = tl.load(v_base + n[:, None] * stride_vl + d[None, :], mask=ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION)
        s = tl.where(ok[None, :], s, -1.0e30)
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.where(ok[None, :], tl.exp(s - m_new[:, None]), 0.0)
        alpha = tl.exp(m - m_new)
        den = den * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m = m_new
    row = (b * n_heads + heads) * n_splits + split
    tl.store(max_ptr + row, m, mask=real)
    tl.store(sum_ptr + row, den, mask=real)
    tl.store(acc_ptr + row[:, None] * HEAD_DIM + d[None, :], acc, mask=real[:, None])


def decode_attention(
    q: Any,
    k_cache: Any,
    v_cache: Any,
    pos: Any,
    scale: float,
    chunk: int | None = None,
    block: int | None = None,
    warps: int | None = None,
    kind: str | None = None,
) -> Any:
    """softmax(q·k/√d)·v over cache slots 0..pos for each query head.

    q: [B, H, D]; k_cache, v_cache: [B, KV, L, D] (H a multiple of KV); pos: a
    1-element integer tensor on the device. Returns [B, H, D] in q's dtype.
    """
    import torch

    b, h, d = q.shape
    dtype = q.dtype
    kv, length = k_cache.shape[1], k_cache.shape[2]
    group = h // kv
    chunk, block, warps = chunk or CHUNK, block or BLOCK_N, warps or WARPS
    kind = kind or KIND
    splits = triton.cdiv(length, chunk)
    acc = torch.empty((b, h, splits, d), device=q.device, dtype=torch.float32)
    mx = torch.empty((b, h, splits), device=q.device, dtype=torch.float32)
    den = torch.empty((b, h, splits), device=q.device, dtype=torch.float32)
    # The scale goes into q here: a Python float reaching the kernel through torch.compile
    # arrives as float64 and would turn the running maximum into float64.
    q = (q.float() * scale).contiguous()
    args = (
        q,
        k_cache,
        v_cache,
        pos,
        acc,
        mx,
        den,
        q.stride(0),
        q.stride(1),
        k_cache.stride(0),
        k_cache.stride(1),
        k_cache.stride(2),
        v_cache.stride(0),
        v_cache.stride(1),
        v_cache.stride(2),
        h,
        splits,
    )
    if kind == "dot":
        _partial_dot_kernel[(b, kv, splits)](
            *args,
            GROUP=group,
            ROWS=max(16, group),
            HEAD_DIM=d,
            CHUNK_N=chunk,
            BLOCK=max(16, min(block, chunk)),
            PRECISION="ieee" if k_cache.dtype == torch.float32 else "tf32",
            num_warps=warps,
        )
    else:
        _partial_kernel[(b, kv, splits)](
            *args,
            GROUP=group,
            HEAD_DIM=d,
            CHUNK_N=chunk,
            BLOCK=min(block, chunk),
            num_warps=warps,
        )
    # Combine the chunks: rescale each to the global max (empty chunks weigh 0).
    top = mx.amax(dim=-1, keepdim=True)
    w = torch.exp(mx - top) * (den > 0)
    out = (acc * w[..., None]).sum(dim=2) / (den * w).sum(dim=-1, keepdim=True)
    return out.to(dtype)


def reference_attention(q: Any, k_cache: Any, v_cache: Any, pos: int, scale: float) -> Any:
    """The same in plain PyTorch (masked), for tests."""
    import torch

    group = q.shape[1] // k_cache.shape[1]
    k = k_cache[:, :, : pos + 1].float().repeat_interleave(group, dim=1)
    v = v_cache[:, :, : pos + 1].float().repeat_interleave(group, dim=1)
    s = torch.einsum("bhd,bhnd->bhn", q.float(), k) * scale
    return torch.einsum("bhn,bhnd->bhd", torch.softmax(s, dim=-1), v).to(q.dtype)
