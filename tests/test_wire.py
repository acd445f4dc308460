"""The judge's message format round-trips plain data and tensors, and never unpickles."""

from __future__ import annotations

import fcntl
import os
import pickle

import pytest
import torch

from autotriton_jupyter.verify import wire


@pytest.mark.parametrize(
    "dtype",
    [
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.bool,
        torch.uint8,
        torch.complex64,
    ],
)
def test_tensor_round_trip(dtype):
    t = (torch.randn(3, 5) * 10).to(dtype)
    back = wire.decode(wire.encode({"t": t, "view": t[:, 1:3]}))
    assert back["t"].dtype == dtype and torch.equal(back["t"], t)
    assert torch.equal(back["view"], t[:, 1:3])


def test_structures_round_trip():
    value = {
        "a": [1, 2.5, None, "s", True],
        "t": (torch.zeros(0, 3), 4),
        "nan": float("nan"),
        "inf": float("-inf"),
        "__op__": 1,
        "dt": torch.float16,
    }
    back = wire.decode(wire.encode(value))
    assert back["a"] == value["a"] and isinstance(back["t"], tuple) and back["t"][0].shape == (0, 3)
    assert back["nan"] != back["nan"] and back["inf"] == float("-inf")
    assert back["__op__"] == 1 and back["dt"] is torch.float16


def test_unknown_objects_do_not_travel():
    with pytest.raises(wire.WireError):
        wire.encode({"f": lambda: 1})


def test_malformed_and_pickled_input_is_refused():
    for bad in (b"", b"garbage", pickle.dumps({"ok": True}), wire.encode([1])[:-1] + b"xx"):
        with pytest.raises(wire.WireError):
            wire.decode(bad)


def test_large_messages_travel_as_a_sealed_memory_file():
    a, b = wire.Channel.pair()
    open_fds = len(os.listdir("/proc/self/fd"))
    big = torch.randn(600_000)  # 2.4 MB: over the spill threshold
    wire.send(a, {"x": big})
    assert torch.equal(wire.recv(b)["x"], big)
    wire.send(a, {"small": 1})
    assert wire.recv(b) == {"small": 1}
    assert len(os.listdir("/proc/self/fd")) == open_fds  # the memory file is closed on both sides


def test_device_bytes_are_written_straight_into_the_memory_file(monkeypatch):
    """A worker's GPU outputs go from the device into the sealed file (_OnDevice); here the
    same path with CPU tensors standing in for device ones, large and small messages."""
    made = []

    class Counted(wire._OnDevice):
        __slots__ = ()

        def __init__(self, t):
            made.append(t.numel())
            super().__init__(t)

    monkeypatch.setattr(wire, "_OnDevice", Counted)
    walk_device = torch.Tensor.device  # the encoder asks a tensor where it lives
    monkeypatch.setattr(torch.Tensor, "device", property(lambda t: torch.device("meta")))
    try:
        big = torch.arange(700_000, dtype=torch.float32).reshape(700, 1000)
        parts = wire.encode_parts({"x": big.t(), "y": torch.ones(3, dtype=torch.int8), "e": torch.empty(0)})
    finally:
        monkeypatch.setattr(torch.Tensor, "device", walk_device)
    assert sorted(made) == [3, 700_000]
    fd = wire._spill(parts)
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        assert seals & fcntl.F_SEAL_WRITE and seals & fcntl.F_SEAL_GROW
        got = wire.decode(wire._read_spilled(fd, None))
    finally:
        os.close(fd)
    assert torch.equal(got["x"], big.t()) and got["y"].tolist() == [1, 1, 1] and got["e"].numel() == 0
    small = wire.decode(b"".join(wire._host(p) for p in parts))  # what a small message sends
    assert torch.equal(small["x"], big.t())


def _memfd(data: bytes, seal: bool) -> int:
    fd = os.memfd_create("t", os.MFD_ALLOW_SEALING)
    os.write(fd, data)
    if seal:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK)
    return fd


def test_spilled_messages_are_checked_before_they_are_read(tmp_path):
    a, b = wire.Channel.pair()
    payload = wire.encode({"ok": True})
    # Not sealed: the sender could still change it while the judge reads.
    fd = _memfd(payload, seal=False)
    a.send_bytes(wire._SPILL_MARK, [fd])
    with pytest.raises(wire.WireError, match="sealed"):
        wire.recv(b)
    # Over the size limit.
    fd2 = _memfd(payload, seal=True)
    a.send_bytes(wire._SPILL_MARK, [fd2])
    with pytest.raises(wire.WireError, match="over"):
        wire.recv(b, maxlength=len(wire._SPILL_MARK))  # the mark fits, the file does not
    # Not a memory file at all: a pipe would block the reader forever.
    r, w = os.pipe()
    a.send_bytes(wire._SPILL_MARK, [r])
    with pytest.raises(wire.WireError, match="plain"):
        wire.recv(b)
    # The mark without a file.
    a.send_bytes(wire._SPILL_MARK)
    with pytest.raises(wire.WireError, match="without"):
        wire.recv(b)
    for x in (fd, fd2, r, w):
        os.close(x)


def test_unexpected_descriptors_are_closed_and_refused():
    a, b = wire.Channel.pair()
    r, w = os.pipe()
    a.send_bytes(wire.encode({"ok": True}), [r])
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(wire.WireError, match="unexpected"):
        wire.recv(b)
    assert set(os.listdir("/proc/self/fd")) <= before
    os.close(r)
    os.close(w)


def test_a_closed_channel_is_end_of_file():
    a, b = wire.Channel.pair()
    a.close()
    with pytest.raises(EOFError):
        wire.recv(b)


def test_a_sealed_message_is_the_same_for_every_receiver():
    a, b = wire.Channel.pair()
    x = torch.randn(700_000)  # over the spill threshold: a mapped memory file
    sealed = wire.Sealed({"op": "add_sets", "sets": [[x]]})
    wire.send(a, sealed)
    got = wire.recv(b)["sets"][0][0]
    assert torch.equal(got, x)
    got.mul_(-1)  # a receiver that writes into what it got changes only its own copy
    wire.send(a, sealed)
    again = wire.recv(b)["sets"][0][0]
    assert torch.equal(again, x)
    open_fds = len(os.listdir("/proc/self/fd"))
    sealed.close()
    assert len(os.listdir("/proc/self/fd")) == open_fds - 1
    with pytest.raises(wire.WireError, match="closed"):
        wire.send(a, sealed)


def test_received_tensors_are_aligned_views_not_copies():
    parts = wire.encode_parts({"a": torch.arange(3, dtype=torch.int8), "b": torch.randn(1000)})
    data = bytearray(b"".join(bytes(p) for p in parts))
    got = wire.decode(data)
    start = torch.frombuffer(data, dtype=torch.uint8).data_ptr()  # the message's own bytes
    assert start <= got["b"].data_ptr() < start + len(data)
    assert (got["b"].data_ptr() - start) % 64 == 0
    # Read-only bytes are copied instead.
    frozen = wire.decode(bytes(data))
    assert torch.equal(frozen["b"], got["b"])


@pytest.mark.parametrize("guess", [1 << 20, 16 << 20])  # smaller than the message, larger
def test_a_large_message_is_written_into_a_spare_made_meanwhile(guess):
    """A memory file allocated on a thread while the message was made carries it: grown
    or shrunk to the message's size, sealed like any other. A small message, or one
    that cannot use the spare, closes it: no descriptor is left behind."""
    before = len(os.listdir("/proc/self/fd"))
    a, b = wire.Channel.pair()
    t = torch.arange(1 << 20, dtype=torch.float32)  # 4 MB
    wire.send(a, {"t": t}, wire.Spare(guess))
    data, fds = b.recv_message()
    assert data == wire._SPILL_MARK and len(fds) == 1
    size = os.fstat(fds[0]).st_size
    assert 4 << 20 < size < (4 << 20) + 4096  # the message's own size, not the guess
    assert fcntl.fcntl(fds[0], fcntl.F_GET_SEALS) & fcntl.F_SEAL_WRITE
    back = wire.decode(wire._read_spilled(fds[0], None))
    assert torch.equal(back["t"], t)
    os.close(fds[0])
    wire.send(a, {"small": 1}, wire.Spare(guess))
    assert wire.recv(b) == {"small": 1}
    del back
    a.close()
    b.close()
    assert len(os.listdir("/proc/self/fd")) == before
