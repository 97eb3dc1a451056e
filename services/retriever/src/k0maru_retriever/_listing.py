"""Listing a scope's notes, newest first (a search with no query: "what did we write this week",
"every note tagged #incident").

Two ways, whichever reads fewer notes: walk the days from the newest (`NoteDays.newest_first`)
until `limit` notes match, which is quick when many notes are in the scope; or take the notes
the scope's tags and folders name (`ScopeCandidates`) and sort those, which is quick when few are
(a tag on 3 of 100,000 notes: the walk read them all).
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

from k0maru.v1 import common_pb2

from ._bm25 import Scope
from ._days import NoteDays, note_day

ROOT_DIARY = "Root"  # the notes at the vault's top level (`Document.diary`)


class ScopeCandidates:
    """Each indexed note by its tags and its path; kept by `IndexState` as it puts and drops
    documents (under the index's lock)."""

    def __init__(self, docs: Iterable[common_pb2.Document] = ()) -> None:
        self._tagged: dict[str, set[str]] = defaultdict(set)  # a tag as the note spells it → notes
        self._tags_of: dict[str, tuple[str, ...]] = {}
        self._paths: list[str] | None = None  # every note's path, sorted; None: to sort again
        for doc in docs:
            self.put(doc)

    def put(self, doc: common_pb2.Document) -> None:
        path, tags = doc.path, tuple(doc.tags)
        old = self._tags_of.get(path)
        if old is None:
            self._paths = None
        elif old == tags:
            return
        else:
            self._untag(path, old)
        self._tags_of[path] = tags
        tagged = self._tagged
        for tag in tags:
            tagged[tag].add(path)

    def remove(self, path: str) -> None:
        old = self._tags_of.pop(path, None)
        if old is None:
            return
        self._untag(path, old)
        self._paths = None

    def _untag(self, path: str, tags: Iterable[str]) -> None:
        for tag in tags:
            notes = self._tagged.get(tag)
            if notes is not None:
                notes.discard(path)
                if not notes:
                    del self._tagged[tag]

    def of(self, scope: Scope, most: int) -> set[str] | None:
        """The notes that may be in `scope` by its tags, folders and diaries (each checked again
        by `Scope.matches`); None when it names none of them (a date range alone), or when one of
        them names more than `most` notes at best."""
        parts: list[list[set[str] | list[str]]] = []  # each a union; the parts intersected
        for group in scope.tag_groups():
            parts.append([self._tagged.get(t, set()) for t in group])
        if scope.path_prefixes:
            parts.append([self._under(p) for p in scope.path_prefixes])
        if scope.diaries and ROOT_DIARY not in scope.diaries:
            parts.append([self._under(d + "/") for d in scope.diaries])
        if not parts or min(sum(len(u) for u in part) for part in parts) > most:
            return None
        parts.sort(key=lambda part: sum(len(u) for u in part))
        found: set[str] = set().union(*parts[0])
        for part in parts[1:]:
            found &= set().union(*part)
        return found

    def _under(self, prefix: str) -> list[str]:
        """The paths a `Scope.path_prefixes` entry may keep: those in the folder (and the file named
        as it) when it ends with "/", else those that start with it."""
        if self._paths is None:  # 30 ms at 100,000 notes, once after notes come or go
            self._paths = sorted(self._tags_of)
        paths = self._paths
        folder = prefix.rstrip("/")
        if folder != prefix:
            prefix = folder + "/"
        lo = bisect.bisect_left(paths, prefix)
        hi = bisect.bisect_left(paths, prefix + "\U0010ffff", lo)
        out = paths[lo:hi]
        if folder != prefix and (at := bisect.bisect_left(paths, folder)) < len(paths) and paths[at] == folder:
            out.append(folder)
        return out


def note_in_scope(scope: Scope, doc: common_pb2.Document) -> bool:
    """Whether a note is within the folders, diaries, tags and days of `scope` (its day worked
    out only when the scope has a date range)."""
    return scope.empty or scope.matches(
        doc.path, doc.diary, list(doc.tags), note_day(doc) if scope.since or scope.until else ""
    )


def list_scope(
    scope: Scope,
    limit: int,
    docs: Mapping[str, common_pb2.Document],
    days: NoteDays,
    candidates: ScopeCandidates,
) -> list[str]:
    """The paths of the notes in `scope`, newest first (by `note_day`; the notes without a day
    last), then by path; at most `limit`."""

    def within(path: str) -> bool:
        doc = docs.get(path)
        return doc is not None and note_in_scope(scope, doc)

    # walking reads about limit / (the scope's share of the notes) notes; sorting reads the named
    # ones, each costing about 6 times as much (`bench/listing_cost.py`: 100,000 notes)
    most = math.isqrt(limit * len(docs) // 6)
    named = candidates.of(scope, most)
    if named is not None and len(named) <= most:
        inside = sorted(p for p in named if within(p))
        inside.sort(key=lambda p: note_day(docs[p]), reverse=True)  # stable: by path within a day
        return inside[:limit]
    found: list[str] = []
    for path in days.newest_first(scope.since, scope.until):
        if within(path):
            found.append(path)
            if len(found) >= limit:
                break
    return found
