"""A GPU worker's first Triton launch, made ready before any candidate code runs.

Each worker has a Triton cache of its own (a cache shared between workers would let
one candidate plant binaries for the next). So the first launch in a
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

A GPU pool's fork server makes that warm-up cheap for every worker it forks after its
dynamo import (forkserver._preload): a child of its own runs warm_up() once into a
folder of its own (Seed), and each worker starts with a copy of those files in its
private cache (plant); meanwhile the server computes Triton's key of its own build
(prime), which every fork then inherits. The server itself never initializes CUDA
(its forks could not use the GPU) and runs no compiler: the child does both, and ends.
A worker's warm-up then finds its driver module and launcher built, and its kernel in
its cache (Triton's record of a kernel's files names them by absolute path: plant
points them at the worker's own copies). On an H100 host the warm-up took 0.9-1.0 s
without the seed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time

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


class Seed:
    """warm_up() run once in a child of the fork server, into a folder of its own: forked
    when made (before the server starts any thread), collected by files()."""

    def __init__(self, under: str | None = None) -> None:
        self.folder = tempfile.mkdtemp(prefix="autotriton-triton-seed-", dir=under)
        parent = os.getpid()
        try:
            self.pid = os.fork()
        except OSError:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        if self.pid == 0:
            code = 1
            try:
                from . import confine

                # In the server's process group (a server ended by its group takes the
                # compilers this starts with it); a hung build is ended whole by files().
                confine.die_with_parent()
                if os.getppid() != parent:  # the server ended before the line above
                    os._exit(1)
                os.environ.update(TRITON_CACHE_DIR=os.path.join(self.folder, "cache"), TMPDIR=self.folder)
                tempfile.tempdir = None
                warm_up()
                code = 0
            except BaseException:  # no seed: each worker warms up on its own, as before
                pass
            os._exit(code)

    def files(self, timeout_s: float = 30.0) -> dict[str, bytes]:
        """The cache the child left (relative path: contents); none if it failed or hung.
        (The fork server's loop waits for this: the first reference's worker goes
        unwatched meanwhile, as during the import.)"""
        try:
            status = None
            deadline = time.monotonic() + timeout_s
            while status is None and time.monotonic() < deadline:
                done, code = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    status = code
                else:
                    time.sleep(0.01)
            if status is None:
                _kill_tree(self.pid)  # the child and the compilers it started
                os.waitpid(self.pid, 0)
                return {}
            if status != 0:
                return {}
            root = os.path.join(self.folder, "cache")
            got = {}
            for folder, _, names in os.walk(root):
                for name in names:
                    path = os.path.join(folder, name)
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                    with os.fdopen(fd, "rb") as f:
                        got[os.path.relpath(path, root)] = f.read()
            return got
        except OSError:
            return {}
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def _kill_tree(root: int) -> None:
    """SIGKILL a process and every process below it (read from /proc before any is killed)."""
    from .forkserver import _proc_table, _tree

    for pid in _tree(root, _proc_table()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def prime() -> None:
    """Triton's key of its own build (a hash of its compiler library, some 400 MB, which
    every process computes once, on its first compile): computed in the fork server, on a
    thread while it imports torch._dynamo, and inherited by every worker forked after."""
    try:
        from triton.runtime.cache import triton_key

        triton_key()
    except Exception:  # (another Triton) each worker computes it, as before
        pass


def plant(files: dict[str, bytes], cache_dir: str) -> None:
    """A worker's copy of the seed, in its own cache (its own to change; never shared).

    Triton finds a compiled kernel through a group file (`__grp__<name>.json`) that
    names the kernel's files by absolute path, here the seed's folder, gone by now:
    those are pointed at the worker's copies (a group naming a file that was not
    planted is left as it was, and Triton then compiles the kernel as without a seed)."""
    for rel, data in files.items():
        path = os.path.join(cache_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.basename(rel).startswith("__grp__"):
            data = _regrouped(data, files, cache_dir)
        with open(path, "wb") as f:
            f.write(data)


def _regrouped(data: bytes, files: dict[str, bytes], cache_dir: str) -> bytes:
    """A group file's paths moved into cache_dir (Triton's layout: <key>/<file name>)."""
    try:
        group = json.loads(data)
        paths = group["child_paths"]
        moved = {}
        for name, old in paths.items():
            rel = os.path.join(*str(old).split("/")[-2:])
            if rel not in files:  # a file not planted: the group as it was (Triton compiles)
                return data
            moved[name] = os.path.join(cache_dir, rel)
        group["child_paths"] = moved
        return json.dumps(group).encode()
    except (ValueError, KeyError, TypeError, AttributeError):  # another Triton's format: as it was
        return data
