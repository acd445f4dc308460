"""The kernel library under damage: a newer schema, damaged pages, a read-only file system,
a full disk. Each gives a clear message and leaves the file's bytes as they were.

Read-only and full-disk cases run in bubblewrap (a read-only bind mount; a 1 MiB tmpfs),
and are skipped where it cannot run."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autotriton_jupyter.recover import recover
from autotriton_jupyter.store import SCHEMA_VERSION, LibraryDamaged, Store, StoreError

ROOT = Path(__file__).resolve().parents[1]


def _library(path: Path, candidates: int = 3) -> Path:
    with Store(path) as s:
        t = s.add_task("gelu", "class Model: ...")
        for i in range(candidates):
            c = s.add_candidate(
                t, round=0, sample=i, model="m", prompt="p" * 200, completion="c" * 500,
                code=f"# kernel {i}\n" + "x = 1\n" * 20, report={"verdict": "pass"},
            )
        s.accept("MyGelu", t, "# kernel\n", candidate_id=c)
    return path


def _write(s: Store) -> None:
    s.accept("Another", s.add_task("t2", "source 2"), "# code\n")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autotriton_jupyter", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )


def test_a_library_from_a_newer_version_is_read_and_never_written(tmp_path):
    path = _library(tmp_path / "lib.sqlite")
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 3")
    db.close()
    before = path.read_bytes()
    with Store(path) as s:
        assert [a.name for a in s.accepted()] == ["MyGelu"]
        with pytest.raises(StoreError, match="newer autotriton-jupyter.*schema 3.*pip install -U"):
            _write(s)
    assert path.read_bytes() == before
    out = _cli("kernels", "list", "--library", str(path))
    assert out.returncode == 0 and "MyGelu" in out.stdout, out.stderr
    assert path.read_bytes() == before


def test_a_library_from_before_versions_is_upgraded_after_a_backup(tmp_path):
    path = _library(tmp_path / "lib.sqlite")
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE candidates DROP COLUMN chat")  # schema 2's column
    db.execute("PRAGMA user_version = 0")
    db.close()
    with Store(path) as s:
        assert s.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert [a.name for a in s.accepted()] == ["MyGelu"]
    backup = tmp_path / "lib.sqlite.schema0.bak"
    with sqlite3.connect(backup) as b:
        assert b.execute("PRAGMA user_version").fetchone()[0] == 0
        assert b.execute("SELECT name FROM accepted").fetchall() == [("MyGelu",)]


def test_an_upgrade_that_fails_leaves_the_library_as_it_was(tmp_path, monkeypatch):
    import autotriton_jupyter.store as store

    path = _library(tmp_path / "lib.sqlite")
    now = SCHEMA_VERSION
    monkeypatch.setattr(store, "SCHEMA_VERSION", now + 1)
    monkeypatch.setitem(store.MIGRATIONS, now, "ALTER TABLE accepted ADD COLUMN note TEXT; SELECT nope")
    with pytest.raises(StoreError):
        Store(path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == now
        columns = [c[1] for c in db.execute("PRAGMA table_info(accepted)")]
        assert "note" not in columns
    monkeypatch.setitem(store.MIGRATIONS, now, "ALTER TABLE accepted ADD COLUMN note TEXT")
    with Store(path) as s:
        assert s.db.execute("PRAGMA user_version").fetchone()[0] == now + 1
        assert [a.name for a in s.accepted()] == ["MyGelu"]


def _damage(path: Path, page: int) -> None:
    """Overwrite one page of the file (the header page is left alone)."""
    with sqlite3.connect(path) as db:
        size = db.execute("PRAGMA page_size").fetchone()[0]
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    data = bytearray(path.read_bytes())
    data[page * size:(page + 1) * size] = b"\xa5" * size
    path.write_bytes(bytes(data))


def test_a_damaged_library_is_never_written_and_what_is_readable_is_recovered(tmp_path):
    path = _library(tmp_path / "lib.sqlite", candidates=400)
    pages = path.stat().st_size // 4096
    _damage(path, pages // 2)
    before = path.read_bytes()
    with Store(path) as s:
        assert s.check()  # the integrity check names the damage
        with pytest.raises(LibraryDamaged, match="is damaged.*kernels recover"):
            _write(s)
    assert path.read_bytes() == before
    out = _cli("kernels", "check", "--library", str(path))
    assert out.returncode == 1 and "damaged" in out.stderr + out.stdout
    assert "Traceback" not in out.stderr

    got = recover(path)
    assert got.out == tmp_path / "lib.recovered.sqlite"
    assert 300 < got.rows["candidates"] < 400 and got.rows["tasks"] == 1
    assert got.lost["candidates"]
    with Store(got.out) as s:
        assert s.check() == []
        assert [a.name for a in s.accepted()] == ["MyGelu"]
        _write(s)
    assert path.read_bytes() == before
    with pytest.raises(StoreError, match="exists already"):
        recover(path)


def test_a_sqlite_file_unreadable_past_its_first_bytes_is_said_to_be_damaged_and_left_alone(tmp_path):
    # (a file that does not even begin as SQLite is refused as not SQLite: test_library_newuser)
    bad = tmp_path / "lib.sqlite"
    content = b"SQLite format 3\x00" + b"this is not sqlite" * 100
    bad.write_bytes(content)
    with pytest.raises(LibraryDamaged, match="is damaged"):
        Store(bad)
    assert bad.read_bytes() == content
    out = _cli("kernels", "list", "--library", str(bad))
    assert out.returncode != 0 and "damaged" in out.stderr and "Traceback" not in out.stderr
    assert bad.read_bytes() == content


def _bwrap(*mount: str, script: str) -> dict:
    """Run a Python script under bubblewrap with extra mounts; its last line is JSON."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        pytest.skip("bubblewrap is not installed")
    probe = subprocess.run([bwrap, "--dev-bind", "/", "/", "true"], capture_output=True)
    if probe.returncode:
        pytest.skip(f"bubblewrap cannot run here: {probe.stderr.decode().strip()}")
    p = subprocess.run(
        [bwrap, "--dev-bind", "/", "/", *mount, sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True, text=True, cwd=ROOT, timeout=180,
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_read_only_library_is_read_and_writing_says_why(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = _library(folder / "lib.sqlite")
    before = path.read_bytes()
    got = _bwrap("--ro-bind", str(folder), str(folder), script=f"""
        import json, subprocess, sys
        from autotriton_jupyter.store import Store, StoreError
        out = {{}}
        with Store({str(path)!r}) as s:
            out["names"] = [a.name for a in s.accepted()]
            try:
                s.accept("Another", 1, "# code")
            except StoreError as e:
                out["error"] = str(e)
        p = subprocess.run([sys.executable, "-m", "autotriton_jupyter", "kernels", "list",
                            "--library", {str(path)!r}], capture_output=True, text=True)
        out["list"] = [p.returncode, p.stdout, p.stderr]
        print(json.dumps(out))
    """)
    assert got["names"] == ["MyGelu"]
    assert "read-only file system" in got["error"] and "Reading works" in got["error"]
    assert got["list"][0] == 0 and "MyGelu" in got["list"][1], got["list"]
    assert path.read_bytes() == before


def test_a_full_disk_says_so_and_leaves_the_library_intact(tmp_path):
    path = _library(tmp_path / "lib.sqlite")
    before = path.read_bytes()
    got = _bwrap("--size", str(1 << 20), "--tmpfs", "/mnt", script=f"""
        import json, os, shutil
        from pathlib import Path
        from autotriton_jupyter.store import Store, StoreError
        shutil.copy({str(path)!r}, "/mnt/lib.sqlite")
        out = {{}}
        s = Store("/mnt/lib.sqlite")  # open when the disk fills up
        fd = os.open("/mnt/filler", os.O_WRONLY | os.O_CREAT)
        try:  # fill the disk to the last block
            while True:
                os.write(fd, b"x" * 512)
        except OSError:
            os.close(fd)
        try:
            s.add_task("big", "y" * 500_000)
        except StoreError as e:
            out["error"] = str(e)
        s.close()
        with Store("/mnt/lib.sqlite") as s:  # opened on a full disk: read, not written
            out["names"] = [a.name for a in s.accepted()]
            try:
                s.add_task("small", "z")
            except StoreError as e:
                out["again"] = str(e)
        out["bytes"] = Path("/mnt/lib.sqlite").read_bytes().hex()
        try:
            Store("/mnt/new/lib.sqlite")
        except StoreError as e:
            out["new"] = str(e)
        out["left"] = sorted(os.listdir("/mnt"))
        print(json.dumps(out))
    """)
    assert "disk holding the kernel library" in got["error"] and "is full" in got["error"]
    assert "file is intact" in got["error"] and "file is intact" in got["again"]
    assert got["names"] == ["MyGelu"]
    assert bytes.fromhex(got["bytes"]) == before
    assert "is full" in got["new"]
    assert got["left"] == ["filler", "lib.sqlite"]


def _env_cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        [sys.executable, "-m", "autotriton_jupyter", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=120, env={**os.environ, **env},
    )


def test_reading_a_library_that_is_not_there_makes_nothing(tmp_path):
    path = tmp_path / "sub" / "lib.sqlite"
    env = {"AUTOTRITON_LIBRARY": str(path)}
    out = _env_cli(env, "kernels", "list")
    assert out.returncode == 0 and "no accepted kernels yet" in out.stdout, out.stderr
    out = _env_cli(env, "kernels", "show", "MyGelu")
    assert out.returncode == 2 and "no kernel library" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    from autotriton_jupyter.store import NoLibrary

    with pytest.raises(NoLibrary):
        Store(path, write=False)
    assert not (tmp_path / "sub").exists()


@pytest.mark.parametrize(
    "make,why",
    [
        (lambda db: db.execute("CREATE TABLE notes(body TEXT)"), "another kind"),
        (lambda db: db.execute("PRAGMA user_version = -4"), "schema version"),
    ],
    ids=["foreign_tables", "negative_version"],
)
def test_a_sqlite_file_of_another_kind_is_refused_and_left_alone(tmp_path, make, why):
    path = tmp_path / "notes.sqlite"
    db = sqlite3.connect(path)
    make(db)
    db.commit()
    db.close()
    before = path.read_bytes()
    from autotriton_jupyter.store import NotALibrary

    for write in (True, False):
        with pytest.raises(NotALibrary, match=why):
            Store(path, write=write)
    out = _cli("kernels", "list", "--library", str(path))
    assert out.returncode == 2 and why in out.stderr and "Traceback" not in out.stderr
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.sqlite"]  # no backup, no WAL


def test_an_empty_file_is_not_taken_for_a_new_library(tmp_path):
    path = tmp_path / "lib.sqlite"
    path.touch()
    from autotriton_jupyter.store import NotALibrary

    with pytest.raises(NotALibrary, match="empty file"):
        Store(path)
    assert path.stat().st_size == 0


@pytest.mark.parametrize("value", [" ", "lib\n.sqlite"])
def test_a_blank_or_broken_library_variable_is_refused(tmp_path, value):
    out = _env_cli({"AUTOTRITON_LIBRARY": value}, "kernels", "list")
    assert out.returncode == 2 and "AUTOTRITON_LIBRARY" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_tritonize_refuses_a_library_it_cannot_write_before_any_work(tmp_path):
    path = _library(tmp_path / "lib.sqlite")
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 9")
    db.close()
    task = ROOT / "tests" / "corpus" / "add_relu" / "task.py"
    out = _cli("tritonize", str(task), "--library", str(path), "--model", "no-such-model-here")
    assert out.returncode == 2, out.stderr
    assert "newer autotriton-jupyter" in out.stderr and "Traceback" not in out.stderr


def test_kernel_sources_go_elsewhere_when_their_folder_cannot_be_written(tmp_path, monkeypatch):
    from autotriton_jupyter import store as store_mod

    lib = tmp_path / "proj" / "lib.sqlite"
    lib.parent.mkdir()
    with Store(lib) as s:
        s.accept("K", s.add_task("t", "src"), "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n")
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("")
    monkeypatch.setenv("AUTOTRITON_CACHE", str(blocker))
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # set for the process otherwise
    assert store_mod.side_dir(lib.parent / "other.sqlite").parent.parent == blocker
    with pytest.warns(UserWarning, match="could not be kept"):
        cls = store_mod.load_kernel("K", lib)
    assert cls.__name__ == "ModelNew"
    assert not {"kernels", "jobs"} & {p.name for p in lib.parent.iterdir()}


def test_recover_reads_a_library_in_a_read_only_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = _library(folder / "lib.sqlite")
    out = tmp_path / "rescued.sqlite"
    got = _bwrap("--ro-bind", str(folder), str(folder), script=f"""
        import json, subprocess, sys
        p = subprocess.run([sys.executable, "-m", "autotriton_jupyter", "kernels", "recover",
                            "--library", {str(path)!r}, "--out", {str(out)!r}],
                           capture_output=True, text=True)
        q = subprocess.run([sys.executable, "-m", "autotriton_jupyter", "kernels", "recover",
                            "--library", {str(path)!r}], capture_output=True, text=True)
        print(json.dumps([p.returncode, p.stdout, p.stderr, q.returncode, q.stderr]))
    """)
    assert got[0] == 0, got[2]
    assert "1 accepted" in got[1] or "accepted" in got[1]
    assert got[3] == 2 and "--out" in got[4] and "Traceback" not in got[4]
    with Store(out, write=False) as s:
        assert [a.name for a in s.accepted()] == ["MyGelu"]
