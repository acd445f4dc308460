"""The reference-timing cache (verify/refcache.py): keyed, expiring, never half-written."""

from __future__ import annotations

import json
import threading

from autotriton_jupyter.verify import refcache


def test_a_timing_comes_back_under_its_key_only(tmp_path):
    c = refcache.ReferenceTimings(tmp_path / "t.json")
    k = refcache.key(source="a", machine={"gpu": "H200"})
    assert c.get(k) is None
    c.put(k, {"eager_ms": 1.5, "compile_ms": 1.0})
    got = c.get(k)
    assert got["eager_ms"] == 1.5 and got["compile_ms"] == 1.0 and got["cached_at"] > 0
    # Anything the timing depends on makes another key.
    assert c.get(refcache.key(source="a", machine={"gpu": "A100"})) is None
    assert c.get(refcache.key(source="b", machine={"gpu": "H200"})) is None


def test_old_entries_are_timed_again(tmp_path, monkeypatch):
    c = refcache.ReferenceTimings(tmp_path / "t.json")
    c.put("k", {"eager_ms": 1.0})
    monkeypatch.setattr(refcache, "MAX_AGE_S", -1)
    assert c.get("k") is None


def test_a_damaged_file_is_read_as_empty_and_replaced(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('{"k": {"stored": 1e12, "timi')
    c = refcache.ReferenceTimings(p)
    assert c.get("k") is None
    c.put("k", {"eager_ms": 2.0})
    assert json.loads(p.read_text())["k"]["timing"]["eager_ms"] == 2.0


def test_concurrent_writers_lose_nothing(tmp_path):
    p = tmp_path / "t.json"

    def write(i: int) -> None:
        refcache.ReferenceTimings(p).put(f"k{i}", {"eager_ms": float(i)})

    threads = [threading.Thread(target=write, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c = refcache.ReferenceTimings(p)
    assert all(c.get(f"k{i}")["eager_ms"] == i for i in range(16))
    assert not [q for q in tmp_path.iterdir() if q.name.startswith(".reference-timing.")]


def test_an_unwritable_cache_is_skipped(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "sub").write_text("a file where the folder should be")
    c = refcache.ReferenceTimings(ro / "sub" / "t.json")
    c.put("k", {"eager_ms": 1.0})  # no exception
    assert c.get("k") is None


def test_the_cache_lives_where_the_environment_says(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTRITON_CACHE", str(tmp_path / "c"))
    assert refcache.default_path() == tmp_path / "c" / "reference-timing.json"
    monkeypatch.delenv("AUTOTRITON_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert refcache.default_path() == tmp_path / "x" / "autotriton" / "reference-timing.json"
