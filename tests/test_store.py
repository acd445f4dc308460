"""The kernel library: concurrent writers, a writer killed mid-transaction, load_kernel elsewhere,
the chat as sent kept with each candidate (and older libraries without it)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from autotriton_jupyter.recover import recover
from autotriton_jupyter.store import SCHEMA_VERSION, Store, StoreError, load_kernel

WRITER = textwrap.dedent("""
    import sys
    from autotriton_jupyter.store import Store
    path, tag = sys.argv[1], sys.argv[2]
    with Store(path) as s:
        t = s.add_task("t", "source")
        for i in range(40):
            s.add_candidate(t, round=0, sample=i, model=tag, prompt="p", completion="c",
                            code="x", report={"verdict": "fail", "timing": None})
""")

KILLED = textwrap.dedent("""
    import os, sys
    from autotriton_jupyter.store import Store
    s = Store(sys.argv[1])
    t = s.add_task("t", "source")
    s.db.execute("BEGIN IMMEDIATE")
    s.db.execute("INSERT INTO candidates(task_id, round, sample, model, prompt, created)"
                 " VALUES (?, 0, 0, 'half', 'p', 0)", (t,))
    os.kill(os.getpid(), 9)
""")


def test_two_processes_write_at_once(tmp_path):
    path = tmp_path / "lib.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), tag]) for tag in "ab"]
    assert [p.wait(120) for p in procs] == [0, 0]
    with Store(path) as s:
        assert s.counts() == {"tasks": 1, "candidates": 80, "accepted": 0}


def test_a_writer_killed_mid_transaction_loses_only_its_own_work(tmp_path):
    path = tmp_path / "lib.sqlite"
    with Store(path) as s:
        t = s.add_task("t", "source")
        s.add_candidate(
            t, round=0, sample=0, model="kept", prompt="p", completion="c", code="x", report=None
        )
    p = subprocess.run([sys.executable, "-c", KILLED, str(path)])
    assert p.returncode == -9
    with Store(path) as s:
        assert s.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        models = [r[0] for r in s.db.execute("SELECT model FROM candidates")]
        assert models == ["kept"]


def test_accept_names_and_lookup(tmp_path):
    with Store(tmp_path / "lib.sqlite") as s:
        t = s.add_task("t", "source")
        s.accept("fast_relu", t, "code = 1")
        with pytest.raises(StoreError, match="already in the library"):
            s.accept("fast_relu", t, "code = 2")
        s.accept("fast_relu", t, "code = 2", replace=True, edited=True)
        assert s.get("fast_relu").code == "code = 2" and s.get("fast_relu").edited
        with pytest.raises(StoreError, match="not a valid kernel name"):
            s.accept("no good", t, "x")
        with pytest.raises(StoreError, match="No accepted kernel named 'missing'"):
            s.get("missing")


def test_load_kernel_in_a_fresh_process(tmp_path, corpus):
    path = tmp_path / "lib.sqlite"
    code = (corpus / "add_relu" / "pass_masked.py").read_text()
    with Store(path) as s:
        t = s.add_task("add_relu", (corpus / "add_relu" / "task.py").read_text())
        s.accept("add_relu_fast", t, code)
    script = textwrap.dedent(f"""
        import torch
        from autotriton_jupyter import load_kernel
        ModelNew = load_kernel("add_relu_fast", {str(path)!r})
        x, y = torch.randn(5, 7), torch.randn(5, 7)
        print(torch.allclose(ModelNew()(x, y), torch.relu(x + y)))
    """)
    # No TRITON_INTERPRET: on a machine without a GPU load_kernel picks the interpreter
    # itself, and says so.
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.stdout.strip() == "True", out.stderr
    assert "CPU interpreter" in out.stderr


def test_a_corrupt_library_is_a_clear_error(tmp_path):
    bad = tmp_path / "lib.sqlite"
    bad.write_bytes(b"SQLite format 3\x00" + b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="is damaged"):
        Store(bad)
    assert load_kernel  # the public entry point exists


OPENER = textwrap.dedent("""
    import os, sys, time
    from autotriton_jupyter.store import Store
    while not os.path.exists(sys.argv[2]):  # all openers start together
        time.sleep(0.001)
    with Store(sys.argv[1]) as s:
        s.add_task("t", "source")
""")


def test_notebooks_opening_a_new_library_at_the_same_moment_all_get_it(tmp_path):
    """The switch to WAL mode races; SQLite answers the loser "locked" at once (seen here:
    1 of 32 openers failed before the store waited for it)."""
    for r in range(8):
        path, go = tmp_path / f"lib{r}.sqlite", tmp_path / f"go{r}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPENER, str(path), str(go)], stderr=subprocess.PIPE
            )
            for _ in range(4)
        ]
        time.sleep(0.5)
        go.touch()
        errors = [p.communicate(timeout=120)[1].decode() for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, errors
        with Store(path) as s:
            assert s.counts()["tasks"] == 1


def test_a_library_finished_by_another_process_while_this_one_looks_is_opened_not_upgraded(
    tmp_path, monkeypatch
):
    """The race behind a rare "disk I/O error" from two notebooks opening a new library: the
    other process commits its tables after this one read the version (0) but before it
    looked for tables, so a new library looked like an old one and was "upgraded"."""
    import autotriton_jupyter.store as store

    path = tmp_path / "lib.sqlite"
    maker = sqlite3.connect(path, isolation_level=None)
    maker.execute("PRAGMA journal_mode=WAL")  # the other process, before its tables
    real = Store._identify

    def identify(self, version):
        if version == 0:  # this process read the version: now the other one finishes
            maker.execute("BEGIN IMMEDIATE")
            store._run(maker, store.SCHEMA)
            maker.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            maker.execute("COMMIT")
        return real(self, version)

    monkeypatch.setattr(Store, "_identify", identify)
    with Store(path) as s:
        s.add_task("t", "source")
        assert s.counts()["tasks"] == 1
    maker.close()
    assert not list(tmp_path.glob("*.bak"))  # nothing was taken for an old library


SENT = [
    {"role": "user", "content": "Write ModelNew for this task."},
    {"role": "assistant", "content": "```python\nbroken\n```"},
    {"role": "user", "content": "Your previous answer was checked and it failed: ..."},
]


def _schema1_library(path):
    """A library as schema 1 left it: candidates keep only the joined user turns."""
    with Store(path) as s:
        t = s.add_task("t", "source")
        c = s.add_candidate(
            t, round=1, sample=0, model="m", prompt="user turns", completion="answer",
            code="x", report=None,
        )
        s.accept("Old", t, "x", candidate_id=c)
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE candidates DROP COLUMN chat")
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()


def test_the_chat_as_sent_is_kept_with_an_accepted_kernel(tmp_path):
    with Store(tmp_path / "lib.sqlite") as s:
        t = s.add_task("t", "source")
        c = s.add_candidate(
            t, round=1, sample=0, model="m", prompt="joined", completion="answer", code="x",
            report=None, chat=SENT,
        )
        s.accept("New", t, "x", candidate_id=c)
    with Store(tmp_path / "lib.sqlite", write=False) as s:
        assert s.get("New").chat == SENT and s.get("New").prompt == "joined"


def test_a_schema1_library_is_read_as_it_is_and_upgraded_on_write(tmp_path):
    path = tmp_path / "lib.sqlite"
    _schema1_library(path)
    before = path.read_bytes()
    with Store(path, write=False) as s:  # reading: not upgraded, the missing chat is None
        old = s.get("Old")
        assert (old.prompt, old.completion, old.chat) == ("user turns", "answer", None)
    assert path.read_bytes() == before and not list(tmp_path.glob("*.bak"))
    rescued = recover(path, tmp_path / "rescued.sqlite")  # into a library of this schema
    with Store(rescued.out, write=False) as s:
        assert s.get("Old").prompt == "user turns" and s.get("Old").chat is None
    with Store(path) as s:  # writing: upgraded in place, after a backup
        assert s.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
        assert s.get("Old").chat is None and s.get("Old").prompt == "user turns"
        t = s.add_task("t2", "source 2")
        c = s.add_candidate(
            t, round=0, sample=0, model="m", prompt="p", completion="a", code="y",
            report=None, chat=SENT[:1],
        )
        s.accept("New", t, "y", candidate_id=c)
        assert s.get("New").chat == SENT[:1]
    with sqlite3.connect(tmp_path / "lib.sqlite.schema1.bak") as b:
        assert b.execute("PRAGMA user_version").fetchone()[0] == 1


def test_an_accepted_kernel_keeps_both_speed_figures(tmp_path):
    """One call and back to back (device time, what ranks kernels): the library, `kernels
    list` and the panel's REST all see both; a report without them (a CPU run, an older
    library) or one that cannot be read gives none."""
    timing = {"speedup_vs_eager": 0.6, "speedup_vs_compile": 0.9,
              "speedup_vs_eager_b2b": 1.4, "speedup_vs_compile_b2b": 1.1}
    with Store(tmp_path / "lib.sqlite") as s:
        t = s.add_task("t", "source")
        timed = s.add_candidate(t, round=0, sample=0, model="m", prompt="p", completion="c", code="x",
                                report={"verdict": "pass", "timing": timing})
        untimed = s.add_candidate(t, round=0, sample=1, model="m", prompt="p", completion="c", code="x",
                                  report={"verdict": "pass", "timing": None})
        s.accept("Timed", t, "x", candidate_id=timed)
        s.accept("Untimed", t, "x", candidate_id=untimed)
        s.db.execute("UPDATE candidates SET report='{not json' WHERE id=?", (untimed,))
        s.db.commit()
    with Store(tmp_path / "lib.sqlite", write=False) as s:
        a = s.get("Timed")
        assert (a.speedup_vs_eager, a.speedup_vs_eager_b2b, a.speedup_vs_compile_b2b) == (0.6, 1.4, 1.1)
        b = s.get("Untimed")
        assert b.speedup_vs_eager_b2b is None and b.speedup_vs_compile_b2b is None
    odd = ['{"timing": [1.4, 1.1]}', '{"timing": {"speedup_vs_eager_b2b": true, "speedup_vs_compile_b2b": "1.1"}}',
           '{"timing": {"speedup_vs_eager_b2b": -1, "speedup_vs_compile_b2b": 0}}', '[]', '']
    for report in odd:  # written by an older or a damaged program: no figure, no error
        with Store(tmp_path / "lib.sqlite") as s:
            s.db.execute("UPDATE candidates SET report=? WHERE id=?", (report, untimed))
            s.db.commit()
            b = s.get("Untimed")
            assert (b.speedup_vs_eager_b2b, b.speedup_vs_compile_b2b) == (None, None), report
    listed = subprocess.run(
        [sys.executable, "-m", "autotriton_jupyter", "kernels", "list", "--library", str(tmp_path / "lib.sqlite")],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert "1.40x eager back to back" in listed.stdout and "not timed" in listed.stdout, listed.stderr


def test_a_report_with_nan_is_stored_as_json_every_reader_takes(tmp_path):
    """A report holding NaN or inf (a spread of one call, say) is stored with null there:
    SQLite's json functions read it, so its back-to-back figures are not lost."""
    import json as _json

    with Store(tmp_path / "lib.sqlite") as s:
        t = s.add_task("t", "source")
        timing = {"speedup_vs_eager_b2b": 1.5, "candidate_q1_ms": float("nan"), "x": float("inf")}
        c = s.add_candidate(t, round=0, sample=0, model="m", prompt="p", completion="c", code="x",
                            report={"verdict": "pass", "timing": timing, "notes": ["NaN in a note stays"]})
        s.accept("K", t, "x", candidate_id=c)
        stored = s.db.execute("SELECT report FROM candidates WHERE id=?", (c,)).fetchone()[0]
        got = _json.loads(stored)
        assert got["timing"]["candidate_q1_ms"] is None and got["timing"]["x"] is None
        assert got["notes"] == ["NaN in a note stays"]
        assert s.get("K").speedup_vs_eager_b2b == 1.5
