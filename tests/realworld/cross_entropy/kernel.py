# expect: pass
# constructs: two kernels (per-row loss, then a mean reduction over rows), online softmax over vocabulary blocks, int64 target input with ignore_index, logging module logger with logger.debug, next_power_of_2 capped block size, 0-dim output tensor
import logging

import torch
import torch.nn as nn
import triton
import triton.language as tl

logger = logging.getLogger(__name__)

# vocabularies are large: walk each row in blocks of at most this many logits
MAX_VOCAB_BLOCK = 256


@triton.jit
def _cross_entropy_row_kernel(
    X_ptr,
    X_stride,
    Y_ptr,
    loss_ptr,
    n_cols,
    ignore_index,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    X_ptr += row * X_stride
    y = tl.load(Y_ptr + row)
    if y == ignore_index:
        tl.store(loss_ptr + row, 0.0)
        return

    # online softmax: running max m and running normaliser d
    m = float("-inf")
    d = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X_ptr + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        block_max = tl.max(x, axis=0)
        m_new = tl.maximum(m, block_max)
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(d)
    x_y = tl.load(X_ptr + y).to(tl.float32)
    tl.store(loss_ptr + row, lse - x_y)


@triton.jit
def _masked_mean_kernel(loss_ptr, Y_ptr, out_ptr, n_rows, ignore_index, BLOCK_SIZE: tl.constexpr):
    total = 0.0
    count = 0.0
    for start in range(0, n_rows, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_rows
        loss = tl.load(loss_ptr + offs, mask=mask, other=0.0)
        y = tl.load(Y_ptr + offs, mask=mask, other=ignore_index)
        total += tl.sum(loss, axis=0)
        count += tl.sum((y != ignore_index).to(tl.float32), axis=0)
    tl.store(out_ptr, total / count)


def cross_entropy_forward(logits, target, ignore_index):
    logits = logits.contiguous()
    target = target.contiguous()
    n_rows, n_cols = logits.shape
    BLOCK_SIZE = min(MAX_VOCAB_BLOCK, triton.next_power_of_2(n_cols))
    logger.debug("cross_entropy: %d rows, vocab %d, block %d", n_rows, n_cols, BLOCK_SIZE)
    loss_1d = torch.empty(n_rows, dtype=torch.float32, device=logits.device)
    _cross_entropy_row_kernel[(n_rows,)](
        logits, logits.stride(0), target, loss_1d, n_cols, ignore_index, BLOCK_SIZE=BLOCK_SIZE,
    )
    loss = torch.empty((), dtype=logits.dtype, device=logits.device)
    _masked_mean_kernel[(1,)](
        loss_1d, target, loss, n_rows, ignore_index,
        BLOCK_SIZE=min(1024, triton.next_power_of_2(n_rows)),
    )
    return loss


class ModelNew(nn.Module):
    def __init__(self, ignore_index=-100):
        super().__init__()
        self.ignore_index = ignore_index

    def forward(self, logits, target):
        return cross_entropy_forward(logits, target, self.ignore_index)
