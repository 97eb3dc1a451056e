"""Which notes replace which: an agent must not act on a decision that a later one revised.

A note says it replaces another with a link held by a `supersedes` property (frontmatter
`supersedes: "[[Auth design]]"`, a `supersedes:: [[Auth design]]` line, an ADR's "Supersedes
[[0001 Record]]" status line; `replaces` and `obsoletes` too), or that another replaces it with
`superseded_by` (`superseded-by`, `supersededBy`, `replaced_by`, `obsoleted_by`; an ADR's
"Superseded by [5. Use X](0005-use-x.md)"). The scanner says which property holds each link
(`Link.property`); links resolve as the graph resolves them.

A search marks each hit with the notes that replace it (`SearchHit.superseded_by`) and puts
them before it, brought in if the search did not find them: the current decision first, the
one it replaced still there to read. Only the few notes that hold such links are looked at, so a vault
with none pays one empty-set check per search.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from ._fusion import FusedHit
from ._graph import LinkGraph, link_target

if TYPE_CHECKING:
    from k0maru.v1 import common_pb2

SUPERSEDES = frozenset({"supersedes", "replaces", "obsoletes"})
SUPERSEDED_BY = frozenset({"supersededby", "replacedby", "obsoletedby"})


def succession_kind(prop: str) -> str:
    """ "supersedes", "superseded_by" or "" for a link's property, in any case and spelling of
    its separators (`superseded_by`, `superseded-by`, `supersededBy`, `Superseded by`)."""
    if not prop:
        return ""
    key = prop.lower().replace("_", "").replace("-", "").replace(" ", "")
    return "supersedes" if key in SUPERSEDES else "superseded_by" if key in SUPERSEDED_BY else ""


def _holds_succession(doc: common_pb2.Document) -> bool:
    return any(link.property and succession_kind(link.property) for link in doc.links)


class Succession:
    """The notes that hold a `supersedes` or `superseded_by` link (kept with the index's docs,
    under its lock), and the successors of a note."""

    def __init__(self, docs: Iterable[common_pb2.Document] = ()) -> None:
        self._holders: set[str] = {doc.path for doc in docs if _holds_succession(doc)}

    def set_note(self, doc: common_pb2.Document) -> None:
        if _holds_succession(doc):
            self._holders.add(doc.path)
        else:
            self._holders.discard(doc.path)

    def remove_note(self, path: str) -> None:
        self._holders.discard(path)

    def successors(
        self, paths: Iterable[str], docs: Mapping[str, common_pb2.Document], graph: LinkGraph
    ) -> dict[str, list[str]]:
        """For each of `paths` that another note replaces: those notes, sorted."""
        if not self._holders:
            return {}
        found: dict[str, set[str]] = {}
        for path in paths:
            if path in self._holders:  # its own `superseded_by` links
                for link in docs[path].links:
                    if succession_kind(link.property) == "superseded_by":
                        successor = graph.resolve(link_target(link), path)
                        if successor is not None and successor in docs:
                            found.setdefault(path, set()).add(successor)
            for source in graph.backlinks(path) & self._holders:  # the notes linking to it that may say so
                if any(
                    succession_kind(link.property) == "supersedes" and graph.resolve(link_target(link), source) == path
                    for link in docs[source].links
                ):
                    found.setdefault(path, set()).add(source)
        return {path: sorted(successors) for path, successors in found.items()}

    def replaced(self, docs: Mapping[str, common_pb2.Document], graph: LinkGraph) -> dict[str, list[str]]:
        """Every note another replaces, with those notes (`successors` of each note a holder names,
        or that holds a `superseded_by` link itself)."""
        candidates: set[str] = set()
        for holder in self._holders:
            for link in docs[holder].links:
                kind = succession_kind(link.property)
                if kind == "superseded_by":
                    candidates.add(holder)
                elif kind == "supersedes" and (old := graph.resolve(link_target(link), holder)) is not None:
                    candidates.add(old)
        return self.successors(candidates, docs, graph)


class _Ranked(Protocol):
    path: str


R = TypeVar("R", bound=_Ranked)


def before_what_they_replace(ranked: Sequence[R], successors: Mapping[str, list[str]]) -> list[R]:
    """`ranked` with each note that replaces a higher-ranked one moved up to right before it (a
    chain A → B → C found as A reads C, B, A where A was); the note replaced keeps its place
    among the others, so a query's best match is never pushed below notes it matched better.
    A cycle (two notes each saying it replaces the other) ends in a definite order, not a loop."""
    rank = {hit.path: i for i, hit in enumerate(ranked)}
    replaced: dict[str, list[str]] = {}  # a note → the ranked notes it replaces
    for path in rank:
        for successor in successors.get(path, ()):
            if successor in rank:
                replaced.setdefault(successor, []).append(path)
    if not replaced:
        return list(ranked)

    def place(path: str, seen: frozenset[str]) -> tuple[int, int]:
        """(the rank it goes to, how far before that rank's note): its own (rank, 0), or that of
        the highest note it replaces, one step before it."""
        own = (rank[path], 0)
        earlier = [place(p, seen | {path}) for p in replaced.get(path, ()) if p not in seen]
        return min([own, *((r, depth - 1) for r, depth in earlier)])

    return sorted(ranked, key=lambda hit: (*place(hit.path, frozenset()), rank[hit.path]))


SUCCESSION_DEPTH = 4  # a chain of revisions followed this far from a hit (A → B → C → D → E)


def with_successors(
    hits: list[FusedHit],
    successors_of: Callable[[list[str]], dict[str, list[str]]],
    in_scope: Callable[[str], bool] = lambda _path: True,
) -> tuple[list[FusedHit], dict[str, list[str]]]:
    """`hits` with the notes that replace them: a successor the search did not find comes right
    before the note it replaces (`exact` "replaces", that note's score) if it is `in_scope` (the
    folders, tags and days searched), one it found is moved up to there (`before_what_they_replace`;
    `exact` "replaces" too); and
    each note's successors, in scope or not. The caller cuts to its limit."""
    successors = successors_of([h.path for h in hits])
    if not successors:
        return hits, successors
    present = {h.path for h in hits}
    for _ in range(SUCCESSION_DEPTH):  # successors brought in may have been replaced in turn
        brought: list[FusedHit] = []
        out: list[FusedHit] = []
        for hit in hits:
            for path in successors.get(hit.path, ()):
                if path not in present and in_scope(path):
                    present.add(path)
                    brought.append(FusedHit(path=path, score=hit.score, exact="replaces"))
                    out.append(brought[-1])
            out.append(hit)
        hits = out
        if not brought:
            break
        successors |= successors_of([h.path for h in brought])
    ordered = before_what_they_replace(hits, successors)
    was = {hit.path: i for i, hit in enumerate(hits)}
    for i, hit in enumerate(ordered):
        if i < was[hit.path] and not hit.exact:
            hit.exact = "replaces"  # moved up, before what it replaces: it says why (the debugger's badge)
    return ordered, successors
