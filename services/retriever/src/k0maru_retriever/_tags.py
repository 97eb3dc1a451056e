"""TagIndex: one vector per distinct normalised tag, tag co-occurrence, and the EPA basis.

- Tags come from the scanner's Document.tags (frontmatter, inline #tags, VCP `Tag:` lines),
  normalised (NFKC, lower case, spaces collapsed, Traditional Chinese read as Simplified: a
  team's `#資料庫` and `#数据库` are one tag, with one vector and one set of co-occurrences, as
  they are one tag in a search's scope) and filtered by the blacklist of rag_params.json. A tag
  lives as long as one note carries it.
- Tag vectors are embedded through the same Redis queue as chunks (job id TAG_PREFIX + name)
  and kept in their own SQLite file, `tags-<model>.sqlite`, and in memory as one matrix:
  1k × 384 brute force costs microseconds, and the pyramid needs the vectors anyway.
- Co-occurrence (A.5.10): for each pair of tags, the number of notes carrying both; kept
  incrementally (a note's old pairs out, its new pairs in) instead of rebuilt per batch.
- EPA: rebuilt in a background thread when the set of embedded tags has drifted by
  `epaRebuildShare` since the last build (or there was none and there are now ≥ 8 tags);
  saved to `epa-<model>.npz` with the digest of the tag set it came from.
- The TagSpace a query reads is rebuilt only when the tag vectors or the EPA basis change; the
  same background thread builds it, and once it has not changed for a round, every tag's
  near-duplicate set for the semantic merge (so queries only look them up).
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import xxhash

from k0maru_common import model_reads, open_sqlite

from ._epa import MIN_TAGS, EpaBasis
from ._han import simplified_name
from ._params import ParamsFile
from ._tagmemo import TagSpace

if TYPE_CHECKING:
    from ._index import EmbedJob, NoteIndex

log = logging.getLogger(__name__)
TAG_PREFIX = "\x00tag:"  # cannot start a vault path, so never collides with a chunk id
_SPACES = re.compile(r"\s+")
# near-duplicate sets computed ahead for every tag up to this many tags (n² products: ≈ 1–2 s on one core)
FILL_MAX_TAGS = 5000


def normalise_tag(tag: str) -> str:
    name = _SPACES.sub(" ", unicodedata.normalize("NFKC", tag)).strip().lower()
    return name if name.isascii() else simplified_name(name)


def tag_key(name: str, model_id: str) -> str:
    return xxhash.xxh3_64_hexdigest(f"{model_id}|tag|{name}".encode())


class CoOccurrence:
    """Symmetric counts of notes carrying both tags of a pair."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}
        self._top: dict[str, list[str]] = {}  # tag → its neighbours by count (a query reads, notes write)

    def add(self, tags: Iterable[str], sign: int = 1) -> None:
        for a, b in itertools.combinations(sorted(set(tags)), 2):
            self._top.pop(a, None)
            self._top.pop(b, None)
            for x, y in ((a, b), (b, a)):
                row = self.counts.setdefault(x, {})
                count = row.get(y, 0) + sign
                if count > 0:
                    row[y] = count
                else:
                    row.pop(y, None)
                    if not row:
                        self.counts.pop(x, None)

    def weight(self, a: str, b: str) -> int:
        return self.counts.get(a, {}).get(b, 0)

    def neighbours(self, tag: str, n: int) -> list[str]:
        top = self._top.get(tag)
        if top is None or len(top) < n <= len(self.counts.get(tag, ())):
            row = self.counts.get(tag, {})
            top = [t for t, _c in sorted(row.items(), key=lambda kv: (-kv[1], kv[0]))[: max(n, 8)]]
            self._top[tag] = top
        return top[:n]


class TagIndex:
    def __init__(self, path: Path | None, model_id: str, dimension: int, scripts: tuple[str, ...] = ()) -> None:
        """path: the SQLite file of tag vectors (None: in memory only, for tests). `scripts`: those
        the model reads (the embedder's Info; empty: all)."""
        self.model_id = model_id
        self.dimension = dimension
        self.scripts = scripts
        self.lock = threading.RLock()
        self.notes: dict[str, tuple[str, ...]] = {}  # path → its normalised tags
        self.note_count: dict[str, int] = {}  # tag → notes carrying it
        self.cooc = CoOccurrence()
        self.vectors: dict[str, np.ndarray] = {}
        self.blacklist: frozenset[str] = frozenset()
        self.epa: EpaBasis | None = None
        self.epa_error = ""
        self._version = 0  # bumped when the set of tag vectors changes (not when only notes do)
        self._space: tuple[int, EpaBasis | None, TagSpace | None] = (-1, None, None)
        self._drift = 0  # embedded tags added or removed since the basis was built
        self._db = open_sqlite(path or ":memory:")  # Unreadable when damaged
        self._db.execute("CREATE TABLE IF NOT EXISTS tags (name TEXT PRIMARY KEY, key TEXT NOT NULL, vector BLOB)")
        for name, key, blob in self._db.execute("SELECT name, key, vector FROM tags"):
            vector = np.frombuffer(blob, dtype=np.float32) if blob else None
            if vector is not None and vector.shape == (dimension,) and key == tag_key(name, model_id):
                self.vectors[name] = vector

    # -- notes -------------------------------------------------------------------------------

    def clean(self, tags: Iterable[str]) -> tuple[str, ...]:
        out = (normalise_tag(t) for t in tags)
        return tuple(dict.fromkeys(t for t in out if t and t not in self.blacklist))

    def set_note(self, path: str, tags: Iterable[str]) -> list[str]:
        """Record a note's tags; return the tags that now need a vector. A tag the note keeps
        keeps its vector even when no other note carries it."""
        new = self.clean(tags)
        with self.lock:
            old = self.notes.get(path, ())
            if old != new:
                self._forget(path, old, keep=frozenset(new))
                if new:
                    self.notes[path] = new
                    self.cooc.add(new)
                    for t in new:
                        if t not in old:
                            self.note_count[t] = self.note_count.get(t, 0) + 1
            return [t for t in new if t not in self.vectors]

    def drop_note(self, path: str) -> None:
        with self.lock:
            old = self.notes.get(path, ())
            if old:
                self._forget(path, old)

    def _forget(self, path: str, old: tuple[str, ...], keep: frozenset[str] = frozenset()) -> None:
        """Take a note's tags out (those in `keep` stay counted: the note still carries them)."""
        self.notes.pop(path, None)
        self.cooc.add(old, sign=-1)
        gone = []
        for t in old:
            if t in keep:
                continue
            left = self.note_count.get(t, 0) - 1
            if left > 0:
                self.note_count[t] = left
            else:
                self.note_count.pop(t, None)
                if self.vectors.pop(t, None) is not None:
                    self._drift += 1
                    self._version += 1
                gone.append((t,))
        if gone:
            self._db.executemany("DELETE FROM tags WHERE name = ?", gone)

    def prune(self) -> None:
        """Drop the vectors of tags no note carries any more."""
        with self.lock:
            gone = [t for t in self.vectors if t not in self.note_count]
            for t in gone:
                del self.vectors[t]
            if gone:
                self._drift += len(gone)
                self._version += 1
                self._db.executemany("DELETE FROM tags WHERE name = ?", [(t,) for t in gone])

    def missing(self) -> list[str]:
        with self.lock:
            return [t for t in self.note_count if t not in self.vectors]

    def set_blacklist(self, names: Iterable[str]) -> bool:
        """Change the blacklist; True when it changed (the caller then re-applies every note)."""
        new = frozenset(normalise_tag(n) for n in names)
        with self.lock:
            if new == self.blacklist:
                return False
            self.blacklist = new
            return True

    # -- vectors -----------------------------------------------------------------------------

    def apply_vectors(self, results: list[tuple[str, str, np.ndarray]]) -> int:
        """Store (tag, key, vector) results for tags still in use; return how many were stored."""
        rows = []
        with self.lock:
            for name, key, vector in results:
                if name not in self.note_count or key != tag_key(name, self.model_id):
                    continue
                if vector.shape != (self.dimension,):
                    continue
                norm = float(np.linalg.norm(vector))
                unit = (vector / norm if norm > 1e-9 else vector).astype(np.float32)
                if name not in self.vectors:
                    self._drift += 1
                self.vectors[name] = unit
                rows.append((name, key, unit.tobytes()))
            if rows:
                self._db.executemany("INSERT OR REPLACE INTO tags VALUES (?, ?, ?)", rows)
                self._version += 1
        return len(rows)

    def clear_notes(self) -> None:
        """Forget which notes carry which tags (vectors stay; set_note rebuilds the rest)."""
        with self.lock:
            self.notes.clear()
            self.note_count.clear()
            self.cooc = CoOccurrence()

    def clear(self) -> None:
        with self.lock:
            self.notes.clear()
            self.note_count.clear()
            self.cooc = CoOccurrence()
            self.vectors.clear()
            self._db.execute("DELETE FROM tags")
            self._version += 1

    def close(self) -> None:
        with self.lock:
            self._db.close()

    # -- what a query reads ------------------------------------------------------------------

    def neighbours(self, tag: str, n: int) -> list[str]:
        with self.lock:
            return self.cooc.neighbours(tag, n)

    def space(self) -> TagSpace | None:
        """An immutable view of the embedded tags, or None without any. Rebuilt only when the tag
        vectors or the EPA basis change: a note's tags changing alone keeps it (its neighbours are
        read live), and with it the per-tag work cached in it (near-duplicate sets)."""
        with self.lock:
            version, epa, space = self._space
            if version == self._version and epa is self.epa:
                return space
            # not the tags in a script the model cannot read: MiniLM embeds 数据库, 运维 and 故障 all
            # alike (cosine 0.96–1.0), and a query's core tag 数据库 was merged into 故障
            names = sorted(n for n in self.vectors if model_reads(n, self.scripts))
            space = None
            if names:
                matrix = np.stack([self.vectors[n] for n in names])
                space = TagSpace(names, matrix, self.epa, self.neighbours)
            self._space = (self._version, self.epa, space)
            return space

    def digest(self) -> str:
        with self.lock:
            return xxhash.xxh3_64_hexdigest("\n".join(sorted(self.vectors)).encode())

    def needs_epa(self, share: float) -> bool:
        with self.lock:
            n = len(self.vectors)
            if n < MIN_TAGS:
                return False
            if self.epa is None:
                return True
            return self._drift >= max(1, share * n) and self.epa.version != self.digest()

    def force_drift(self) -> None:
        with self.lock:
            self._drift = max(self._drift, len(self.vectors))

    def rebuild_epa(self) -> EpaBasis | None:
        """Build a basis from the current tag vectors (outside the lock) and install it."""
        with self.lock:
            names = sorted(self.vectors)
            if len(names) < MIN_TAGS:
                return None
            matrix = np.stack([self.vectors[n] for n in names])
            drift_at_start = self._drift
            version = self.digest()
        basis = EpaBasis.build(names, matrix, version=version)
        with self.lock:
            self.epa = basis
            self._drift -= drift_at_start
            self._version += 1
        return basis


class TagMaintainer:
    """Background thread: applies the tag blacklist of rag_params.json, and rebuilds (and
    persists) the EPA basis when the tag set has drifted."""

    def __init__(
        self,
        index: NoteIndex,
        params: ParamsFile,
        enqueue: Callable[[list[EmbedJob]], None],
        epa_path: Path | None,
        interval_s: float = 2.0,
    ) -> None:
        self._index = index
        self._tags = index.tags
        self._params = params
        self._enqueue = enqueue
        self._path = epa_path
        self._interval = interval_s
        self._stop = threading.Event()
        self._last_space: TagSpace | None = None
        self._thread = threading.Thread(target=self._run, name="tags", daemon=True)
        if epa_path is not None and epa_path.exists():
            self._tags.epa = EpaBasis.load(epa_path)
            if self._tags.epa is not None and self._tags.epa.version != self._tags.digest():
                self._tags.force_drift()  # tags changed while we were down: rebuild soon

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def step(self) -> bool:
        """One round; True when a new EPA basis was installed."""
        current = self._params.current()
        params = current.retriever
        if self._tags.set_blacklist(params.tag_blacklist):
            self._enqueue(self._index.retag())
        self._prepare_space(current.knowledge_base.deduplication_threshold)
        if not self._tags.needs_epa(params.epa_rebuild_share):
            return False
        basis = self._tags.rebuild_epa()
        if basis is not None and self._path is not None:
            basis.save(self._path)
        log.info("EPA basis rebuilt: %d axes over %d tags", basis.dimension if basis else 0, len(self._tags.vectors))
        return basis is not None

    def _prepare_space(self, threshold: float) -> None:
        """Build the tag space here rather than in the next query, and once it has stayed the same
        for a round (tags are not arriving), every tag's near-duplicate set (at most
        FILL_MAX_TAGS tags: n² products; above, queries fill them as tags come up)."""
        space = self._tags.space()
        if space is not None and space is self._last_space and len(space.names) <= FILL_MAX_TAGS:
            space.fill_near_duplicates(threshold)
        self._last_space = space

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.step()
                self._tags.epa_error = ""
            except (ValueError, np.linalg.LinAlgError, OSError) as exc:
                self._tags.epa_error = f"EPA rebuild failed: {exc}"
                log.error("%s", self._tags.epa_error)
