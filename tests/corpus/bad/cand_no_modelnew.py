import triton
import triton.language as tl


@triton.jit
def k(p):
    pass
