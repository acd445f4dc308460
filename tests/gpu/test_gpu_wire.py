"""On a real GPU: a large reply of device tensors is copied into its memory file through a
page-locked mapping (wire._fill), and arrives as it was sent."""

from __future__ import annotations

import time

import pytest
import torch

from autotriton_jupyter.verify import wire


@pytest.mark.parametrize("mb", [4, 256])  # under and over wire._PIN_BYTES
def test_device_tensors_arrive_as_sent(mb):
    n = mb * (1 << 20) // 4 // 3
    value = {
        "outs": [torch.randn(n, device="cuda"), torch.randn(n // 64, 64, device="cuda").t()],
        "ints": torch.randint(0, 9, (n,), device="cuda", dtype=torch.int32),
        "note": "small",
    }
    a, b = wire.Channel.pair()
    try:
        t0 = time.perf_counter()
        wire.send(a, value)
        got = wire.recv(b)
        spent = time.perf_counter() - t0
    finally:
        a.close()
        b.close()
    assert got["note"] == "small"
    assert torch.equal(got["ints"], value["ints"].cpu())
    for x, y in zip(got["outs"], value["outs"]):
        assert x.stride() == y.stride() and torch.equal(x, y.cpu())
    print(f"{mb} MB of device tensors sent and received in {spent:.3f} s")


def test_a_spared_reply_is_pinned_too():
    value = [torch.randn(1 << 24, device="cuda") for _ in range(4)]
    a, b = wire.Channel.pair()
    try:
        wire.send(a, value, wire.Spare(200 << 20))  # a spare smaller than the message
        got = wire.recv(b)
    finally:
        a.close()
        b.close()
    assert all(torch.equal(x, y.cpu()) for x, y in zip(got, value))
