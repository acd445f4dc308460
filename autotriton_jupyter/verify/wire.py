"""A pickle-free message format between the judge and its worker processes.

Workers run untrusted code, so nothing they send may be unpickled: a message is a
JSON header describing a tree of plain values, with tensors stored as raw bytes
after it. Decoding never runs code and never builds anything but plain Python
values and ordinary CPU tensors.

Length: the encoder and the decoder mirror each other field by field (every field the
encoder writes, the decoder checks), so they stay in one file.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import json
import mmap
import os
import select
import socket
import stat
import struct
import threading
import weakref
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
# Tensor bytes start at multiples of this from the message's start (padding between them is
# an unreferenced blob, and the header is padded with spaces), so a received tensor is a
# view of the message's memory rather than a copy.
_ALIGN = 64


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


class _OnDevice:
    """A device tensor's bytes, copied to the host only where they land: straight into a
    large message's memory file, or into bytes for a small message."""

    __slots__ = ("flat",)

    def __init__(self, t: torch.Tensor) -> None:
        self.flat = t.reshape(-1).view(torch.uint8)

    def __len__(self) -> int:
        return self.flat.numel()

    def host(self) -> Any:
        return self.flat.cpu().numpy()


def _host(part: Any) -> Any:
    return part.host() if isinstance(part, _OnDevice) else part


def encode(value: Any) -> bytes:
    """Encode a tree of dicts, lists, tuples, scalars and tensors."""
    return b"".join(_host(p) for p in encode_parts(value))


def encode_parts(value: Any) -> list[Any]:
    """The encoded message as buffers (header first), to write without joining them; a
    device tensor's bytes stay on the device until they are written (`_OnDevice`)."""
    blobs: list[Any] = []
    at = [0]  # bytes of blobs so far

    def add(raw: Any) -> int:
        pad = -at[0] % _ALIGN
        if pad:
            blobs.append(bytes(pad))
        blobs.append(raw)
        at[0] += pad + len(raw)
        return len(blobs) - 1

    def walk(v: Any) -> Any:
        if v is None or isinstance(v, bool | int | float | str):
            if isinstance(v, float) and v != v:
                return {"__float__": "nan"}
            if isinstance(v, float) and v in (float("inf"), float("-inf")):
                return {"__float__": "inf" if v > 0 else "-inf"}
            return v
        if isinstance(v, torch.Tensor):
            t = torch.Tensor.detach(v)  # the class's method: never an attribute set on v
            order = _layout_order(t)
            stored = t.permute(order).contiguous()
            if not t.numel():
                raw: Any = b""
            elif t.device.type != "cpu":
                raw = _OnDevice(stored)
            else:
                raw = stored.reshape(-1).view(torch.uint8).numpy()
            spec = {
                "__tensor__": add(raw),
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
    header += b" " * (-(_HEADER.size + len(header)) % _ALIGN)  # JSON allows trailing spaces
    return [_HEADER.pack(len(header)) + header, *blobs]


def decode(data: bytes | bytearray | mmap.mmap) -> Any:
    """Decode what `encode` produced; any malformed input raises WireError, nothing else.

    Tensors share the memory of a writable `data` (a bytearray, a private mapping) where
    their bytes are aligned, and are copies otherwise.
    """
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


def _decode(data: bytes | bytearray | mmap.mmap) -> Any:
    try:
        (n,) = _HEADER.unpack_from(data, 0)
        meta = json.loads(data[_HEADER.size : _HEADER.size + n])
        sizes = meta["sizes"]
        tree = meta["tree"]
    except (struct.error, ValueError, KeyError, TypeError) as e:
        raise WireError(f"malformed message: {e}") from None
    offsets = [_HEADER.size + n]
    for s in sizes:
        if int(s) < 0:
            raise WireError("a negative blob size")
        offsets.append(offsets[-1] + int(s))
    if offsets[-1] != len(data):
        raise WireError("message length does not match its header")
    view = memoryview(data)
    used: set[int] = set()

    def tensor(spec: dict) -> torch.Tensor:
        i = int(spec["__tensor__"])
        if i in used or not 0 <= i < len(sizes):
            raise WireError("a tensor's bytes are used twice, or are not in the message")
        used.add(i)
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
            shared = not raw.readonly and offsets[i] % _ALIGN == 0
            out = torch.frombuffer(raw if shared else bytearray(raw), dtype=torch.uint8)
            out = out.view(dtype).reshape(shape)
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

    try:
        value = walk(tree)
        # Bytes no tensor uses may only be alignment padding: a reply cannot make the judge
        # keep a large message alive through a small output that is a view of it.
        if any(int(sizes[i]) >= _ALIGN for i in range(len(sizes)) if i not in used):
            raise WireError("a message carries bytes that no value uses")
        return value
    finally:
        # walk refers to itself through its closure: a cycle that would keep the message's
        # memory (and a mapped file's descriptor) alive until the next garbage collection.
        walk = None  # type: ignore[assignment]  # noqa: F841


# Messages travel on a Unix stream socket as a length header and a body. Large ones
# travel as a sealed anonymous memory file (memfd) whose descriptor rides along with
# the header: a socket moves hundreds of megabytes far more slowly than the page
# cache, and no folder is shared between the judge and a sandboxed worker.
_SPILL_MARK = b"\x00spill\x00"
_SPILL_BYTES = 1 << 20
_FRAME = struct.Struct("<Q")
_MAX_FDS = 4
_SEALS = ("F_SEAL_SEAL", "F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_WRITE")


class Channel:
    """One end of a Unix stream socket carrying framed messages, each with optional descriptors."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._closed = False

    @classmethod
    def pair(cls) -> tuple[Channel, Channel]:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        return cls(a), cls(b)

    @classmethod
    def from_fd(cls, fd: int) -> Channel:
        return cls(socket.socket(fileno=fd))

    def fileno(self) -> int:
        return self.sock.fileno()

    def poll(self, timeout: float = 0.0) -> bool:
        """True when a message (or end-of-file) can be read without waiting."""
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        return bool(ready)

    def send_bytes(self, data: bytes, fds: list[int] | tuple[int, ...] = ()) -> None:
        self.send_parts([data], fds)

    def send_parts(self, parts: list[Any], fds: list[int] | tuple[int, ...] = ()) -> None:
        size = sum(len(p) for p in parts)
        header = _FRAME.pack(size)
        if fds:
            rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
            self.sock.sendmsg([header], rights)
        else:
            self.sock.sendall(header)
        for p in parts:
            self.sock.sendall(p)

    def recv_message(self, maxlength: int | None = None) -> tuple[bytearray, list[int]]:
        """One message and the descriptors that came with it; EOFError at end of stream."""
        header = bytearray()
        fds: list[int] = []
        space = socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize)
        while len(header) < _FRAME.size:
            data, anc, _flags, _addr = self.sock.recvmsg(_FRAME.size - len(header), space)
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    got = array.array("i")
                    got.frombytes(payload[: len(payload) - len(payload) % got.itemsize])
                    fds.extend(got)
            if not data:
                _close_all(fds)
                raise EOFError("the other end closed the channel")
            header += data
        (size,) = _FRAME.unpack(header)
        if maxlength is not None and size > maxlength:
            _close_all(fds)
            raise WireError(f"a message of {size} bytes is over the {maxlength}-byte limit")
        try:
            body = bytearray(size)
        except MemoryError:
            _close_all(fds)
            raise WireError(f"a message of {size} bytes does not fit in memory") from None
        view = memoryview(body)
        got_bytes = 0
        while got_bytes < size:
            n = self.sock.recv_into(view[got_bytes:])
            if n == 0:
                _close_all(fds)
                raise EOFError("the other end closed the channel mid-message")
            got_bytes += n
        return body, fds

    def recv_bytes(self, maxlength: int | None = None) -> bytearray:
        data, fds = self.recv_message(maxlength)
        _close_all(fds)
        return data

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.sock.close()


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


class _Mapped:
    """A memory file's mapping, as bytes and as a CPU tensor over them, page-locked for the
    GPU's copy engine when asked and possible (_pin)."""

    def __init__(self, fd: int, size: int, pin: bool) -> None:
        self.mm = mmap.mmap(fd, size)
        self.host: torch.Tensor | None = torch.frombuffer(self.mm, dtype=torch.uint8, count=size)
        self.pinned = pin and _pin(self.host)

    def close(self) -> None:
        if self.host is not None and self.pinned:
            _unpin(self.host)
        self.pinned = False
        self.host = None  # the tensor's hold on the mapping: released before it is closed
        self.mm.close()


class Spare:
    """A memory file for a large message still being made, its pages allocated on a thread
    meanwhile: allocating a new file's pages, not copying into them, is most of what a
    large message costs. With pin=True (a GPU worker's reply, outside timing) the thread
    also maps the file and page-locks the mapping, so device tensors are copied into it
    by the copy engine alone. Its size is a guess; the message's own size is set when it
    is written (the file grows or shrinks to it)."""

    def __init__(self, size: int, pin: bool = False) -> None:
        self.fd = -1
        self._mapped: _Mapped | None = None
        self._thread: threading.Thread | None = threading.Thread(
            target=self._allocate, args=(size, pin), name="autotriton-spare", daemon=True
        )
        try:
            self._thread.start()
        except RuntimeError:  # no thread to be had: the message allocates its own, as before
            self._thread = None

    def _allocate(self, size: int, pin: bool) -> None:
        try:
            fd = _memfd()
        except OSError:
            return
        try:
            os.ftruncate(fd, size)
            os.posix_fallocate(fd, 0, size)
        except OSError:  # no memory for it now: the message finds out for itself
            os.close(fd)
            return
        if pin:
            try:
                mapped: _Mapped | None = _Mapped(fd, size, True)
            except (OSError, ValueError, RuntimeError):
                mapped = None
            if mapped is not None and not mapped.pinned:
                mapped.close()
                mapped = None
            self._mapped = mapped
        self.fd = fd

    def take(self) -> int:
        """The file, or -1 when none could be made; the caller owns it from then on."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        fd, self.fd = self.fd, -1
        return fd

    def take_mapping(self) -> _Mapped | None:
        """The file's page-locked mapping (after take()), or None; the caller closes it."""
        mapped, self._mapped = self._mapped, None
        return mapped

    def close(self) -> None:
        fd = self.take()
        mapped = self.take_mapping()
        if mapped is not None:
            mapped.close()
        if fd >= 0:
            os.close(fd)


def _memfd() -> int:
    return os.memfd_create("autotriton-msg", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)


def _spill(parts: list[Any], spare: Spare | None = None) -> int:
    fd = spare.take() if spare is not None else -1
    mapped = spare.take_mapping() if spare is not None else None
    spared = fd >= 0  # a file of another size: _fill sets the message's own
    if not spared:
        fd = _memfd()
    try:
        if spared or any(isinstance(p, _OnDevice) for p in parts):
            _fill(fd, parts, mapped)
            mapped = None  # closed by _fill
        else:
            with os.fdopen(os.dup(fd), "wb") as f:
                for p in parts:
                    f.write(p)
        seals = 0
        for name in _SEALS:
            seals |= getattr(fcntl, name)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    except BaseException:
        os.close(fd)
        raise
    finally:
        if mapped is not None:
            mapped.close()
    return fd


# Device bytes in a message from which its mapping is page-locked for the copy (_pin).
_PIN_BYTES = 32 << 20


def _pin(host: torch.Tensor) -> bool:
    """Page-lock a mapped range for the GPU's copy engine (cudaHostRegister). A copy from
    the device into pageable memory goes through the driver's staging buffers at about
    1.5 GB/s on an H100 host; locking the range first and copying into it directly takes
    about half as long in all (scripts/bench_messages.py). False where it cannot be done:
    the copy is then made as before."""
    try:
        if not torch.cuda.is_initialized():
            return False
        return int(torch.cuda.cudart().cudaHostRegister(host.data_ptr(), host.numel(), 0)) == 0
    except Exception:
        return False


def _unpin(host: torch.Tensor) -> None:
    with contextlib.suppress(Exception):
        torch.cuda.cudart().cudaHostUnregister(host.data_ptr())


def _wait(on_device: list[_OnDevice]) -> None:
    """Wait for the copies queued on the streams of these tensors' devices."""
    for dev in {p.flat.device for p in on_device}:
        torch.cuda.current_stream(dev).synchronize()


def _fill(fd: int, parts: list[Any], mapped: _Mapped | None = None) -> None:
    """Write the parts into the memory file through a mapping (a spare's, page-locked, when
    it is large enough): a device tensor is copied from the device straight into it (one
    copy, not two; into a page-locked mapping when the device's bytes are many). The
    mapping is gone before the file is sealed against writes."""
    total = sum(len(p) for p in parts)
    on_device = [p for p in parts if isinstance(p, _OnDevice)]
    if mapped is not None and (mapped.host is None or mapped.host.numel() < total):
        mapped.close()  # a spare smaller than the message: the file grows, mapped anew
        mapped = None
    if mapped is None:
        os.ftruncate(fd, total)
        mapped = _Mapped(fd, total, sum(len(p) for p in on_device) >= _PIN_BYTES)
    host, pinned, done = mapped.host, mapped.pinned, False
    try:
        assert host is not None
        at = 0
        for p in parts:
            n = len(p)
            if isinstance(p, _OnDevice):
                host[at : at + n].copy_(p.flat, non_blocking=pinned)
            elif n:
                mapped.mm[at : at + n] = p
            at += n
        if pinned:
            _wait(on_device)  # a CUDA error raises here, as a blocking copy's would
        done = True
    finally:
        if pinned and not done:  # the queued copies end before the range is unlocked
            with contextlib.suppress(Exception):
                _wait(on_device)
        del host
        mapped.close()
    os.ftruncate(fd, total)  # a spare's larger file shrinks to the message


class Sealed:
    """A message encoded once into a sealed memory file, to send to several workers.

    No receiver can change it (it is sealed against writes), so what one worker gets
    is what the next gets. Its file is closed by `close()` or when it is collected.
    """

    def __init__(self, value: Any) -> None:
        self.fd = _spill(encode_parts(value))
        self._closer = weakref.finalize(self, os.close, self.fd)

    def close(self) -> None:
        self._closer()
        self.fd = -1


def send(conn: Channel, value: Any, spare: Spare | None = None) -> None:
    """Send one message on a Channel (as a sealed memory file when large, or a Sealed);
    a large one is written into `spare` when given (closed when not used)."""
    try:
        _send(conn, value, spare)
    finally:
        if spare is not None:
            spare.close()  # unused (a small message), or already taken: nothing left to close


def _send(conn: Channel, value: Any, spare: Spare | None) -> None:
    if isinstance(value, Sealed):
        if value.fd < 0:
            raise WireError("a sealed message was sent after it was closed")
        conn.send_bytes(_SPILL_MARK, [value.fd])
        return
    parts = encode_parts(value)
    if sum(len(p) for p in parts) <= _SPILL_BYTES:
        conn.send_parts([_host(p) for p in parts])
        return
    fd = _spill(parts, spare)
    try:
        conn.send_bytes(_SPILL_MARK, [fd])
    finally:
        os.close(fd)


def recv(conn: Channel, maxlength: int | None = None) -> Any:
    """Receive one message sent by `send`; a spilled one is read from its memory file.

    A refused message leaves no reference to its bytes behind (none in the exception's
    traceback either), so a hostile sender cannot make the receiver hold gigabytes.
    """
    data, fds = conn.recv_message(maxlength)
    error = None
    try:
        if data == _SPILL_MARK:
            if len(fds) != 1:
                raise WireError("a spilled message came without its memory file")
            data = _read_spilled(fds[0], maxlength)
        elif fds:
            raise WireError("a message came with unexpected file descriptors")
        return decode(data)
    except WireError as e:
        error = str(e)
    finally:
        _close_all(fds)
    del data
    raise WireError(error)


def _read_spilled(fd: int, maxlength: int | None) -> mmap.mmap:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise WireError("a spilled message is not a plain memory file")
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError:
        seals = 0
    if not (seals & fcntl.F_SEAL_WRITE and seals & fcntl.F_SEAL_SHRINK):
        raise WireError("a spilled message is not sealed against changes")
    if maxlength is not None and st.st_size > maxlength:
        raise WireError(
            f"a spilled message of {st.st_size} bytes is over the {maxlength}-byte limit"
        )
    if st.st_size == 0:
        raise WireError("a spilled message is empty")
    # A private mapping: nothing is copied until written, and the file cannot change under
    # it (sealed against writes and shrinking).
    try:
        return mmap.mmap(fd, st.st_size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    except (OSError, ValueError, OverflowError) as e:
        raise WireError(f"a spilled message cannot be mapped ({e})") from None
