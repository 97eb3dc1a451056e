"""Which notes replace which (`_succession`): chains, cycles, and a successor's own successor."""

from __future__ import annotations

from k0maru.v1 import common_pb2
from k0maru_retriever._fusion import FusedHit
from k0maru_retriever._graph import LinkGraph, link_target
from k0maru_retriever._succession import Succession, succession_kind, with_successors


def doc(path: str, **links: str) -> common_pb2.Document:
    """A note whose links are `property=target` (`superseded_by="b"`)."""
    return common_pb2.Document(
        path=path, links=[common_pb2.Link(target=t, property=p) for p, t in links.items()], hash=path
    )


def ranked(docs: list[common_pb2.Document], found: list[str]) -> list[tuple[str, str]]:
    graph = LinkGraph()
    graph.load({d.path: [link_target(lk) for lk in d.links] for d in docs}, {d.path: [] for d in docs})
    by_path = {d.path: d for d in docs}
    succession = Succession(docs)
    hits, _ = with_successors(
        [FusedHit(p, 1.0 / (i + 1)) for i, p in enumerate(found)],
        lambda paths: succession.successors(paths, by_path, graph),
    )
    return [(h.path, h.exact) for h in hits]


def test_property_spellings():
    assert [succession_kind(p) for p in ("Supersedes", "superseded_by", "Superseded-By", "supersededBy")] == [
        "supersedes",
        "superseded_by",
        "superseded_by",
        "superseded_by",
    ]
    assert [succession_kind(p) for p in ("replaces", "replaced_by", "related", "up", "")] == [
        "supersedes",
        "superseded_by",
        "",
        "",
        "",
    ]


def test_a_chain_of_revisions_reads_newest_first_from_whichever_note_was_found():
    """A → B → C (each replaced by the next, said from either end): a search that finds only the
    oldest answers the newest, then the one between, then it, where it was; notes not in the
    chain keep their places, and a note replaced by itself or in a cycle does not loop."""
    notes = [doc("a.md", superseded_by="b"), doc("b.md"), doc("c.md", supersedes="b"), doc("x.md")]
    assert ranked(notes, ["x.md", "a.md"]) == [("x.md", ""), ("c.md", "replaces"), ("b.md", "replaces"), ("a.md", "")]
    assert ranked(notes, ["a.md", "c.md", "b.md"]) == [("c.md", "replaces"), ("b.md", "replaces"), ("a.md", "")]
    # the note replaced is the query's best match: its successor moves up, it is not pushed down
    assert ranked(notes, ["b.md", "x.md", "c.md"]) == [("c.md", "replaces"), ("b.md", ""), ("x.md", "")]
    assert ranked(notes, ["c.md", "x.md", "b.md"]) == [("c.md", ""), ("x.md", ""), ("b.md", "")]  # already above
    cycle = [doc("p.md", supersedes="q"), doc("q.md", supersedes="p"), doc("s.md", supersedes="s")]
    assert ranked(cycle, ["p.md", "s.md"]) == [("p.md", "replaces"), ("q.md", "replaces"), ("s.md", "")]  # no loop
