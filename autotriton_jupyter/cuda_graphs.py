"""An accepted kernel's forward replayed from CUDA graphs: no per-call Python in it.

A Triton launch costs host time on every call: Triton binds the arguments, works out
their specialisation, finds the compiled kernel and packs its parameters, and the
module's own forward computes its grid. For a small kernel that host time is most of
the call. A CUDA graph records the launches of one forward once, for one input
signature (shapes, strides, dtypes, devices, the other arguments' values), and replays
them with one call to the driver; the inputs are copied into the graph's own buffers
first (a device copy per tensor), and the outputs are copied out of them (so a kept
output is never overwritten by a later call).

    from autotriton_jupyter import graphed, load_kernel
    fast = graphed(load_kernel("my_softmax")().cuda())
    y = fast(x)                      # the first call of a signature records it

Where a graph cannot serve, the module runs as it is, with the same results: off the
GPU, while autograd needs the graph of the call (an input or a parameter requires grad
and grad mode is on), for arguments that are not tensors or plain constants, while
another stream capture is going on, and for a forward that cannot be recorded (one
that waits on the device, say; said once in a warning). At most `max_graphs`
signatures are kept, the least recently used dropped first.

A recording keeps what forward read when it was made: the parameters' addresses (their
values may change in place, as an optimizer changes them) and the module's other
attributes. A module changed otherwise after its first call (a parameter replaced, an
attribute that forward reads set anew) needs a new `graphed` around it.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch

_CONSTANTS = (int, float, bool, str, type(None))


@dataclass
class _Recorded:
    graph: torch.cuda.CUDAGraph
    inputs: list[torch.Tensor]  # the graph's input buffers, in argument order (tensors only)
    output: Any  # the graph's output tensors, as forward returned them


def _signature(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """What a recording is valid for, or None when the arguments cannot be recorded."""
    key: list[Any] = []
    for a in args:
        if isinstance(a, torch.Tensor):
            if not a.is_cuda:
                return None
            key.append(("t", tuple(a.shape), a.stride(), a.dtype, a.device, a.storage_offset()))
        elif isinstance(a, _CONSTANTS):
            key.append(("c", type(a), a))
        else:
            return None
    return tuple(key)


def _tensors(out: Any) -> bool:
    """Whether an output is a tensor or a tuple/list of them (what a graph can hand back)."""
    if isinstance(out, tuple | list):
        return all(isinstance(x, torch.Tensor) for x in out)
    return isinstance(out, torch.Tensor)


def _copied(out: Any) -> Any:
    if isinstance(out, tuple | list):
        return type(out)(x.clone() for x in out)
    return out.clone()


class Graphed(torch.nn.Module):
    """`module` whose forward is replayed from a CUDA graph per input signature."""

    def __init__(self, module: torch.nn.Module, max_graphs: int = 8, warmup: int = 2) -> None:
        super().__init__()
        if max_graphs < 1:
            raise ValueError("max_graphs must be 1 or more")
        self.module = module
        self.max_graphs = max_graphs
        self.warmup = warmup
        self._recorded: OrderedDict[tuple[Any, ...], _Recorded] = OrderedDict()
        self._refused: set[tuple[Any, ...]] = set()
        self.replays = 0  # calls served by a graph (for benchmarks and tests)

    def _needs_autograd(self, args: tuple[Any, ...]) -> bool:
        if not torch.is_grad_enabled():
            return False
        if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return True
        return any(p.requires_grad for p in self.module.parameters())

    def forward(self, *args: Any) -> Any:
        key = _signature(args)
        if (
            key is None
            or key in self._refused
            or self._needs_autograd(args)
            or torch.cuda.is_current_stream_capturing()
        ):
            return self.module(*args)
        rec = self._recorded.get(key)
        if rec is None:
            rec = self._record(key, args)
            if rec is None:
                return self.module(*args)
        else:
            self._recorded.move_to_end(key)
        for buf, a in zip(rec.inputs, (a for a in args if isinstance(a, torch.Tensor))):
            buf.copy_(a)
        rec.graph.replay()
        self.replays += 1
        return _copied(rec.output)

    def _record(self, key: tuple[Any, ...], args: tuple[Any, ...]) -> _Recorded | None:
        # The graph's own input buffers, laid out as the arguments are (strides kept).
        static = [
            torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device=a.device).copy_(a)
            if isinstance(a, torch.Tensor)
            else a
            for a in args
        ]
        try:
            # Warm-up on a side stream, as recording needs: Triton compiles and caches
            # the kernels, allocators settle, nothing lazy is left for the capture.
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side), torch.no_grad():
                for _ in range(self.warmup):
                    self.module(*static)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph), torch.no_grad():
                output = self.module(*static)
            if not _tensors(output):
                raise TypeError(f"forward returned {type(output).__name__}, not tensors")
        except Exception as e:  # noqa: BLE001 - any failure means: run it as it is
            self._refused.add(key)
            warnings.warn(
                f"{type(self.module).__name__}'s forward could not be recorded in a CUDA graph "
                f"({type(e).__name__}: {str(e)[:200]}); these calls run as they are.",
                stacklevel=3,
            )
            return None
        rec = _Recorded(graph, [a for a in static if isinstance(a, torch.Tensor)], output)
        self._recorded[key] = rec
        while len(self._recorded) > self.max_graphs:
            self._recorded.popitem(last=False)
        return rec


def graphed(module: torch.nn.Module, max_graphs: int = 8) -> Graphed:
    """`module` (an accepted kernel's ModelNew, say) replayed from CUDA graphs."""
    return Graphed(module, max_graphs=max_graphs)
