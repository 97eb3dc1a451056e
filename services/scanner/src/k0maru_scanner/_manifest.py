"""The manifest (path → size, mtime_ns, xxh3, parsed-at) and the change journal, in SQLite.

The scanner is their only writer. The manifest is mirrored in memory so a no-change rescan
never touches the database; every batch of changes is written in one transaction, journal
rows included, so `seq` and the manifest never disagree after a crash.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from k0maru_common import CannotWrite, open_sqlite, opened_or_set_aside

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL,
    parsed_at_ms INTEGER NOT NULL,
    skipped_reason TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind INTEGER NOT NULL,
    path TEXT NOT NULL,
    hash TEXT NOT NULL,
    old_path TEXT NOT NULL DEFAULT '',
    at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


INT64 = (-(2**63), 2**63 - 1)  # SQLite's INTEGER and the protos' int64


def mtime_ns_of(st: os.stat_result) -> int:
    """A file's mtime in ns as the manifest keeps it: within int64. A date past 2262-04-11 (a
    broken archive's, a typo in `touch -d`) raised OverflowError at every commit, and that one
    file stopped the scanner, and with it the indexing of the whole vault."""
    return min(max(st.st_mtime_ns, INT64[0]), INT64[1])


@dataclass(frozen=True)
class FileRecord:
    path: str
    size: int
    mtime_ns: int
    hash: str
    parsed_at_ms: int
    skipped_reason: str = ""

    @property
    def indexed(self) -> bool:
        return not self.skipped_reason


@dataclass(frozen=True)
class JournalEntry:
    seq: int
    kind: int
    path: str
    hash: str
    old_path: str
    at_ms: int


@dataclass
class Batch:
    """What one scan decided; applied atomically by `Manifest.commit`."""

    upserts: list[FileRecord]
    removals: list[str]
    events: list[tuple[int, str, str, str]]  # kind, path, hash, old_path


class Manifest:
    """Unreadable when the file is damaged (see `open_manifest`). `first_seq`: a new journal's
    entries are numbered after it."""

    def __init__(self, path: Path, journal_keep: int, first_seq: int = 0) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        self._db = open_sqlite(path)
        self._db.executescript(_SCHEMA)
        if first_seq and self._db.execute("SELECT 1 FROM sqlite_sequence WHERE name = 'journal'").fetchone() is None:
            self._db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('journal', ?)", (first_seq,))
        self._lock = threading.Lock()
        self._keep = journal_keep
        self.journal_id = self._journal_id()
        self.files: dict[str, FileRecord] = {
            row[0]: FileRecord(*row)
            for row in self._db.execute("SELECT path, size, mtime_ns, hash, parsed_at_ms, skipped_reason FROM files")
        }

    def _journal_id(self) -> str:
        """The name of this journal, made with the manifest (and with the first start of one made
        before there were names). A follower compares it with the one its seq counts in: a new
        journal's seqs begin again, so a seq alone could name another journal's change (a
        manifest lost while the retriever had applied the old journal up to N, in a vault whose
        first scan journals more than N notes: the changes made meanwhile were taken as seen).
        On a full disk a name for this run only: a follower then reconciles once more."""
        made = secrets.token_hex(8)
        try:
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('journal_id', ?)", (made,))
        except sqlite3.Error as exc:
            if (exc.sqlite_errorcode & 0xFF) != sqlite3.SQLITE_FULL:
                raise
            log.warning("the journal's name cannot be kept (the disk is full): one for this run only")
        row = self._db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()
        return str(row[0]) if row else made

    def commit(self, batch: Batch, now_ms: int) -> list[JournalEntry]:
        """Write a batch in one transaction; return the journal entries it created."""
        entries: list[JournalEntry] = []
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
                    [(r.path, r.size, r.mtime_ns, r.hash, r.parsed_at_ms, r.skipped_reason) for r in batch.upserts],
                )
                self._db.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in batch.removals])
                for kind, path, hash_, old in batch.events:
                    cur = self._db.execute(
                        "INSERT INTO journal (kind, path, hash, old_path, at_ms) VALUES (?, ?, ?, ?, ?)",
                        (kind, path, hash_, old, now_ms),
                    )
                    entries.append(JournalEntry(int(cur.lastrowid or 0), kind, path, hash_, old, now_ms))
                if entries:
                    self._db.execute("DELETE FROM journal WHERE seq <= ?", (entries[-1].seq - self._keep,))
                self._db.execute("COMMIT")
            except BaseException as exc:
                if self._db.in_transaction:  # SQLite already rolled back a COMMIT that failed (disk full)
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error) and (exc.sqlite_errorcode & 0xFF) == sqlite3.SQLITE_FULL:
                    raise CannotWrite(f"the scanner's manifest {self._path}", OSError(errno.ENOSPC, "")) from exc
                raise
        for record in batch.upserts:
            self.files[record.path] = record
        for path in batch.removals:
            self.files.pop(path, None)
        return entries

    def meta(self, key: str) -> str:
        """A value the scanner keeps across restarts ("" when none)."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else ""

    def set_meta(self, key: str, value: str) -> None:
        """CannotWrite when the disk is full."""
        with self._lock:
            try:
                self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
            except sqlite3.Error as exc:
                if (exc.sqlite_errorcode & 0xFF) == sqlite3.SQLITE_FULL:
                    raise CannotWrite(f"the scanner's manifest {self._path}", OSError(errno.ENOSPC, "")) from exc
                raise

    def last_seq(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'journal'").fetchone()
        return int(row[0]) if row else 0

    def oldest_seq(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT MIN(seq) FROM journal").fetchone()
        return int(row[0]) if row and row[0] is not None else self.last_seq() + 1

    def changes(self, since_seq: int, limit: int = 0) -> Iterator[JournalEntry]:
        sql = "SELECT seq, kind, path, hash, old_path, at_ms FROM journal WHERE seq > ? ORDER BY seq"
        params: tuple[int, ...] = (since_seq,)
        if limit:
            sql += " LIMIT ?"
            params = (since_seq, limit)
        reader = sqlite3.connect(self._path)  # its own snapshot, apart from the writer
        try:
            for row in reader.execute(sql, params):
                yield JournalEntry(*row)
        finally:
            reader.close()

    def close(self) -> None:
        self._db.close()


def open_manifest(path: Path, journal_keep: int) -> Manifest:
    """The manifest at `path`; one that cannot be read (damaged by a crash of the machine) is set
    aside and a new one made, which the first scan fills from the vault. Its journal goes on
    from a number past any the old one can have reached (the time in ms): a retriever that
    applied the old journal up to seq N would take a new journal's seqs ≤ N for ones it has
    seen; with the jump it finds the gap, asks for changes since N, is told the journal starts
    later, and reconciles with the whole manifest. A manifest that is missing (deleted to reset
    the index, lost with its folder) starts again at 1: `Changes` refuses a `since_seq` past
    the journal's end, and the retriever reconciles."""
    return opened_or_set_aside(
        "the scanner's manifest",
        path,
        lambda: Manifest(path, journal_keep),
        lambda: Manifest(path, journal_keep, first_seq=time.time_ns() // 1_000_000),
    )
