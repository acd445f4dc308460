"""The judge's message format round-trips plain data and tensors, and never unpickles."""

from __future__ import annotations

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


def test_large_messages_spill_to_a_file_that_is_removed(tmp_path):
    import multiprocessing

    a, b = multiprocessing.Pipe()
    big = torch.randn(600_000)  # 2.4 MB: over the spill threshold
    wire.send(a, {"x": big}, str(tmp_path))
    assert len(list(tmp_path.iterdir())) == 1
    assert torch.equal(wire.recv(b, str(tmp_path))["x"], big)
    assert list(tmp_path.iterdir()) == []
    wire.send(a, {"small": 1}, str(tmp_path))
    assert wire.recv(b, str(tmp_path)) == {"small": 1} and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", [b"../../etc/passwd", b"msg-x.bin/../y", b"msg-missing.bin"])
def test_spill_names_are_validated(tmp_path, name):
    import multiprocessing

    a, b = multiprocessing.Pipe()
    a.send_bytes(wire._SPILL_MARK + name)
    with pytest.raises(wire.WireError):
        wire.recv(b, str(tmp_path))
