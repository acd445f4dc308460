"""Copying what is still readable out of a damaged kernel library into a new one.

SQLite finds a row by its rowid through the table's b-tree; a damaged page loses the
rows on it (or, for an inner page, the rows under it) and leaves the others readable.
So each table is read in rowid order, in chunks; where a chunk cannot be read, its rows
are tried one by one, and a run of unreadable rowids is skipped past. The damaged file
is only read (opened read-only, nothing made beside it); the copy is written to a new file and moved into
place when complete.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .store import SCHEMA_VERSION, Store, StoreError, not_sqlite

TABLES = ("tasks", "candidates", "accepted")  # parents first: foreign keys point back
CHUNK = 256
# Rowids tried one by one past an unreadable one before the rest of the table is given up.
MAX_GAP = 4096


@dataclass
class Recovered:
    """What a recovery copied, and what it could not read."""

    out: Path
    rows: dict[str, int] = field(default_factory=dict)
    lost: dict[str, list[str]] = field(default_factory=dict)

    def summary(self) -> str:
        parts = [f"{n} {t}" for t, n in self.rows.items()]
        text = f"recovered {', '.join(parts)} into {self.out}"
        for table, why in self.lost.items():
            text += f"\n  {table}: {'; '.join(why)}"
        return text


def _rows(db: sqlite3.Connection, table: str, lost: list[str]) -> list[sqlite3.Row]:
    """Every readable row of a table, in rowid order."""
    out: list[sqlite3.Row] = []
    last = -(2**63)
    while True:
        try:
            chunk = db.execute(
                f"SELECT rowid AS _rowid, * FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT ?",
                (last, CHUNK),
            ).fetchall()
        except sqlite3.DatabaseError as e:
            chunk, last = _one_by_one(db, table, last, lost, e)
            out.extend(chunk)
            if last is None:
                return out
            continue
        if not chunk:
            return out
        out.extend(chunk)
        last = chunk[-1]["_rowid"]


def _one_by_one(
    db: sqlite3.Connection, table: str, last: int, lost: list[str], error: Exception
) -> tuple[list[sqlite3.Row], int | None]:
    """Rows after `last` by rowid, one at a time, up to the next readable chunk."""
    got: list[sqlite3.Row] = []
    start = max(last, 0) + 1
    missed = 0
    rowid = start
    while missed < MAX_GAP:
        try:
            row = db.execute(f"SELECT rowid AS _rowid, * FROM {table} WHERE rowid = ?", (rowid,))
            row = row.fetchone()
        except sqlite3.DatabaseError:
            row = None
        if row is None:
            missed += 1
        else:
            got.append(row)
            missed = 0
            # A readable row: try the chunked read again from here.
            try:
                db.execute(
                    f"SELECT rowid FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT ?",
                    (rowid, CHUNK),
                ).fetchall()
                lost.append(f"rows {start}..{rowid - 1} not all readable ({error})")
                return got, rowid
            except sqlite3.DatabaseError:
                pass
        rowid += 1
    lost.append(f"rows from {start} on not readable ({error})")
    return got, None


@contextmanager
def _reading(path: Path) -> Iterator[sqlite3.Connection]:
    """The damaged file, only read, with nothing left beside it.

    `immutable` makes no file beside it (mode=ro makes a -wal and a -shm, and cannot remove
    them). But it does not see a write-ahead log, which after a crash holds committed rows:
    with one beside the file, mode=ro reads it, and a shared-memory file it had to make is
    removed after. In a read-only folder mode=ro may fail; then `immutable` reads the rest."""
    side = [Path(f"{path}{suffix}") for suffix in ("-wal", "-shm")]
    had = [p.exists() for p in side]
    uri = path.resolve().as_uri()
    db = None
    try:
        if had[0] and side[0].stat().st_size > 0:
            try:
                db = sqlite3.connect(f"{uri}?mode=ro", uri=True)
                db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            except sqlite3.OperationalError:
                if db is not None:
                    db.close()
                db = None
        if db is None:
            db = sqlite3.connect(f"{uri}?immutable=1", uri=True)
        db.row_factory = sqlite3.Row
        yield db
    finally:
        if db is not None:
            db.close()
        for file, was in zip(side, had):
            if not was and file.exists():
                file.unlink()


def recover(path: Path, out: Path | None = None) -> Recovered:
    """Copy the readable rows of the library at `path` into a new library file `out`."""
    path = Path(path)
    if not path.is_file():
        raise StoreError(f"There is no kernel library at {path} yet, so nothing to recover.")
    out = Path(out) if out else path.with_name(path.stem + ".recovered" + path.suffix)
    if out.name.endswith(("-wal", "-shm", "-journal")):
        raise StoreError(
            f"{out} is named like one of SQLite's own files beside a library (which SQLite "
            "removes); choose another --out."
        )
    if path.stat().st_size == 0:
        raise StoreError(f"{path} is an empty file (0 bytes): there is nothing to recover.")
    refused = not_sqlite(path)  # a text file, say: no library, so nothing to recover
    if refused:
        raise refused
    if out.exists():
        raise StoreError(f"{out} exists already; move it aside or choose another --out.")
    with _reading(path) as src:
        return _copy(src, path, out)


def _copy(src: sqlite3.Connection, path: Path, out: Path) -> Recovered:
    """Every readable row of `src` (the damaged library at `path`) into a new library `out`."""
    try:
        version = src.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as e:
        raise StoreError(
            f"{path} cannot be read as a SQLite file at all ({e}); nothing can be recovered "
            "from it with this tool."
        ) from e
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer autotriton-jupyter (schema {version}); recover it "
            "with that version."
        )
    try:
        tables = {r[0] for r in src.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError:
        tables = None  # the schema itself is damaged: try every table anyway
    if tables is not None and not tables & set(TABLES):
        raise StoreError(
            f"{path} is not a kernel library (it has none of the tables {', '.join(TABLES)}); "
            "there is nothing to recover."
        )
    result = Recovered(out)
    tmp = out.with_name(out.name + ".tmp")
    try:
        tmp.unlink(missing_ok=True)
        with Store(tmp) as dst:
            with dst.transaction() as db:
                db.execute("PRAGMA defer_foreign_keys=ON")
                for table in TABLES:
                    lost: list[str] = []
                    try:
                        rows = _rows(src, table, lost)
                    except sqlite3.DatabaseError as e:
                        rows, lost = [], [f"not readable ({e})"]
                    columns = [c[1] for c in db.execute(f"PRAGMA table_info({table})")]
                    kept = 0
                    for r in rows:
                        values = [r[c] if c in r.keys() else None for c in columns]
                        db.execute(
                            f"INSERT INTO {table}({','.join(columns)}) VALUES "
                            f"({','.join('?' * len(columns))})",
                            values,
                        )
                        kept += 1
                    result.rows[table] = kept
                    if lost:
                        result.lost[table] = lost
                _drop_orphans(db, result)
        for suffix in ("-wal", "-shm"):
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)
        tmp.replace(out)
    except (StoreError, OSError) as e:
        raise StoreError(
            f"The recovered copy could not be written to {out}: {str(e).rstrip('.')}. Choose a "
            "folder with room that you can write to with --out; the library was only read."
        ) from e
    finally:
        for suffix in ("", "-wal", "-shm"):
            try:
                Path(f"{tmp}{suffix}").unlink(missing_ok=True)
            except OSError:
                pass
    return result


def _drop_orphans(db: sqlite3.Connection, result: Recovered) -> None:
    """Rows whose task was lost cannot be kept (the foreign keys say so)."""
    for table in ("candidates", "accepted"):
        n = db.execute(
            f"DELETE FROM {table} WHERE task_id NOT IN (SELECT id FROM tasks)"
        ).rowcount
        if n:
            result.rows[table] -= n
            result.lost.setdefault(table, []).append(f"{n} rows whose task was not readable")
    n = db.execute(
        "UPDATE accepted SET candidate_id = NULL WHERE candidate_id IS NOT NULL"
        " AND candidate_id NOT IN (SELECT id FROM candidates)"
    ).rowcount
    if n:
        result.lost.setdefault("accepted", []).append(
            f"{n} kept without their candidate's record (verdict, prompt)"
        )
