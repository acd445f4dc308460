"""What moving a large GPU tensor through a memory file costs, step by step (issue 14).

A worker's large reply is its device tensors copied into a sealed memory file, which the
judge maps; the judge then copies what it compares to its own GPU. This prints, for one
reply of N tensors of 128 MB, the seconds of each way of writing it (a new file; a file
whose pages were allocated first, on one thread or several; a file pinned for the GPU's
copy engine) and of reading it back to a GPU.

    python scripts/bench_messages.py [N]      # needs CUDA; prints one JSON line
"""

from __future__ import annotations

import json
import mmap
import os
import sys
import threading
import time

import torch

MB = 1 << 20


def _fallocate(fd: int, size: int, threads: int) -> None:
    os.ftruncate(fd, size)
    step = -(-size // threads // mmap.PAGESIZE) * mmap.PAGESIZE

    def part(at: int) -> None:
        n = min(step, size - at)
        if n > 0:
            os.posix_fallocate(fd, at, n)

    ts = [threading.Thread(target=part, args=(k * step,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def _copy_in(fd: int, srcs: list[torch.Tensor], pin: bool) -> float:
    """Seconds to copy the tensors into the file through a mapping (pinned first if asked)."""
    total = sum(s.numel() * s.element_size() for s in srcs)
    os.ftruncate(fd, total)
    mm = mmap.mmap(fd, total)
    t0 = time.perf_counter()
    whole = torch.frombuffer(mm, dtype=torch.uint8, count=total)
    if pin:
        rt = torch.cuda.cudart()
        err = rt.cudaHostRegister(whole.data_ptr(), total, 0)
        if int(err) != 0:
            raise RuntimeError(f"cudaHostRegister: {err}")
    at = 0
    for s in srcs:
        n = s.numel() * s.element_size()
        whole[at : at + n].copy_(s.reshape(-1).view(torch.uint8), non_blocking=pin)
        at += n
    torch.cuda.synchronize()
    if pin:
        torch.cuda.cudart().cudaHostUnregister(whole.data_ptr())
    spent = time.perf_counter() - t0
    del whole
    mm.close()
    return spent


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    srcs = [torch.randn(8192, 4096, device="cuda") for _ in range(n)]
    total = sum(s.numel() * s.element_size() for s in srcs)
    torch.cuda.synchronize()
    out: dict[str, float] = {"tensors": n, "mb": total / MB}

    def fresh() -> int:
        return os.memfd_create("bench", os.MFD_CLOEXEC)

    _copy_in(fresh(), srcs[:1], False)  # first use: CUDA's staging buffers
    for rep in range(2):
        fd = fresh()
        out[f"new_file_copy_{rep}"] = _copy_in(fd, srcs, False)
        os.close(fd)
        for threads in (1, 4, 8):
            fd = fresh()
            t0 = time.perf_counter()
            _fallocate(fd, total, threads)
            out[f"allocate_{threads}t_{rep}"] = time.perf_counter() - t0
            out[f"allocated_copy_{threads}t_{rep}"] = _copy_in(fd, srcs, False)
            os.close(fd)
        fd = fresh()
        out[f"new_file_pinned_copy_{rep}"] = _copy_in(fd, srcs, True)
        os.close(fd)
        fd = fresh()
        _fallocate(fd, total, 8)
        out[f"allocated_pinned_copy_{rep}"] = _copy_in(fd, srcs, True)
        # The judge's side: the file mapped privately, each tensor copied to the GPU.
        mm = mmap.mmap(fd, total, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        host = torch.frombuffer(mm, dtype=torch.uint8, count=total)
        step = srcs[0].numel() * srcs[0].element_size()
        t0 = time.perf_counter()
        for k in range(n):
            host[k * step : (k + 1) * step].to("cuda")
        torch.cuda.synchronize()
        out[f"read_to_gpu_{rep}"] = time.perf_counter() - t0
        del host
        mm.close()
        os.close(fd)
    print(json.dumps({k: round(v, 3) for k, v in out.items()}))


if __name__ == "__main__":
    main()
