"""Wikilink resolution the way Obsidian does it, and backlinks."""

from __future__ import annotations

from k0maru_retriever._graph import LinkGraph


def test_resolution_order_and_shortest_path():
    g = LinkGraph()
    for p in ("Note.md", "deep/a/Note.md", "projects/Plan.md", "projects/x/Plan.md", "folder/Sibling.md"):
        g.set_note(p, [])
    assert g.resolve("note") == "Note.md"  # case-insensitive, shortest path
    assert g.resolve("deep/a/Note") == "deep/a/Note.md"  # exact path
    assert g.resolve("x/Plan") == "projects/x/Plan.md"  # partial path suffix
    assert g.resolve("Plan") == "projects/Plan.md"
    assert g.resolve("Sibling", "folder/Other.md") == "folder/Sibling.md"
    assert g.resolve("Missing") is None


def test_unresolved_link_resolves_when_note_appears_and_backlinks_follow():
    g = LinkGraph()
    g.set_note("a.md", ["Later"])
    assert g.outgoing("a.md") == set()
    g.set_note("Later.md", [])
    assert g.outgoing("a.md") == {"Later.md"}
    assert g.backlinks("Later.md") == {"a.md"}
    g.remove_note("a.md")
    assert g.backlinks("Later.md") == set()
