# expect: pass
# constructs: tutorial-style host wrapper function, grid lambda over meta, functools.reduce(operator.mul) numel, logging module logger
import functools
import logging
import operator

import torch
import torch.nn as nn
import triton
import triton.language as tl

logger = logging.getLogger(__name__)


@triton.jit
def add_kernel(
    x_ptr,  # first input vector
    y_ptr,  # second input vector
    output_ptr,  # output vector
    n_elements,  # size of the vectors
    BLOCK_SIZE: tl.constexpr,  # elements each program handles
):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # guard the tail: n_elements need not be a multiple of BLOCK_SIZE
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def _numel(shape):
    return functools.reduce(operator.mul, shape, 1)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    assert x.shape == y.shape, "add expects tensors of one shape"
    x = x.contiguous()
    y = y.contiguous()
    output = torch.empty_like(x)
    n_elements = _numel(x.shape)
    logger.debug("add: %d elements on %s", n_elements, x.device)
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return add(x, y)
