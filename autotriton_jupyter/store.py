"""The kernel library: a SQLite file of tasks, candidates (with their reports) and accepted kernels.

WAL mode and a busy timeout make two notebooks writing at once safe; every write is
one transaction, so a crash loses nothing that was committed and leaves nothing half
written.

A library that cannot be written is still read: one made by a newer autotriton (its
schema version is higher than SCHEMA_VERSION), one on a read-only file system or
without write permission. A damaged one is never written; `autotriton kernels recover`
copies out what is readable. A file that is not SQLite at all is no damaged library, and
is refused as not a library. A full disk fails the write with the file intact.

Length: the schema, its migrations, and the reads and writes of one SQLite file, each
guarded the same way (damage, a newer schema, read-only); recovery is in recover.py.
"""

from __future__ import annotations

import errno
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
    chat TEXT,
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
"""

# The schema's version, kept in the file as SQLite's user_version. A library made by a
# newer version is read, never written. One made by an older version is upgraded in one
# transaction, after a backup copy beside it; MIGRATIONS[v] takes version v to v + 1.
# An older library opened only for reading is not upgraded: reading goes by the columns
# the file has (see Store._columns).
SCHEMA_VERSION = 2
MIGRATIONS: dict[int, str] = {
    # Libraries from before the version was kept have version 0 and the same tables.
    0: "",
    # The chat as it was sent to the model (JSON), which fine-tuning trains on; `prompt`
    # (the user turns joined) lacks a repair round's failed answer. Older rows keep NULL.
    1: "ALTER TABLE candidates ADD COLUMN chat TEXT",
}


BUSY_TIMEOUT_S = 30.0


def _locked(e: sqlite3.OperationalError) -> bool:
    return "locked" in str(e) or "busy" in str(e)


class StoreError(RuntimeError):
    """The library cannot do what was asked; the message says why and what to do."""


class LibraryDamaged(StoreError):
    """The library file is damaged; nothing is written to it."""


class NoLibrary(StoreError):
    """There is no kernel library at the path (reading only: nothing was made)."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"There is no kernel library at {path} yet (it is made when a kernel or a result "
            "is first saved); nothing was made."
        )
        self.path = path


class NotALibrary(StoreError):
    """The file is not a kernel library (another program's, empty, or of an unknown kind)."""


def _damaged(path: Path, e: BaseException) -> StoreError:
    """LibraryDamaged; NotALibrary for a file that is not SQLite at all (a text file, say),
    where the advice to recover it would lead nowhere."""
    return not_sqlite(path) or LibraryDamaged(
        f"The kernel library {path} is damaged ({e}); nothing was written to it. "
        f"`autotriton kernels recover --library {path}` copies what is still readable into "
        "a new file; then move the damaged one aside and put the recovered one in its place."
    )


SQLITE_HEADER = b"SQLite format 3\x00"  # how every SQLite file begins


def not_sqlite(path: Path) -> NotALibrary | None:
    """NotALibrary for a file that does not begin as a SQLite file does; None for one that
    does, an empty one (refused as empty elsewhere), or one that cannot be read."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError:
        return None
    if not head or head == SQLITE_HEADER:
        return None
    return NotALibrary(
        f"{path} is not a SQLite file, so it is not a kernel library; "
        "nothing was written to it. Give the path of a kernel library, or a path with no "
        "file there for a new one (--library or AUTOTRITON_LIBRARY)."
    )


def _full(e: BaseException) -> bool:
    return isinstance(e, sqlite3.OperationalError) and "full" in str(e) or (
        isinstance(e, OSError) and e.errno == errno.ENOSPC
    )


def _is_damage(e: BaseException) -> bool:
    text = str(e).lower()
    return isinstance(e, sqlite3.DatabaseError) and (
        "malformed" in text or "not a database" in text or "corrupt" in text
    )


def _env_path(name: str) -> Path | None:
    """A path from an environment variable; a blank one, or one with a line break or a NUL,
    is a StoreError (a stray space in a shell profile would otherwise make a library
    named " ")."""
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    if not value.strip() or any(c in value for c in "\n\r\0"):
        raise StoreError(
            f"{name}={value!r} is not a usable path (blank, or with a line break); set it to "
            f"a file path, or unset it for the default."
        )
    return Path(value).expanduser()


def default_path() -> Path:
    """The library file: $AUTOTRITON_LIBRARY, else the user data directory."""
    env = _env_path("AUTOTRITON_LIBRARY")
    if env:
        return env
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "autotriton" / "library.sqlite"


def side_dir(library: str | Path | None = None) -> Path:
    """Where files that belong to a library but are not the library live (job progress,
    kernel sources for Triton).

    The default library's own folder; for a library elsewhere, a folder of the user cache
    named for the library's path, so a library kept in a project folder gets no `jobs/`
    or `kernels/` beside it. AUTOTRITON_LIBRARY_FILES=beside puts them beside any
    library, =cache in the cache for any library."""
    path = Path(library) if library else default_path()
    own = default_path().resolve()  # the default library ($AUTOTRITON_LIBRARY, else XDG's)
    where = os.environ.get("AUTOTRITON_LIBRARY_FILES", "").strip().lower()
    if where not in ("", "beside", "cache"):
        raise StoreError(
            f"AUTOTRITON_LIBRARY_FILES={where!r} is not understood; use `beside` (next to the "
            "library) or `cache` (in the user cache folder)."
        )
    if where == "beside" or (where == "" and path.resolve() == own):
        return path.parent
    env = _env_path("AUTOTRITON_CACHE")
    base = env if env else Path(
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
    speedup_vs_eager: float | None = None  # one call on an idle GPU
    speedup_vs_compile: float | None = None
    model: str | None = None
    prompt: str | None = None
    completion: str | None = None
    chat: list[dict[str, str]] | None = None  # as sent to the model; None in older libraries
    adapter: str | None = None  # the LoRA adapter the model ran with, if any
    # Calls back to back (device time, what ranks candidates by default), from its report.
    speedup_vs_eager_b2b: float | None = None
    speedup_vs_compile_b2b: float | None = None
    candidate_id: int | None = None  # the stored candidate it was accepted from


def _strict_json(value: Any) -> str:
    """JSON that every reader takes (SQLite's json functions too): NaN and infinities as null."""
    text = json.dumps(value)
    if "NaN" in text or "Infinity" in text:  # maybe a float's, maybe only in some text
        text = json.dumps(json.loads(text, parse_constant=lambda _c: None))
    return text


def _b2b_columns() -> str:
    """SQL for the back-to-back speedups kept in a candidate's stored report, read by
    SQLite (the reports are not loaded): NULL where absent, not a number, or the report
    unreadable."""
    cols = []
    for key in ("speedup_vs_eager_b2b", "speedup_vs_compile_b2b"):
        path = f"'$.timing.{key}'"
        cols.append(
            f"CASE WHEN json_valid(c.report) THEN CASE WHEN json_type(c.report, {path})"
            f" IN ('integer', 'real') THEN json_extract(c.report, {path}) END END AS {key}"
        )
    return ", ".join(cols)


def _positive(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and v > 0 else None


class Store:
    """One library file; open it per use (connections are cheap), close when done."""

    def __init__(self, path: str | Path | None = None, *, write: bool = True) -> None:
        """Opens (write=True: makes, or upgrades) the library at `path`.

        write=False only reads: a missing library is NoLibrary, and nothing is made,
        upgraded or switched to WAL."""
        self.path = Path(path) if path else default_path()
        # Why this library may not be written (None: it may); said by every write.
        self.read_only: str | None = None
        self._checked = False
        self._known: dict[str, set[str]] = {}
        if self.path.is_dir():
            raise StoreError(
                f"{self.path} is a folder; a kernel library is a file (e.g. "
                f"{self.path / 'library.sqlite'})."
            )
        if self.path.exists() and not self.path.is_file():
            raise NotALibrary(f"{self.path} is not a regular file, so it is not a kernel library.")
        new = not self.path.exists()
        if new and not write:
            raise NoLibrary(self.path)
        try:
            if new:
                self._create()
            elif not write:
                why = _unwritable(self.path)
                if why:
                    self._open_read_only(why)
                else:
                    # An ordinary connection that may not write: at close SQLite removes the
                    # write-ahead log and shared-memory files it made (a mode=ro one cannot).
                    self.read_only = "it was opened for reading"
                    self.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
                    self.db.execute("PRAGMA query_only = ON")
                self._identify(self.db.execute("PRAGMA user_version").fetchone()[0])
            else:
                self._open_existing()
        except StoreError:
            raise
        except sqlite3.DatabaseError as e:
            if isinstance(e, sqlite3.OperationalError) and _locked(e):
                raise StoreError(
                    f"The kernel library {self.path} stayed locked by another process for "
                    f"{BUSY_TIMEOUT_S:g} s; let the other notebook or command finish, then "
                    "try again."
                ) from e
            if _is_damage(e):
                raise _damaged(self.path, e) from e
            raise StoreError(f"The kernel library {self.path} cannot be opened ({e}).") from e
        self.db.row_factory = sqlite3.Row

    def _create(self) -> None:
        """A new library: its folder and file, the tables, WAL mode; nothing left if that fails."""
        made = [p for p in (self.path.parent, *self.path.parent.parents) if not p.exists()]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self._use_wal()
            self.db.execute("PRAGMA foreign_keys=ON")
            self._make_tables()
        except (OSError, sqlite3.Error, StoreError) as e:
            if hasattr(self, "db"):
                self.db.close()
            if isinstance(e, sqlite3.OperationalError) and _locked(e):
                raise  # another process is making it
            self._remove_if_empty()
            for folder in made:  # innermost first; only those left empty
                try:
                    folder.rmdir()
                except OSError:
                    break
            if isinstance(e, StoreError):
                raise
            raise self._write_error(e, creating=True) from e

    def _make_tables(self) -> None:
        with self.transaction(check=False) as db:
            if db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0:
                # Another process may have made them meanwhile; then they are left as they are.
                _run(db, SCHEMA)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _remove_if_empty(self) -> None:
        """A library this process failed to make is removed if nothing was committed to it
        (no tables in the file, nothing in its write-ahead log)."""
        wal = Path(f"{self.path}-wal")
        if wal.exists() and wal.stat().st_size > 32:  # more than the log's header
            return
        try:
            uri = f"{self.path.resolve().as_uri()}?immutable=1"
            db = sqlite3.connect(uri, uri=True)
            try:
                tables = db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
            finally:
                db.close()
        except sqlite3.Error:
            tables = 0 if self.path.exists() and self.path.stat().st_size == 0 else 1
        if tables == 0:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def _open_existing(self) -> None:
        why = _unwritable(self.path)
        if why:
            self._open_read_only(why)
        else:
            self.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            try:
                self.db.execute("PRAGMA user_version").fetchone()
            except sqlite3.OperationalError:
                if not _disk_full(self.path):
                    raise
                # SQLite cannot make its shared-memory file: read what is there.
                self.db.close()
                self._open_read_only(_FULL_WHY)
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        empty = self._identify(version)
        if version > SCHEMA_VERSION:
            if not self.read_only:
                self.db.close()
                self._open_read_only(
                    f"it was written by a newer autotriton-jupyter (library schema {version}; "
                    f"this one knows up to {SCHEMA_VERSION}); upgrade with "
                    "`pip install -U autotriton-jupyter` to write to it"
                )
            return
        if self.read_only:
            return
        self._use_wal()
        self.db.execute("PRAGMA foreign_keys=ON")
        if version < SCHEMA_VERSION:
            # Read again, the version and the tables in one snapshot: a process making this
            # library may have committed its tables between the first two reads (an old
            # version with tables looked like an old library, and its "upgrade" failed).
            version, empty = self._snapshot()
            if version >= SCHEMA_VERSION:
                return
            if empty:
                self._make_tables()  # one another process is making
            else:
                self._upgrade(version)

    def _snapshot(self) -> tuple[int, bool]:
        """The schema version, and whether there are no tables yet, read in one transaction."""
        self.db.execute("BEGIN")
        try:
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            tables = self.db.execute("SELECT COUNT(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
        finally:
            self.db.execute("COMMIT")
        return version, tables == 0

    def _identify(self, version: int) -> bool:
        """Refuses a file that is not a kernel library, before anything is written to it;
        True for a SQLite file with no tables yet (one another process is making)."""
        if version < 0:
            self.db.close()
            raise NotALibrary(
                f"{self.path} has a schema version ({version}) no autotriton-jupyter writes: it "
                "is not a kernel library, or it is damaged; nothing was written to it."
            )
        if version > SCHEMA_VERSION:
            return False
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables and not self._being_made():
            self.db.close()
            raise NotALibrary(
                f"{self.path} is an empty file (0 bytes), not a kernel library; remove it, or "
                "choose another path, and a new library is made there."
            )
        if tables and not {"tasks", "candidates", "accepted"} <= tables:
            self.db.close()
            raise NotALibrary(
                f"{self.path} is a SQLite file of another kind (its tables: "
                f"{', '.join(sorted(tables)[:5])}), not a kernel library; nothing was written "
                "to it. Choose another path (--library or AUTOTRITON_LIBRARY)."
            )
        return not tables

    def _being_made(self, wait_s: float = 1.0) -> bool:
        """Whether an empty file is a library another process is making (it grows, or gets
        its write-ahead log, within a moment), rather than an empty file left there."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                if self.path.stat().st_size > 0 or Path(f"{self.path}-wal").exists():
                    return True
            except OSError:
                return False
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def _open_read_only(self, why: str) -> None:
        """Reading only; `immutable` where SQLite cannot even make its shared-memory file
        (a read-only folder: then no one can be writing the file either)."""
        self.read_only = why
        uri = self.path.resolve().as_uri()
        try:
            self.db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S,
                                      isolation_level=None)
            self.db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            self.db.close()
            self.db = sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)

    def _upgrade(self, version: int) -> None:
        """Older schema: a backup copy beside the file, then every migration in one transaction."""
        backup = self.path.with_name(f"{self.path.name}.schema{version}.bak")
        if backup.exists():  # an earlier upgrade's: kept, and this one's beside it
            backup = backup.with_name(f"{self.path.name}.schema{version}.{int(time.time())}.bak")
        if not backup.exists():
            tmp = backup.with_name(backup.name + ".tmp")
            try:
                with sqlite3.connect(tmp) as copy:
                    self.db.backup(copy)
                copy.close()
                tmp.replace(backup)
            except (OSError, sqlite3.Error) as e:
                tmp.unlink(missing_ok=True)
                raise self._write_error(e) from e
        with self.transaction() as db:
            current = db.execute("PRAGMA user_version").fetchone()[0]
            for v in range(current, SCHEMA_VERSION):
                _run(db, MIGRATIONS[v])
            _run(db, SCHEMA)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _write_error(self, e: BaseException, creating: bool = False) -> StoreError:
        """What a failed write means, said plainly."""
        if _full(e) or _disk_full(self.path):
            return StoreError(
                f"The disk holding the kernel library {self.path} is full; nothing was "
                + ("made" if creating else "written, and the file is intact")
                + ". Free some space, then try again."
            )
        if _is_damage(e):
            return _damaged(self.path, e)
        text = str(e).lower()
        folder = self.path.parent
        if creating and folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            return StoreError(
                f"A new kernel library cannot be made in {folder}: the folder is not writable "
                f"({e}). Use a writable path (AUTOTRITON_LIBRARY or --library)."
            )
        if "readonly" in text or "read-only" in text or getattr(e, "errno", None) in (
            errno.EROFS, errno.EACCES, errno.EPERM
        ):
            return StoreError(
                f"The kernel library {self.path} cannot be written ({e}); reading works. Use a "
                "writable file (AUTOTRITON_LIBRARY or --library), or make this one writable."
            )
        return StoreError(f"Writing to the kernel library {self.path} failed ({e}).")

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

    def check(self) -> list[str]:
        """SQLite's integrity check: [] when the file is sound, else what is wrong."""
        try:
            rows = [r[0] for r in self.db.execute("PRAGMA integrity_check").fetchall()]
        except sqlite3.DatabaseError as e:
            return [str(e)]
        return [] if rows == ["ok"] else rows

    def writable(self) -> None:
        """Raises the StoreError a write would meet (read-only, newer, damaged, full disk),
        before the work whose results are to be saved begins."""
        self._may_write()
        if _disk_full(self.path):
            raise self._write_error(OSError(errno.ENOSPC, "No space left on device"))

    def _may_write(self) -> None:
        """Refuses a write to a library that cannot take it, saying why; checks the file once."""
        if self.read_only == _FULL_WHY:
            raise self._write_error(OSError(errno.ENOSPC, "No space left on device"))
        if self.read_only:
            raise StoreError(
                f"The kernel library {self.path} is read-only here: {self.read_only}. Reading "
                "works; to save, use a writable library (AUTOTRITON_LIBRARY or --library)."
            )
        if not self._checked:
            try:
                bad = self.db.execute("PRAGMA quick_check").fetchall()
            except sqlite3.DatabaseError as e:
                raise _damaged(self.path, e) from e
            if [r[0] for r in bad] != ["ok"]:
                raise _damaged(self.path, bad[0][0])
            self._checked = True

    @contextmanager
    def transaction(self, check: bool = True) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT: all or nothing, one writer at a time.

        A full disk, a damaged file or a read-only one end in a StoreError saying so;
        the transaction is rolled back and the file left as it was."""
        if check:
            self._may_write()
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            if _locked(e):
                raise
            raise self._write_error(e) from e
        try:
            yield self.db
            self.db.execute("COMMIT")
        except BaseException as e:
            if self.db.in_transaction:
                try:
                    self.db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            if isinstance(e, sqlite3.DatabaseError) and not (
                isinstance(e, sqlite3.IntegrityError)
                or isinstance(e, sqlite3.OperationalError) and _locked(e)
            ):
                raise self._write_error(e) from e
            raise

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
        chat: list[dict[str, str]] | None = None,
    ) -> int:
        """Store one candidate; `chat` is the chat as it was sent to the model."""
        timing = (report or {}).get("timing") or {}
        with self.transaction() as db:
            cur = db.execute(
                "INSERT INTO candidates(task_id, round, sample, model, adapter, prompt, chat,"
                " completion, code, verdict, speedup_vs_eager, speedup_vs_compile, report,"
                " created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    task_id,
                    round,
                    sample,
                    model,
                    adapter,
                    prompt,
                    json.dumps(chat) if chat is not None else None,
                    completion,
                    code,
                    (report or {}).get("verdict"),
                    timing.get("speedup_vs_eager"),
                    timing.get("speedup_vs_compile"),
                    _strict_json(report) if report else None,
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
                adapter=getattr(result, "adapter", None),
                prompt=c.prompt,
                chat=c.chat,
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
    def _columns(self, table: str) -> set[str]:
        """The columns `table` has in this file (an older library read as it is lacks newer ones)."""
        if table not in self._known:
            self._known[table] = {r[1] for r in self.read(f"PRAGMA table_info({table})")}
        return self._known[table]

    def _accepted_sql(self) -> str:
        chat = "c.chat" if "chat" in self._columns("candidates") else "NULL AS chat"
        return (
            "SELECT a.name, a.code, a.edited, a.created, t.name AS task_name,"
            " t.source AS task_source, c.verdict, c.speedup_vs_eager, c.speedup_vs_compile,"
            f" c.model, c.prompt, c.completion, {chat}, c.adapter, {_b2b_columns()}, a.candidate_id"
            " FROM accepted a JOIN tasks t ON t.id = a.task_id"
            " LEFT JOIN candidates c ON c.id = a.candidate_id"
        )

    def read(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        """Rows of a query; a damaged file or a newer schema is a StoreError saying so."""
        try:
            return self.db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as e:
            if _is_damage(e):
                raise _damaged(self.path, e) from e
            if self.db.execute("PRAGMA user_version").fetchone()[0] > SCHEMA_VERSION:
                raise StoreError(
                    f"The kernel library {self.path} was written by a newer autotriton-jupyter"
                    f" and this one cannot read it ({e}); upgrade with "
                    "`pip install -U autotriton-jupyter`."
                ) from e
            raise StoreError(f"Reading the kernel library {self.path} failed ({e}).") from e

    def accepted(self) -> list[Accepted]:
        rows = self.read(self._accepted_sql() + " ORDER BY a.created DESC")
        return [self._row(r) for r in rows]

    def find(self, name: str) -> Accepted | None:
        """The accepted kernel of that name, or None."""
        rows = self.read(self._accepted_sql() + " WHERE a.name=?", (name,))
        return self._row(rows[0]) if rows else None

    def get(self, name: str) -> Accepted:
        """The accepted kernel of that name; none is a StoreError that lists some known names."""
        row = self.find(name)
        if row is None:
            known = ", ".join(a.name for a in self.accepted()[:10]) or "none yet"
            raise StoreError(f"No accepted kernel named {name!r} in {self.path} (known: {known}).")
        return row

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
            _chat(r["chat"]),
            r["adapter"],
            _positive(r["speedup_vs_eager_b2b"]),
            _positive(r["speedup_vs_compile_b2b"]),
            r["candidate_id"],
        )

    def candidate(self, cid: int) -> sqlite3.Row | None:
        """One stored candidate (id, task_id, task_name, round, sample, verdict, code), or None."""
        rows = self.read(
            "SELECT c.id, c.task_id, t.name AS task_name, c.round, c.sample, c.verdict, c.code"
            " FROM candidates c JOIN tasks t ON t.id = c.task_id WHERE c.id=?",
            (cid,),
        )
        return rows[0] if rows else None

    def conditions(self, candidate_id: int | None) -> list[str]:
        """What made a candidate conditional, from its stored report ("check: message" per
        conditional check); [] where that is not recorded."""
        rows = self.read("SELECT report FROM candidates WHERE id=?", (candidate_id,))
        try:
            checks = json.loads(rows[0]["report"])["checks"]
            return [
                f"{c['name']}: {c['message']}"
                for c in checks
                if isinstance(c, dict) and c.get("status") == "conditional"
            ]
        except (IndexError, KeyError, TypeError, ValueError):  # no row, no report, or an odd one
            return []

    def task_names(self, limit: int = 20) -> list[str]:
        """The names of the stored tasks, in order."""
        return [r["name"] for r in self.read("SELECT DISTINCT name FROM tasks ORDER BY name LIMIT ?", (limit,))]

    def candidates(self, task: str | None = None, limit: int = 20) -> list[sqlite3.Row]:
        """The newest stored candidates (of the task of that name, if given), newest first."""
        where, args = ("WHERE t.name=?", (task,)) if task else ("", ())
        return self.read(
            "SELECT c.id, t.name AS task_name, c.round, c.sample, c.model, c.verdict,"
            " c.speedup_vs_eager, c.code IS NOT NULL AS has_code, c.created"
            f" FROM candidates c JOIN tasks t ON t.id = c.task_id {where}"
            " ORDER BY c.id DESC LIMIT ?",
            (*args, limit),
        )

    def counts(self) -> dict[str, int]:
        return {
            t: self.read(f"SELECT COUNT(*) FROM {t}")[0][0]
            for t in ("tasks", "candidates", "accepted")
        }


def _chat(text: str | None) -> list[dict[str, str]] | None:
    """A stored chat, or None where there is none (or it is not a list of messages)."""
    if not text:
        return None
    try:
        chat = json.loads(text)
    except ValueError:
        return None
    ok = isinstance(chat, list) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
        for m in chat
    )
    return chat if ok else None


def _run(db: sqlite3.Connection, script: str) -> None:
    """Statements one by one (executescript would commit the open transaction)."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


_FULL_WHY = "the disk holding it is full"


def _disk_full(path: Path) -> bool:
    """Whether the file system holding `path` has (next to) no room left for SQLite."""
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_blocks > 0 and st.f_bavail * st.f_frsize < 64 * 1024  # /proc has no blocks


def _unwritable(path: Path) -> str | None:
    """Why an existing library cannot be written here, or None."""
    if not os.access(path, os.W_OK):
        try:
            os.statvfs(path)
            ro = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
        except OSError:
            ro = False
        return "it is on a read-only file system" if ro else "the file is not writable"
    if not os.access(path.parent, os.W_OK | os.X_OK):
        # SQLite writes its journal beside the file.
        return f"its folder {path.parent} is not writable"
    return None


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
    """The accepted kernel's ModelNew class, loaded from the library into a fresh module;
    a kernel accepted as conditional loads with a warning saying so."""
    with Store(path, write=False) as store:  # only reads: makes and upgrades nothing
        kernel = store.get(name)
        found = store.conditions(kernel.candidate_id) if kernel.verdict == "conditional" else []
    if kernel.verdict == "conditional":
        # stacklevel 3: the caller of autotriton_jupyter.load_kernel, the notebook's line
        warnings.warn(
            f"The kernel {name!r} was accepted as conditional: right on the task's own inputs, "
            "but wrong on inputs the verifier made from them, so it may give wrong results on "
            "such inputs; check it on yours, or accept a candidate that passed."
            + (f" What the verifier found: {' '.join(found)}" if found else ""),
            stacklevel=3,
        )
    # Triton needs the source on disk (it reads kernels with inspect.getsource).
    try:
        file = _kernel_file(side_dir(path) / "kernels", name, kernel.code)
    except OSError as e:
        # The side folder cannot be written (read-only, full, a file in the way): a folder
        # of this process's own, removed when it ends, holds the source instead.
        import atexit
        import shutil
        import tempfile

        scratch = tempfile.mkdtemp(prefix="autotriton-kernels-")
        atexit.register(shutil.rmtree, scratch, True)
        warnings.warn(
            f"The kernel's source could not be kept in {side_dir(path) / 'kernels'} ({e}); "
            f"it is loaded from {scratch} for this session (AUTOTRITON_CACHE picks the folder).",
            stacklevel=2,
        )
        try:
            file = _kernel_file(Path(scratch), name, kernel.code)
        except OSError as e2:
            raise StoreError(
                f"The kernel {name!r} could not be written anywhere for Triton to read ({e2})."
            ) from e2
    module = types.ModuleType(f"autotriton_kernels.{name}")
    module.__file__ = str(file)
    _interpreter_without_gpu(name)
    exec(compile(kernel.code, str(file), "exec"), module.__dict__)
    cls = module.__dict__.get("ModelNew")
    if cls is None:
        raise StoreError(f"The kernel {name!r} defines no ModelNew.")
    return cls


def _kernel_file(folder: Path, name: str, code: str) -> Path:
    """The kernel's source as a file in `folder` (rewritten only when it changed)."""
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / f"{name}.py"
    if not file.exists() or file.read_text() != code:
        tmp = file.with_suffix(".py.tmp")
        tmp.write_text(code)
        tmp.replace(file)
    return file
