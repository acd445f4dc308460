"""tritonwarm's seed: made by a child of the fork server, copied into each worker's cache.
On a machine without a GPU the child's warm-up fails and no seed is made; the GPU half
is in tests/gpu/test_gpu_sandbox.py."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest
import torch

from autotriton_jupyter.verify import forkserver, tritonwarm


def test_a_seed_that_cannot_be_made_is_empty_and_leaves_nothing(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: tests/gpu/test_gpu_sandbox.py covers what it makes")
    seed = tritonwarm.Seed(str(tmp_path))
    assert seed.pid > 0
    assert seed.files(timeout_s=120) == {}
    assert list(tmp_path.iterdir()) == []  # its folder is gone


def test_a_seed_that_hangs_is_killed_with_what_it_started(tmp_path, monkeypatch):
    import subprocess

    marker = tmp_path / "pid"

    def hang():  # a compiler that never ends, as a hung ptxas would
        p = subprocess.Popen(["sleep", "600"])
        marker.write_text(str(p.pid))
        time.sleep(600)

    monkeypatch.setattr(tritonwarm, "warm_up", hang)
    (tmp_path / "s").mkdir()
    seed = tritonwarm.Seed(str(tmp_path / "s"))
    for _ in range(200):
        if marker.exists() and marker.read_text():
            break
        time.sleep(0.05)
    assert seed.files(timeout_s=1.0) == {}
    time.sleep(0.2)
    for pid in (seed.pid, int(marker.read_text())):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        with open(f"/proc/{pid}/stat") as f:  # killed, not yet reaped by init: a zombie
            assert f.read().split(")")[-1].split()[0] == "Z", f"process {pid} is still running"
    assert list((tmp_path / "s").iterdir()) == []


def _triton_like_warm_up():
    """Writes its cache as Triton does: files under <key>/, and a group file naming them
    by absolute path."""
    from triton.runtime.cache import FileCacheManager

    cache = FileCacheManager("KEY0")
    cubin = cache.put(b"\x7fELF" + bytes(range(256)), "k.cubin", binary=True)
    meta = cache.put('{"name": "k"}', "k.json", binary=False)
    cache.put_group("k.json", {"k.cubin": cubin, "k.json": meta})


def test_a_planted_seed_is_found_by_tritons_own_cache_lookup(tmp_path, monkeypatch):
    from triton.runtime.cache import FileCacheManager

    monkeypatch.setattr(tritonwarm, "warm_up", _triton_like_warm_up)
    (tmp_path / "s").mkdir()
    got = tritonwarm.Seed(str(tmp_path / "s")).files(timeout_s=60)
    assert os.path.join("KEY0", "k.cubin") in got and os.path.join("KEY0", "__grp__k.json") in got
    assert list((tmp_path / "s").iterdir()) == []  # the child's folder is gone
    cache = tmp_path / "worker-cache"
    tritonwarm.plant(got, str(cache))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    group = FileCacheManager("KEY0").get_group("k.json")
    # Both files found, in the worker's own copy (the seed's folder is gone).
    assert group == {"k.cubin": str(cache / "KEY0" / "k.cubin"), "k.json": str(cache / "KEY0" / "k.json")}
    assert (cache / "KEY0" / "k.cubin").read_bytes() == b"\x7fELF" + bytes(range(256))


def test_a_group_file_naming_a_file_not_planted_is_left_as_it_was(tmp_path):
    """Triton then misses the kernel and compiles it, as without a seed."""
    group = b'{"child_paths": {"k.cubin": "/gone/K/k.cubin", "x.so": "/elsewhere/X/x.so"}}'
    tritonwarm.plant({"K/__grp__k.json": group, "K/k.cubin": b"1"}, str(tmp_path))
    assert (tmp_path / "K" / "__grp__k.json").read_bytes() == group
    tritonwarm.plant({"K/__grp__j.json": b"not json"}, str(tmp_path / "other"))
    assert (tmp_path / "other" / "K" / "__grp__j.json").read_bytes() == b"not json"


def test_the_fork_servers_preload_seeds_and_leaves_one_thread_and_no_child(monkeypatch):
    monkeypatch.setattr(tritonwarm, "warm_up", _triton_like_warm_up)
    monkeypatch.setattr(forkserver, "_TRITON_SEED", {})
    before = threading.active_count()
    forkserver._preload(triton_seed=True, confined=False)
    assert threading.active_count() == before  # the primer was joined before any fork
    assert os.path.join("KEY0", "k.cubin") in forkserver._TRITON_SEED


def test_a_preload_says_what_it_did_and_nothing_when_there_was_nothing_to_do(monkeypatch):
    monkeypatch.setattr(tritonwarm, "warm_up", _triton_like_warm_up)
    monkeypatch.setattr(forkserver, "_TRITON_SEED", {})
    monkeypatch.setattr(forkserver, "_DYNAMO_TRIED", False)
    seconds, error = forkserver._preload()
    assert seconds >= 0 and error == ""
    assert forkserver._preload() is None  # a CPU pool's second ask: no line for it
    seconds, error = forkserver._preload(triton_seed=True, confined=False)  # a seed is still made
    assert seconds > 0 and error == "" and forkserver._TRITON_SEED
    monkeypatch.setattr(forkserver, "_DYNAMO_TRIED", False)
    monkeypatch.setitem(sys.modules, "torch._dynamo", None)  # its import now fails
    seconds, error = forkserver._preload()
    assert "torch._dynamo" in error and "Error" in error and seconds >= 0
    assert forkserver._preload() is None  # failed once: not tried (nor said) again


def test_a_primer_that_hangs_stops_the_fork_server_rather_than_fork_with_it(monkeypatch):
    stopped = []
    monkeypatch.setattr(tritonwarm, "prime", lambda: time.sleep(3))
    monkeypatch.setattr(tritonwarm, "warm_up", _triton_like_warm_up)
    monkeypatch.setattr(forkserver, "_PRIME_S", 0.2)
    monkeypatch.setattr(forkserver, "_stop_now", lambda: stopped.append(1))
    monkeypatch.setattr(forkserver, "_TRITON_SEED", {})
    forkserver._preload(triton_seed=True, confined=False)
    assert stopped == [1]
