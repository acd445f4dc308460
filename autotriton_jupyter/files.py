"""Files written whole or not at all: a full disk or a killed run never leaves half of one."""

from __future__ import annotations

import contextlib
from pathlib import Path


def write_whole(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then put it in place.

    On an OSError (a full disk, a read-only folder) the temporary file is removed and the
    error raised: `path` keeps what it had, and each caller says what was not saved.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
