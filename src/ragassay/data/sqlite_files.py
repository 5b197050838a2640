"""Opening ragassay's own SQLite files (the answer cache, the history) and nobody else's.

A path that is not an SQLite file, an SQLite file of something else (a user's own database given
by mistake), or one that cannot be written is one clear line naming the file and the flag; never a
raw sqlite3 traceback, never tables created in someone's database.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ..errors import InputError

INTERNAL = {"sqlite_sequence", "sqlite_stat1", "sqlite_stat4"}


def open_own_database(
    path: str | Path, own_tables: set[str], what: str, flag: str, write: bool = True
) -> sqlite3.Connection:
    """A connection to ``path``, a ragassay ``what`` (whose tables are ``own_tables``), created when
    missing (``write``). Raises :class:`InputError` for anything else."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{flag}: is a directory, expected the {what} file", p)
    exists = p.exists() and p.stat().st_size > 0
    if not exists and not write:
        raise InputError(f"{flag}: no {what} here yet", p)
    if write:
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(f"{flag}: cannot create its folder ({e.strerror or e})", p) from None
        if exists and not os.access(p, os.W_OK) or not exists and not os.access(p.parent, os.W_OK):
            raise InputError(f"{flag}: the {what} cannot be written here (read-only); give another path", p)
    try:
        db = sqlite3.connect(p, timeout=30.0, isolation_level=None, check_same_thread=False)
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as e:
        raise InputError(
            f"{flag}: not an SQLite database, so not a ragassay {what} ({e}); give another path", p
        ) from None
    foreign = tables - own_tables - INTERNAL
    if foreign:
        db.close()
        raise InputError(
            f"{flag}: an SQLite database of something else (its tables: "
            f"{', '.join(sorted(foreign)[:5])}), not a ragassay {what}; ragassay will not write "
            "into it: give another path",
            p,
        )
    if write:
        try:
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.Error:
            pass  # a file system without shared memory: the default journal still works
    return db
