"""NoteDays: each indexed note by its day, so a date scope is exact over the whole vault.

A note's day is its own date (`Document.date`: its frontmatter's, a journal's); when it names
none, the day of the last commit that changed it (`Document.committed`, a vault in git: a clone
stamps every file alike); else its file's modification day (UTC). Neither tantivy nor the vector store holds it: a date
scope is pushed into both as the notes it keeps, listed from here, when they are few enough
(`PUSH_MAX`).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import replace

from k0maru.v1 import common_pb2
from k0maru_common import utc_day

from ._bm25 import Scope

# Notes pushed into the stores at most, at first: a set of paths costs tantivy and Qdrant Edge about
# 1 µs a path (bench/README.md, "Nineteenth wave"). A range that keeps more holds at least this many
# notes, so the check on each channel's ranking finds them there; only when a channel's ranking,
# fetched as deep as the search goes (64 chunks per note asked for), holds too few of them is the
# range pushed whatever its size (`HybridSearcher._pool`). In a vault of at most this many notes
# every range is pushed. (Pushing the notes a range leaves out, when those are fewer, doubled
# brute-force vector search at 100k notes, for ranges the rankings' check serves as well.)
PUSH_MAX = 4096


def note_day(doc: common_pb2.Document) -> str:
    """The day a date scope judges the note by (YYYY-MM-DD; "" when it has none)."""
    return doc.date or doc.committed or utc_day(doc.mtime_ns)


class NoteDays:
    """day → its notes; kept by `IndexState` as it puts and drops documents (under the index's lock)."""

    def __init__(self, docs: Iterable[common_pb2.Document] = ()) -> None:
        self._day_of: dict[str, str] = {}
        self._notes: dict[str, set[str]] = defaultdict(set)
        self._days: list[str] | None = None  # the days, sorted; None: to sort again
        for doc in docs:
            self.put(doc)

    def put(self, doc: common_pb2.Document) -> None:
        day = note_day(doc)
        old = self._day_of.get(doc.path)
        if old == day:
            return
        if old is not None:
            self._drop(doc.path, old)
        self._day_of[doc.path] = day
        if day not in self._notes:
            self._days = None
        self._notes[day].add(doc.path)

    def remove(self, path: str) -> None:
        if (old := self._day_of.pop(path, None)) is not None:
            self._drop(path, old)

    def _drop(self, path: str, day: str) -> None:
        notes = self._notes[day]
        notes.discard(path)
        if not notes:
            del self._notes[day]
            self._days = None

    def newest_first(self, since: str = "", until: str = "") -> Iterator[str]:
        """The notes dated within [since, until] (either may be ""), newest day first, then by
        path; the notes without a day last, when no range is given. Lazily, a day at a time."""
        if self._days is None:
            self._days = sorted(self._notes)
        days = self._days
        lo = bisect.bisect_left(days, since) if since else 0
        hi = bisect.bisect_right(days, until) if until else len(days)
        for day in reversed(days[lo:hi]):
            if day or not (since or until):
                yield from sorted(self._notes.get(day, ()))

    def scope(self, scope: Scope, any_number: bool = False) -> Scope:
        """`scope` with its date range as the notes it keeps (`keep_paths`) when there are at most
        `PUSH_MAX` (or `any_number`); as it is otherwise, or when it has no date range."""
        if not (scope.since or scope.until):
            return scope
        if self._days is None:
            self._days = sorted(self._notes)
        days = self._days
        # a note without a day ("", sorted first) is outside every range
        lo = bisect.bisect_left(days, scope.since) if scope.since else bisect.bisect_right(days, "")
        hi = bisect.bisect_right(days, scope.until) if scope.until else len(days)
        if not any_number and sum(len(self._notes[d]) for d in days[lo:hi]) > PUSH_MAX:
            return scope
        return replace(scope, keep_paths=frozenset(p for d in days[lo:hi] for p in self._notes[d]))
