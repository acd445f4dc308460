"""The kernel library: a SQLite file of tasks, candidates (with their reports) and accepted kernels.

WAL mode and a busy timeout make two notebooks writing at once safe; every write is
one transaction, so a crash loses nothing that was committed and leaves nothing half
written.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import types
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY,
    key TEXT UNIQUE NOT NULL,
    name TEXT NOT NULL,
    source TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS candidates (
    id INTEGER PRIMARY KEY,
    task_id INTEGER NOT NULL REFERENCES tasks(id),
    round INTEGER NOT NULL,
    sample INTEGER NOT NULL,
    model TEXT NOT NULL,
    adapter TEXT,
    prompt TEXT NOT NULL,
    completion TEXT,
    code TEXT,
    verdict TEXT,
    speedup_vs_eager REAL,
    speedup_vs_compile REAL,
    report TEXT,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS accepted (
    id INTEGER PRIMARY KEY,
    name TEXT UNIQUE NOT NULL,
    task_id INTEGER NOT NULL REFERENCES tasks(id),
    candidate_id INTEGER REFERENCES candidates(id),
    code TEXT NOT NULL,
    edited INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS candidates_task ON candidates(task_id);
PRAGMA user_version = 1;
"""


BUSY_TIMEOUT_S = 30.0


def _locked(e: sqlite3.OperationalError) -> bool:
    return "locked" in str(e) or "busy" in str(e)


class StoreError(RuntimeError):
    """The library cannot do what was asked; the message says why and what to do."""


def default_path() -> Path:
    """The library file: $AUTOTRITON_LIBRARY, else the user data directory."""
    env = os.environ.get("AUTOTRITON_LIBRARY")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "autotriton" / "library.sqlite"


def side_dir(library: str | Path | None = None) -> Path:
    """Where files that belong to a library but are not the library live (job progress,
    kernel sources for Triton): the default library's own folder, else a folder of the
    user cache named for the library's path, so a library kept in a project folder gets
    no `jobs/` or `kernels/` beside it."""
    path = Path(library) if library else default_path()
    if path == default_path():
        return path.parent
    env = os.environ.get("AUTOTRITON_CACHE")
    base = Path(env) if env else Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    ) / "autotriton"
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return base / "libraries" / f"{path.stem}-{digest}"


@dataclass
class Accepted:
    """An accepted kernel as stored."""

    name: str
    code: str
    edited: bool
    task_name: str
    task_source: str
    created: float
    verdict: str | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    model: str | None = None
    prompt: str | None = None
    completion: str | None = None


class Store:
    """One library file; open it per use (connections are cheap), close when done."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self._use_wal()
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as e:
            if isinstance(e, sqlite3.OperationalError) and _locked(e):
                raise StoreError(
                    f"The kernel library {self.path} stayed locked by another process for "
                    f"{BUSY_TIMEOUT_S:g} s; let the other notebook or command finish, then "
                    "try again."
                ) from e
            raise StoreError(
                f"The kernel library {self.path} cannot be opened ({e}); move it "
                "aside and a new one will be made."
            ) from e
        self.db.row_factory = sqlite3.Row

    def _use_wal(self) -> None:
        """Switch a new file to WAL (the mode is kept in the file).

        SQLite answers a mode change that races another connection with "locked" at once,
        without the busy timeout: two notebooks opening a new library at the same moment
        do that, so wait here as the timeout would."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                if self.db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    self.db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as e:
                if not _locked(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT: all or nothing, one writer at a time."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # writing -------------------------------------------------------------------------
    def add_task(self, name: str, source: str) -> int:
        key = hashlib.sha256(source.encode()).hexdigest()[:16]
        with self.transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO tasks(key, name, source, created) VALUES (?,?,?,?)",
                (key, name, source, time.time()),
            )
            return db.execute("SELECT id FROM tasks WHERE key=?", (key,)).fetchone()[0]

    def add_candidate(
        self,
        task_id: int,
        *,
        round: int,
        sample: int,
        model: str,
        prompt: str,
        completion: str | None,
        code: str | None,
        report: dict | None,
        adapter: str | None = None,
    ) -> int:
        timing = (report or {}).get("timing") or {}
        with self.transaction() as db:
            cur = db.execute(
                "INSERT INTO candidates(task_id, round, sample, model, adapter, prompt, completion,"
                " code, verdict, speedup_vs_eager, speedup_vs_compile, report, created)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    task_id,
                    round,
                    sample,
                    model,
                    adapter,
                    prompt,
                    completion,
                    code,
                    (report or {}).get("verdict"),
                    timing.get("speedup_vs_eager"),
                    timing.get("speedup_vs_compile"),
                    json.dumps(report) if report else None,
                    time.time(),
                ),
            )
            return int(cur.lastrowid)

    def save_result(self, task_name: str, task_source: str, result: Any) -> tuple[int, list[int]]:
        """Store a pipeline Result's candidates; returns the task id and the candidates' ids."""
        task_id = self.add_task(task_name, task_source)
        ids = [
            self.add_candidate(
                task_id,
                round=c.round,
                sample=c.sample,
                model=result.model,
                prompt=c.prompt,
                completion=c.completion,
                code=c.code,
                report=c.report.to_dict() if c.report else None,
            )
            for c in result.candidates
        ]
        return task_id, ids

    def accept(
        self,
        name: str,
        task_id: int,
        code: str,
        candidate_id: int | None = None,
        edited: bool = False,
        replace: bool = False,
    ) -> None:
        """Keep a kernel under a name; an existing name is an error unless replace=True."""
        if not name.isidentifier():
            raise StoreError(f"{name!r} is not a valid kernel name; use a Python identifier.")
        with self.transaction() as db:
            exists = db.execute("SELECT 1 FROM accepted WHERE name=?", (name,)).fetchone()
            if exists and not replace:
                raise StoreError(
                    f"A kernel named {name!r} is already in the library; choose "
                    "another name or replace it."
                )
            db.execute("DELETE FROM accepted WHERE name=?", (name,))
            db.execute(
                "INSERT INTO accepted(name, task_id, candidate_id, code, edited, created)"
                " VALUES (?,?,?,?,?,?)",
                (name, task_id, candidate_id, code, int(edited), time.time()),
            )

    # reading -------------------------------------------------------------------------
    _ACCEPTED = (
        "SELECT a.name, a.code, a.edited, a.created, t.name AS task_name, t.source AS task_source,"
        " c.verdict, c.speedup_vs_eager, c.speedup_vs_compile, c.model, c.prompt, c.completion"
        " FROM accepted a JOIN tasks t ON t.id = a.task_id"
        " LEFT JOIN candidates c ON c.id = a.candidate_id"
    )

    def accepted(self) -> list[Accepted]:
        rows = self.db.execute(self._ACCEPTED + " ORDER BY a.created DESC").fetchall()
        return [self._row(r) for r in rows]

    def get(self, name: str) -> Accepted:
        row = self.db.execute(self._ACCEPTED + " WHERE a.name=?", (name,)).fetchone()
        if row is None:
            known = ", ".join(a.name for a in self.accepted()[:10]) or "none yet"
            raise StoreError(f"No accepted kernel named {name!r} in {self.path} (known: {known}).")
        return self._row(row)

    @staticmethod
    def _row(r: sqlite3.Row) -> Accepted:
        return Accepted(
            r["name"],
            r["code"],
            bool(r["edited"]),
            r["task_name"],
            r["task_source"],
            r["created"],
            r["verdict"],
            r["speedup_vs_eager"],
            r["speedup_vs_compile"],
            r["model"],
            r["prompt"],
            r["completion"],
        )

    def counts(self) -> dict[str, int]:
        return {
            t: self.db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("tasks", "candidates", "accepted")
        }


def _interpreter_without_gpu(name: str) -> None:
    """On a machine without a GPU, Triton's CPU interpreter runs the kernels.

    Triton picks the interpreter when a kernel is decorated, from TRITON_INTERPRET, and
    its own modules must agree, so it is set for the rest of the process (a machine
    without a GPU has no other way to run them).
    """
    import torch

    if torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET"):
        return
    warnings.warn(
        f"There is no GPU here: {name} runs in Triton's CPU interpreter (correct, but slow; "
        "for checking results, not for speed).",
        stacklevel=4,
    )
    os.environ["TRITON_INTERPRET"] = "1"


def load_kernel(name: str, path: str | Path | None = None) -> Any:
    """The accepted kernel's ModelNew class, loaded from the library into a fresh module."""
    with Store(path) as store:
        kernel = store.get(name)
    # Triton needs the source on disk (it reads kernels with inspect.getsource).
    cache = side_dir(path) / "kernels"
    cache.mkdir(parents=True, exist_ok=True)
    file = cache / f"{name}.py"
    if not file.exists() or file.read_text() != kernel.code:
        tmp = file.with_suffix(".py.tmp")
        tmp.write_text(kernel.code)
        tmp.replace(file)
    module = types.ModuleType(f"autotriton_kernels.{name}")
    module.__file__ = str(file)
    _interpreter_without_gpu(name)
    exec(compile(kernel.code, str(file), "exec"), module.__dict__)
    cls = module.__dict__.get("ModelNew")
    if cls is None:
        raise StoreError(f"The kernel {name!r} defines no ModelNew.")
    return cls
