"""Argument types, the parser class, limits and exit codes of the `autotriton` command."""

from __future__ import annotations

import argparse
import os
import re
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_CONDITIONAL = 0, 1, 2, 3

MAX_SAMPLES = 64  # samples per task: each is a sequence in the decode batch and a worker
MAX_SOURCE = 16 * 2**20  # a task or candidate is Python source, not a data file


# Argument types. Each refuses a bad value with one sentence that says what to give
# instead; argparse turns it into exit 2 with the usage above it. Settings that the
# config file also holds are checked by the config's own rules, so both say the same.


def _flag(rule: Any, name: str = "") -> Callable[[str], Any]:
    """An argparse type from a config rule (config.SECTIONS or one made like them)."""

    def parse(text: str) -> Any:
        from ..config import Refused

        try:
            return rule(text)
        except Refused as e:
            raise argparse.ArgumentTypeError(
                f"{text!r} cannot be used{e.because()}: give {e.need}."
            ) from None

    parse.rule = rule  # type: ignore[attr-defined]
    parse.__name__ = name or rule.need
    return parse


def _setting(section: str, field: str) -> Callable[[str], Any]:
    """The argparse type of a flag that overrides the config file's [section] field."""
    from ..config import SECTIONS

    return _flag(SECTIONS[section][field], f"{section}.{field}")


def _show(p: Path | str) -> str:
    """A path for a message: as given, or quoted when it holds anything unprintable or blank."""
    s = str(p)
    return s if s.isprintable() and s.strip() == s and s else repr(s)


def _refuse(message: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(message)


def _stat(text: str) -> tuple[Path, os.stat_result | None]:
    """(path, its stat or None when nothing is there); an unusable path is refused."""
    if not text.strip():
        raise _refuse("an empty path cannot be used; give a file or folder.")
    p = Path(text)
    try:
        return p, p.stat()
    except (FileNotFoundError, NotADirectoryError):
        return p, None
    except (OSError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise _refuse(f"{_show(p)} cannot be used ({why}); check the path.") from None


def _path_tag(kind: str) -> Callable[[Callable[[str], Any]], Callable[[str], Any]]:
    def tag(fn: Callable[[str], Any]) -> Callable[[str], Any]:
        fn.path_kind = kind  # type: ignore[attr-defined]
        return fn

    return tag


@_path_tag("file")
def existing_file(text: str) -> str:
    """A file that exists and can be read."""
    p, st = _stat(text)
    if st is None:
        raise _refuse(f"{_show(p)} does not exist; give the path of an existing file.")
    if stat.S_ISDIR(st.st_mode):
        raise _refuse(f"{_show(p)} is a folder; give a file.")
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(f"{_show(p)} is not a regular file; give a file.")
    if not os.access(p, os.R_OK):
        raise _refuse(f"{_show(p)} cannot be read (permission denied); check its permissions.")
    return text


@_path_tag("source")
def source_file(text: str) -> str:
    """A Python source file (task or candidate): exists, readable, UTF-8, not huge."""
    existing_file(text)
    p = Path(text)
    try:
        with p.open("rb") as f:
            data = f.read(MAX_SOURCE + 1)
    except OSError as e:
        raise _refuse(f"{_show(p)} cannot be read ({e.strerror}); check its permissions.") from None
    if len(data) > MAX_SOURCE:
        raise _refuse(
            f"{_show(p)} is larger than {MAX_SOURCE >> 20} MiB; give a Python source file."
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _refuse(
            f"{_show(p)} is not UTF-8 text (byte {data[e.start]:#04x} at offset {e.start}); "
            "give a Python source file saved as UTF-8."
        ) from None
    return text


@_path_tag("dir")
def existing_dir(text: str) -> str:
    """A folder that exists and can be listed."""
    p, st = _stat(text)
    if st is None:
        raise _refuse(f"{_show(p)} does not exist; give the path of an existing folder.")
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(f"{_show(p)} is not a folder; give a folder.")
    if not os.access(p, os.R_OK | os.X_OK):
        raise _refuse(f"{_show(p)} cannot be read (permission denied); check its permissions.")
    return text


@_path_tag("path")
def existing_path(text: str) -> str:
    """A file or folder that exists."""
    p, st = _stat(text)
    if st is None:
        raise _refuse(f"{_show(p)} does not exist; give the path of an existing file or folder.")
    return text


def _can_create(p: Path) -> None:
    """Refuse a path that cannot be made: its nearest existing ancestor must be a writable folder."""
    for parent in p.absolute().parents:
        try:
            st = parent.stat()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:
            raise _refuse(
                f"{_show(parent)} cannot be used ({e.strerror}); choose another path."
            ) from None
        if not stat.S_ISDIR(st.st_mode):
            raise _refuse(
                f"{_show(parent)} is a file, so {_show(p)} cannot be made; choose another path."
            )
        if not os.access(parent, os.W_OK | os.X_OK):
            raise _refuse(
                f"{_show(p)} cannot be made: the folder {_show(parent)} is not writable; "
                "choose another path."
            )
        return


@_path_tag("out-dir")
def output_dir(text: str) -> str:
    """A folder to write into: an existing writable folder, or a path where one can be made."""
    p, st = _stat(text)
    if st is None:
        _can_create(p)
    elif not stat.S_ISDIR(st.st_mode):
        raise _refuse(f"{_show(p)} exists and is not a folder; give a new or existing folder.")
    elif not os.access(p, os.W_OK | os.X_OK):
        raise _refuse(f"{_show(p)} is not writable; give a folder you can write to.")
    return text


@_path_tag("library")
def library_file(text: str) -> str:
    """A library to read: an existing readable file, or a path with nothing there yet
    (the reading commands then say there is no library, as for AUTOTRITON_LIBRARY)."""
    _p, st = _stat(text)
    return text if st is None else existing_file(text)


@_path_tag("out-file")
def output_file(text: str) -> str:
    """A file to write: an existing writable file, or a path where one can be made."""
    p, st = _stat(text)
    if st is None:
        _can_create(p)
    elif stat.S_ISDIR(st.st_mode):
        raise _refuse(f"{_show(p)} is a folder; give a file path.")
    elif not stat.S_ISREG(st.st_mode):
        raise _refuse(f"{_show(p)} is not a regular file; give a file path.")
    elif not os.access(p, os.W_OK):
        raise _refuse(f"{_show(p)} is not writable; check its permissions.")
    return text


def _names(need: str, ok: Callable[[str], bool]) -> Callable[[str], str]:
    from ..config import Rule, Unusable

    def parse(value: str) -> str:
        if not isinstance(value, str) or not ok(value) or not value.isprintable():
            raise Unusable("")
        return value

    return _flag(Rule(need, parse, kind="name"), need)


def _batches(value: str) -> tuple[int, ...]:
    from ..config import whole

    return tuple(whole(1)(b) for b in value.split(","))


def _then(text: str) -> tuple[str, str]:
    """--then REF.py:DIR: a task file and a folder of candidates."""
    ref, sep, folder = text.rpartition(":")
    if not sep:
        raise _refuse(f"{text!r} cannot be used: give REF.py:CANDIDATES_DIR.")
    return source_file(ref), existing_dir(folder)


_then.path_kind = "then"  # type: ignore[attr-defined]


def _candidate_id() -> Any:
    """A stored candidate's id as the listings print it, '#3', or as a number, '3'."""
    from ..config import Rule, whole

    number = whole(1)

    def parse(text: str) -> int:
        return number.parse(text.strip().removeprefix("#"))

    return Rule("a candidate id such as 3 or #3", parse, kind="id")


def _types() -> dict[str, Callable[[str], Any]]:
    """The argument types that are not config settings (built once per parser)."""
    from ..config import Rule, number, whole

    return {
        "samples": _flag(whole(1, MAX_SAMPLES), "samples"),
        "tokens": _flag(whole(1), "tokens"),
        "count": _flag(whole(1), "count"),
        "id": _flag(_candidate_id(), "id"),
        "rounds": _flag(whole(0), "rounds"),
        "seed": _setting("verify", "seed"),
        "temperature": _flag(number(0), "temperature"),
        "top_p": _flag(number(0, 1, above=True), "top_p"),
        "ms": _flag(number(0), "ms"),
        "seconds": _flag(number(0), "seconds"),
        "idle": _flag(number(0, 7 * 24 * 60, above=True), "idle"),
        "name": _names("a non-empty name", lambda v: bool(v.strip())),
        "kernel": _names("a Python identifier (letters, digits and _, not starting with a digit)", str.isidentifier),
        "adapter": _names(
            "an adapter name of letters, digits, _ and - (not starting with a digit)",
            lambda v: v.replace("-", "_").isidentifier(),
        ),
        "batches": _flag(
            Rule("batch sizes separated by commas (e.g. 1,8)", _batches, kind="list"), "batches"
        ),
    }


class _Usage(SystemExit):
    """argparse's refusal: exit status 2, with the one-line message kept for --json."""

    def __init__(self, message: str) -> None:
        super().__init__(EXIT_USAGE)
        self.message = message


def _one_line(text: object) -> str:
    return re.sub(r"\s*[\r\n]+\s*", " ", str(text)).strip()


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose error line always ends by saying what to do; the usage block
    comes only before argparse's own wording (ours says what to do already)."""

    def error(self, message: str):  # type: ignore[override]
        message = _one_line(message)
        if not message.endswith("."):  # argparse's own wording: the usage, and the help
            message += f"; see `{self.prog} --help`."
            self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr, flush=True)
        raise _Usage(message)
