"""The kernel library as a new user meets it: conditional kernels marked wherever they
show, a file that is not SQLite told apart from a damaged library, failed or reading
commands that make no library, and recovery that leaves nothing beside the damaged file."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from autotriton_jupyter.cli import main
from autotriton_jupyter.store import NoLibrary, NotALibrary, Store, load_kernel
from tests.test_library_faults import _damage
from tests.test_library_faults import _library as _big_library

ROOT = Path(__file__).resolve().parents[1]
CODE = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"
FOUND = "wrong on input set 3 (signs flipped), which the judge made from them."


def _library(path: Path) -> tuple[int, int]:
    """A library with one candidate that passed and one conditional one: their ids."""
    conditional = {
        "verdict": "conditional",
        "checks": [
            {"name": "correctness", "status": "pass", "message": ""},
            {"name": "judge_inputs", "status": "conditional", "message": FOUND},
        ],
    }
    with Store(path) as s:
        t = s.add_task("relu", "class Model: ...")
        common = dict(round=0, model="m", prompt="p", completion="c", code=CODE)
        passed = s.add_candidate(t, sample=0, report={"verdict": "pass"}, **common)
        cond = s.add_candidate(t, sample=1, report=conditional, **common)
    return passed, cond


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autotriton_jupyter", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )


def test_kernels_list_has_a_header_and_marks_a_conditional_kernel(tmp_path, capsys):
    lib = tmp_path / "lib.sqlite"
    passed, cond = _library(lib)
    assert main(["kernels", "accept", "Safe", str(passed), "--library", str(lib)]) == 0
    assert main(["kernels", "accept", "Risky", str(cond), "--conditional", "--library", str(lib)]) == 0
    capsys.readouterr()
    assert main(["kernels", "list", "--library", str(lib)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "task", "verdict", "speedup", "accepted"]
    rows = {line.split()[0]: line.split() for line in lines[1:3]}
    assert rows["Risky"][2] == "conditional" and rows["Safe"][2] == "pass"
    assert "may give wrong results" in lines[-1]


def test_load_kernel_warns_that_a_kernel_is_conditional_and_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # no warning about the CPU interpreter
    monkeypatch.setenv("AUTOTRITON_CACHE", str(tmp_path / "cache"))
    lib = tmp_path / "lib.sqlite"
    passed, cond = _library(lib)
    assert main(["kernels", "accept", "Safe", str(passed), "--library", str(lib)]) == 0
    assert main(["kernels", "accept", "Risky", str(cond), "--conditional", "--library", str(lib)]) == 0
    with pytest.warns(UserWarning, match="accepted as conditional") as got:
        assert load_kernel("Risky", lib).__name__ == "ModelNew"
    text = str(got[0].message)
    assert "may give wrong results" in text and "signs flipped" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a kernel that passed loads without a word
        load_kernel("Safe", lib)


def test_replacing_a_kernel_that_passed_with_a_conditional_one_says_so(tmp_path, capsys):
    lib = tmp_path / "lib.sqlite"
    passed, cond = _library(lib)
    assert main(["kernels", "accept", "K", str(passed), "--library", str(lib)]) == 0
    assert "conditional" not in capsys.readouterr().out
    assert main(["kernels", "accept", "K", str(cond), "--conditional", "--library", str(lib)]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("replaced: K") and "conditional" in line and "replaced a kernel that passed" in line


def test_a_file_that_is_not_sqlite_is_called_so_not_damaged(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("my notes, not a database\n" * 50)
    before = text.read_bytes()
    for write in (True, False):
        with pytest.raises(NotALibrary, match="is not a SQLite file"):
            Store(text, write=write)
    for command in (["list"], ["check"], ["recover"], ["accept", "K", "1"]):
        out = _cli("kernels", *command, "--library", str(text))
        assert out.returncode == 2, (command, out.stderr)
        assert "not a SQLite file" in out.stderr and "nothing was written" in out.stderr, command
        assert "damaged" not in out.stderr and "recover" not in out.stderr, command
    assert text.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["notes.sqlite"]
    # while a SQLite file with a damaged header is still a damaged library
    bad = tmp_path / "lib.sqlite"
    with sqlite3.connect(bad) as db:
        db.execute("CREATE TABLE tasks(id)")
    db.close()
    data = bytearray(bad.read_bytes())
    data[16:100] = b"\xa5" * 84  # the header's fields, past "SQLite format 3"
    bad.write_bytes(bytes(data))
    out = _cli("kernels", "list", "--library", str(bad))
    assert out.returncode == 2 and "is damaged" in out.stderr and "kernels recover" in out.stderr


def test_commands_that_fail_or_only_read_make_no_library(tmp_path, monkeypatch, capsys):
    path = tmp_path / "sub" / "lib.sqlite"
    assert main(["kernels", "accept", "Foo", "3", "--library", str(path)]) == 2
    assert f"no kernel library at {path} yet" in capsys.readouterr().err
    monkeypatch.setenv("AUTOTRITON_LIBRARY", str(path))  # `check` and `recover` need a file
    for command in (["list"], ["candidates"], ["export", "--jsonl"], ["show", "Foo"],
                    ["check"], ["recover"], ["accept", "Foo", "#3", "--conditional"]):
        assert main(["kernels", *command]) in (0, 2), command
        said = capsys.readouterr()
        assert f"no kernel library at {path} yet" in said.out + said.err, command
    with pytest.raises(NoLibrary):
        load_kernel("Foo", path)
    assert not (tmp_path / "sub").exists()


def test_recover_leaves_nothing_beside_the_damaged_library(tmp_path):
    path = _big_library(tmp_path / "damaged.sqlite", candidates=400)
    _damage(path, path.stat().st_size // 4096 // 2)
    before = path.read_bytes()
    out = _cli("kernels", "recover", "--library", str(path), "--out", str(tmp_path / "new.sqlite"))
    assert out.returncode == 0, out.stderr
    assert "recovered" in out.stdout
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.sqlite", "new.sqlite"]


KILLED = textwrap.dedent("""
    import os, sys
    from autotriton_jupyter.store import Store
    s = Store(sys.argv[1])
    t = s.add_task("t", "source")
    s.accept("OnlyInTheLog", t, "# code\\n")
    os.kill(os.getpid(), 9)  # committed to the write-ahead log, never checkpointed
""")


def test_recover_reads_rows_left_in_the_write_ahead_log_and_makes_nothing(tmp_path):
    """After a crash the log holds committed rows: they are recovered, and the shared-memory
    file SQLite needs to read the log, made for it, is removed after."""
    path = tmp_path / "lib.sqlite"
    p = subprocess.run([sys.executable, "-c", KILLED, str(path)], cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == -9
    Path(f"{path}-shm").unlink()
    files = {f.name: f.read_bytes() for f in tmp_path.iterdir()}
    out = _cli("kernels", "recover", "--library", str(path), "--out", str(tmp_path / "new.sqlite"))
    assert out.returncode == 0, out.stderr
    with Store(tmp_path / "new.sqlite", write=False) as s:
        assert [a.name for a in s.accepted()] == ["OnlyInTheLog"]
    left = {f.name: f.read_bytes() for f in tmp_path.iterdir() if f.name != "new.sqlite"}
    assert left.keys() == files.keys()
    assert left["lib.sqlite"] == files["lib.sqlite"] and left["lib.sqlite-wal"] == files["lib.sqlite-wal"]



def test_a_tritonize_that_fails_before_its_save_makes_no_library(tmp_path, capsys):
    """`tritonize` checks before it generates that its results could be saved, without
    making the library: a model that cannot be loaded leaves no empty library behind. A
    library that could not be made is refused before any work, as before."""
    task = Path(__file__).parent / "corpus" / "add_relu" / "task.py"
    path = tmp_path / "sub" / "lib.sqlite"
    assert main(["tritonize", str(task), "--model", "files:" + str(tmp_path / "none"),
                 "--library", str(path)]) == 2
    assert not path.exists() and not (tmp_path / "sub").exists()
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        if os.access(locked, os.W_OK):  # (root writes anywhere)
            return
        capsys.readouterr()
        assert main(["tritonize", str(task), "--model", "tiny", "--library", str(locked / "lib.sqlite")]) == 2
        assert "cannot be made" in capsys.readouterr().err
    finally:
        locked.chmod(0o700)
