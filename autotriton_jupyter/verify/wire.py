"""A pickle-free message format between the judge and its worker processes.

Workers run untrusted code, so nothing they send may be unpickled: a message is a
JSON header describing a tree of plain values, with tensors stored as raw bytes
after it. Decoding never runs code and never builds anything but plain Python
values and ordinary CPU tensors.
"""

from __future__ import annotations

import json
import os
import re
import struct
import tempfile
from typing import Any

import torch

_DTYPES = {
    str(dt).removeprefix("torch."): dt
    for dt in (
        torch.float64,
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
        torch.complex64,
        torch.complex128,
    )
}
DTYPE_NAMES = frozenset(_DTYPES)
_HEADER = struct.Struct("<Q")


class WireError(ValueError):
    """A message could not be encoded or decoded."""


def dtype_name(dtype: torch.dtype) -> str:
    """The name of a dtype as it travels ("float32")."""
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str) -> torch.dtype:
    """The dtype for a travelling name; unknown names are an error."""
    try:
        return _DTYPES[name]
    except KeyError:
        raise WireError(f"unsupported dtype {name!r}") from None


def _layout_order(t: torch.Tensor) -> list[int]:
    """Dimension order of t's memory layout, when it is a permuted dense layout (e.g. x.t()).

    Tensors travel in that order and are rebuilt as the same permuted view, so a
    candidate sees the strides the task's get_inputs() produced. Other layouts
    (slices with gaps, broadcast views) travel contiguous.
    """
    identity = list(range(t.dim()))
    if t.is_contiguous() or t.numel() <= 1:
        return identity
    order = sorted(identity, key=lambda i: (-t.stride(i), i))
    return order if t.permute(order).is_contiguous() else identity


def encode(value: Any) -> bytes:
    """Encode a tree of dicts, lists, tuples, scalars and tensors."""
    return b"".join(encode_parts(value))


def encode_parts(value: Any) -> list[Any]:
    """The encoded message as buffers (header first), to write without joining them."""
    blobs: list[Any] = []

    def walk(v: Any) -> Any:
        if v is None or isinstance(v, bool | int | float | str):
            if isinstance(v, float) and v != v:
                return {"__float__": "nan"}
            if isinstance(v, float) and v in (float("inf"), float("-inf")):
                return {"__float__": "inf" if v > 0 else "-inf"}
            return v
        if isinstance(v, torch.Tensor):
            t = v.detach()
            if t.device.type != "cpu":
                t = t.cpu()
            order = _layout_order(t)
            stored = t.permute(order).contiguous()
            raw = stored.reshape(-1).view(torch.uint8).numpy() if t.numel() else b""
            blobs.append(raw)
            spec = {
                "__tensor__": len(blobs) - 1,
                "dtype": dtype_name(t.dtype),
                "shape": list(stored.shape),
            }
            if order != list(range(t.dim())):
                spec["order"] = order
            return spec
        if isinstance(v, tuple):
            return {"__tuple__": [walk(x) for x in v]}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                raise WireError("only string keys can travel")
            if any(k.startswith("__") and k.endswith("__") for k in v):
                return {"__dict__": {k: walk(x) for k, x in v.items()}}
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, torch.dtype):
            return {"__dtype__": dtype_name(v)}
        if isinstance(v, torch.Size):
            return {"__tuple__": list(v)}
        raise WireError(f"a value of type {type(v).__name__} cannot travel between processes")

    tree = walk(value)
    header = json.dumps({"tree": tree, "sizes": [len(b) for b in blobs]}).encode()
    return [_HEADER.pack(len(header)) + header, *blobs]


def decode(data: bytes) -> Any:
    """Decode what `encode` produced; any malformed input raises WireError, nothing else."""
    try:
        return _decode(data)
    except WireError:
        raise
    except (
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        OverflowError,
        RecursionError,
        MemoryError,
        RuntimeError,
    ) as e:
        raise WireError(f"malformed message ({type(e).__name__})") from None


def _decode(data: bytes) -> Any:
    try:
        (n,) = _HEADER.unpack_from(data, 0)
        meta = json.loads(data[_HEADER.size : _HEADER.size + n])
        sizes = meta["sizes"]
        tree = meta["tree"]
    except (struct.error, ValueError, KeyError, TypeError) as e:
        raise WireError(f"malformed message: {e}") from None
    offsets = [_HEADER.size + n]
    for s in sizes:
        offsets.append(offsets[-1] + int(s))
    if offsets[-1] != len(data):
        raise WireError("message length does not match its header")
    view = memoryview(data)

    def tensor(spec: dict) -> torch.Tensor:
        i = int(spec["__tensor__"])
        dtype = dtype_from_name(spec["dtype"])
        shape = [int(s) for s in spec["shape"]]
        raw = view[offsets[i] : offsets[i + 1]]
        numel = 1
        for s in shape:
            numel *= s
        itemsize = torch.empty((), dtype=dtype).element_size()
        if len(raw) != numel * itemsize:
            raise WireError("tensor bytes do not match its shape")
        if numel == 0:
            out = torch.empty(shape, dtype=dtype)
        else:
            out = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)
        order = spec.get("order")
        if order is not None:
            if sorted(order) != list(range(len(shape))):
                raise WireError("bad dimension order")
            out = out.permute([order.index(i) for i in range(len(order))])
        return out

    def walk(v: Any) -> Any:
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            if "__tensor__" in v:
                return tensor(v)
            if "__tuple__" in v:
                return tuple(walk(x) for x in v["__tuple__"])
            if "__float__" in v:
                return float(v["__float__"])
            if "__dtype__" in v:
                return dtype_from_name(v["__dtype__"])
            if "__dict__" in v:
                return {k: walk(x) for k, x in v["__dict__"].items()}
            return {k: walk(x) for k, x in v.items()}
        return v

    return walk(tree)


# Large messages go through a file in a private scratch folder, named on the pipe:
# a socket pipe moves hundreds of megabytes far more slowly than the page cache.
_SPILL_MARK = b"\x00spill\x00"
_SPILL_BYTES = 1 << 20
_SPILL_NAME = re.compile(r"msg-[A-Za-z0-9_]+\.bin")


def send(conn: Any, value: Any, spill_dir: str) -> None:
    """Send one message on a multiprocessing Connection (through spill_dir when large)."""
    parts = encode_parts(value)
    if sum(len(p) for p in parts) <= _SPILL_BYTES:
        conn.send_bytes(b"".join(parts))
        return
    fd, path = tempfile.mkstemp(dir=spill_dir, prefix="msg-", suffix=".bin")
    with os.fdopen(fd, "wb") as f:
        for p in parts:
            f.write(p)
    conn.send_bytes(_SPILL_MARK + os.path.basename(path).encode())


def recv(conn: Any, spill_dir: str, maxlength: int | None = None) -> Any:
    """Receive one message sent by `send`; a spilled file is read once and deleted."""
    data = conn.recv_bytes(maxlength)
    if data.startswith(_SPILL_MARK):
        name = data[len(_SPILL_MARK) :].decode(errors="replace")
        if not _SPILL_NAME.fullmatch(name):
            raise WireError("a spilled message named an unexpected file")
        path = os.path.join(spill_dir, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as e:
            raise WireError(f"a spilled message cannot be read: {e}") from None
        try:
            with os.fdopen(fd, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if maxlength is not None and size > maxlength:
                    raise WireError(
                        f"a spilled message of {size} bytes is over the {maxlength}-byte limit"
                    )
                data = f.read()
        finally:
            os.unlink(path)
    return decode(data)
