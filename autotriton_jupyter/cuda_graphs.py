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
GPU; for tensors on several GPUs or that overlap themselves (an expanded view); for
arguments that are not tensors or plain constants, and keyword arguments; under
autocast; while another stream capture is going on; when autograd needs the call (an input requires grad, or with grad mode on the
module's own output does: its first call of a signature runs as it is to see); and for a
forward that cannot be recorded (one that waits on the device, say; said once in a
warning). `replays` counts the calls a graph served, `recordings` the graphs made. At
most `max_graphs` signatures are kept, the least recently used dropped first. Each
integer or float argument's value is part of a signature (the kernels were launched
with it), so a loop over many values records many graphs.

A forward that changes its inputs in place changes the graph's copies of them, not the
caller's tensors.

A recording keeps what forward read when it was made: the parameters' addresses (their
values may change in place, as an optimizer changes them) and the module's other
attributes. Parameters and buffers moved or replaced (.half(), .to(), a new Parameter)
are noticed, and the graphs made again; the mode (train or eval) is part of the
signature; any other attribute that forward reads, set anew, needs a new `graphed`.
Replays from several streams wait for each other (they share the graph's buffers).
"""

from __future__ import annotations

import contextlib
import threading
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
    done: torch.cuda.Event | None = None  # its last replay's outputs copied out, on the caller's stream


def _signature(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """What a recording is valid for, or None when the arguments cannot be recorded.

    A tensor's storage offset is left out: its values are copied into the graph's own
    buffer, whose address (and alignment, which Triton specialises on) is the graph's."""
    key: list[Any] = []
    devices = set()
    for a in args:
        if isinstance(a, torch.Tensor):
            if not a.is_cuda or any(st == 0 and sz > 1 for st, sz in zip(a.stride(), a.shape)):
                return None
            devices.add(a.device)
            key.append(("t", tuple(a.shape), a.stride(), a.dtype, a.device))
        elif type(a) in _CONSTANTS:
            key.append(("c", type(a), repr(a)))  # repr: -0.0 is not 0.0, nan is nan
        else:
            return None
    return tuple(key) if len(devices) == 1 else None


def _autocast() -> bool:
    """Whether autocast is on for CUDA (a graph keeps the dtypes it was recorded with)."""
    try:
        return torch.is_autocast_enabled("cuda")
    except TypeError:  # an older torch: no device argument
        return torch.is_autocast_enabled()


def _outputs(out: Any) -> list[torch.Tensor] | None:
    """The tensors of an output that is a tensor or a plain tuple/list of them, else None."""
    leaves = list(out) if type(out) in (tuple, list) else [out]
    return leaves if all(isinstance(x, torch.Tensor) for x in leaves) else None


def _copied(out: Any) -> Any:
    if type(out) in (tuple, list):
        return type(out)(x.clone() for x in out)
    return out.clone()


class Graphed(torch.nn.Module):
    """`module` whose forward is replayed from a CUDA graph per input signature."""

    def __init__(self, module: torch.nn.Module, max_graphs: int = 8, warmup: int = 2) -> None:
        if not isinstance(module, torch.nn.Module):
            raise TypeError(
                f"graphed() takes a module, not {type(module).__name__}: build it first, e.g. "
                "graphed(ModelNew(*init_args).cuda())"
            )
        if max_graphs < 1 or warmup < 1:
            raise ValueError("max_graphs and warmup must be 1 or more")
        super().__init__()
        self.module = module
        self.max_graphs = max_graphs
        self.warmup = warmup
        self._recorded: OrderedDict[tuple[Any, ...], _Recorded] = OrderedDict()
        self._refused: set[tuple[Any, ...]] = set()  # recording failed: run as it is
        self._autograd: set[tuple[Any, ...]] = set()  # the output needs autograd
        self._plain: set[tuple[Any, ...]] = set()  # seen under grad mode: no autograd needed
        self._lock = threading.Lock()
        self._state: tuple[Any, ...] | None = None  # the parameters' storage the graphs read
        self.replays = 0  # calls a graph served
        self.recordings = 0  # graphs made

    def _storage(self) -> tuple[Any, ...]:
        """Where the module's parameters and buffers live, and what they are: a change
        (.half(), .to(), a parameter replaced) leaves every graph reading freed memory."""
        return tuple(
            (t.data_ptr(), t.dtype, tuple(t.shape))
            for t in (*self.module.parameters(), *self.module.buffers())
        )

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs or _autocast():
            return self.module(*args, **kwargs)
        sig = _signature(args)
        if sig is None or torch.cuda.is_current_stream_capturing():
            return self.module(*args)
        key = (*sig, self.module.training)
        if key in self._refused:
            return self.module(*args)
        if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args) and torch.is_grad_enabled():
            return self.module(*args)
        if torch.is_grad_enabled() and key not in self._plain:
            if key in self._autograd:
                return self.module(*args)
            # Whether this signature's output needs autograd (a Function with a backward
            # around the kernels, say): the first call runs as it is to see.
            out = self.module(*args)
            leaves = _outputs(out) or []
            seen = self._autograd if any(x.requires_grad for x in leaves) else self._plain
            if len(seen) > 1024:
                seen.clear()
            seen.add(key)
            return out
        with self._lock, torch.inference_mode(False), torch.no_grad():
            state = self._storage()
            if state != self._state:  # the module moved or changed: every graph is stale
                self._recorded.clear()
                self._state = state
            rec = self._recorded.get(key)
            if rec is None:
                rec = self._record(key, args)
                if rec is None:
                    return self.module(*args)
            else:
                self._recorded.move_to_end(key)
            stream = torch.cuda.current_stream(rec.inputs[0].device if rec.inputs else None)
            if rec.done is not None:  # a replay from another stream may still be reading them
                stream.wait_event(rec.done)
            for buf, a in zip(rec.inputs, (a for a in args if isinstance(a, torch.Tensor))):
                buf.copy_(a)
            rec.graph.replay()
            out = _copied(rec.output)
            rec.done = torch.cuda.Event()
            rec.done.record(stream)
            self.replays += 1
            return out

    def _record(self, key: tuple[Any, ...], args: tuple[Any, ...]) -> _Recorded | None:
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        with torch.cuda.device(device):
            # The graph's own input buffers, laid out as the arguments are (strides kept).
            static = [
                torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device=a.device).copy_(a)
                if isinstance(a, torch.Tensor)
                else a
                for a in args
            ]
            graph = torch.cuda.CUDAGraph()
            side = torch.cuda.Stream()
            try:
                # Warm-up on a side stream, as recording needs: Triton compiles and caches
                # the kernels, allocators settle, nothing lazy is left for the capture.
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(self.warmup):
                        self.module(*static)
                torch.cuda.current_stream().wait_stream(side)
                torch.cuda.synchronize()  # nothing pending on any stream when capture begins
                output = self._capture(graph, side, static)
                if _outputs(output) is None:
                    raise TypeError(f"forward returned {type(output).__name__}, not tensors")
            except Exception as e:  # noqa: BLE001 - any failure means: run it as it is
                with contextlib.suppress(Exception):
                    torch.cuda.synchronize()
                if len(self._refused) > 1024:
                    self._refused.clear()
                self._refused.add(key)
                warnings.warn(
                    f"{type(self.module).__name__}'s forward could not be recorded in a CUDA "
                    f"graph ({type(e).__name__}: {str(e)[:200]}); these calls run as they are.",
                    stacklevel=4,
                )
                return None
        rec = _Recorded(graph, [a for a in static if isinstance(a, torch.Tensor)], output)
        self._recorded[key] = rec
        self.recordings += 1
        while len(self._recorded) > self.max_graphs:
            self._recorded.popitem(last=False)
        return rec

    def _capture(self, graph: torch.cuda.CUDAGraph, stream: torch.cuda.Stream, static: list[Any]) -> Any:
        """forward recorded on `stream`; the caller's stream is current again afterwards,
        and the first error (a forward that waits on the device, say) is the one raised.
        Thread-local capture: other threads' CUDA work goes on meanwhile."""
        with torch.cuda.stream(stream):
            graph.capture_begin(capture_error_mode="thread_local")
            try:
                output = self.module(*static)
            except BaseException:
                with contextlib.suppress(Exception):
                    graph.capture_end()
                raise
            graph.capture_end()
        return output


def graphed(module: torch.nn.Module, max_graphs: int = 8) -> Graphed:
    """`module` (an accepted kernel's ModelNew, say) replayed from CUDA graphs."""
    return Graphed(module, max_graphs=max_graphs)
