"""A GPU worker's first Triton launch, made ready before any candidate code runs.

Each worker has a Triton cache of its own, empty at its start (a cache shared between
workers would let one candidate plant binaries for the next). So the first launch in a
worker pays for more than the candidate's kernel: Triton builds its driver module with
the C compiler, starts its compiler (MLIR, LLVM, ptxas) for the first time in the
process, loads the binary and builds a launcher with the C compiler again. A worker
waiting for its first command does all that on a kernel of ours, on a thread of its
own (worker.WorkerState.warm_up). It compiles and loads the kernel and builds its
launcher, but never launches it: nothing runs on the GPU, so no timing is disturbed,
and the kernel holds only its module's few kilobytes.

What it leaves is the worker's own: the files in its private cache, and the compiler
already started. A candidate's kernel with the same argument types (pointers to
float32, an int, one constexpr) also finds its launcher built.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _autotriton_warm_up(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def warm_up() -> None:
    """Compile, load and make the launcher of the kernel above (raises what Triton raises)."""
    compiled = _autotriton_warm_up.warmup(torch.float32, torch.float32, 4096, BLOCK=1024, grid=(4,))
    if compiled is None or not hasattr(compiled, "__getitem__"):
        raise RuntimeError(f"Triton's warmup() returned {type(compiled).__name__}")
    compiled[(4, 1, 1)]  # loads the binary and builds the launcher; launches nothing
