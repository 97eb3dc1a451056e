"""Derived stores that cannot be read: set aside, for a look, and built again.

The vault is the source of truth and every index can be rebuilt from it (DESIGN §5). A store
that a crash of the machine (or a bad disk) left unreadable — a SQLite file that is not a
database or is damaged, a tantivy or Qdrant Edge file that cannot be deserialized, Valkey's
append-only file — made its service exit at every start, and `k0maru up` fail, until someone
found and deleted it by hand. Now the service moves it to `<name>.unreadable-<time>` beside
it, says so in one warning, and starts on an empty one, which the usual paths fill again
(the scanner by a full scan, the retriever from the scanner, vectors from the embedding cache).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


class Unreadable(Exception):
    """A store's files cannot be read as that store (not a missing permission, a lock or a full disk)."""


def set_aside(path: Path) -> Path:
    """Move `path` (a file, with SQLite's side files, or a folder) to `<name>.unreadable-<time>`
    beside it; return where it went."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.unreadable-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.unreadable-{stamp}-{n}")
    path.rename(aside)
    if not aside.is_dir():
        for suffix in SQLITE_SIDE_FILES:
            side = path.with_name(path.name + suffix)
            if side.exists():
                side.rename(aside.with_name(aside.name + suffix))
    return aside


def opened_or_set_aside(
    what: str, path: Path, open_store: Callable[[], T], open_new: Callable[[], T] | None = None
) -> T:
    """`open_store()`; when it raises Unreadable, `path` is set aside and a new store opened
    (by `open_new`, when a new one must differ from a first one)."""
    try:
        return open_store()
    except Unreadable as exc:
        aside = set_aside(path)
        log.warning("%s %s cannot be read (%s): set aside as %s; a new one is built", what, path, exc, aside.name)
        return (open_new or open_store)()


def open_sqlite(path: Path | str) -> sqlite3.Connection:
    """A connection for one owner (WAL, NORMAL sync, autocommit), to a file checked by SQLite's
    `quick_check` (every page read once: a damaged file fails here, not in a later query).
    Unreadable when the file is not a database or is damaged."""
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        problems = [str(row[0]) for row in db.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        db.close()
        if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            raise Unreadable(str(exc)) from exc
        raise
    if problems != ["ok"]:
        db.close()
        raise Unreadable("; ".join(problems[:3]))
    return db
