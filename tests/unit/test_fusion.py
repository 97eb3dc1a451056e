"""RRF arithmetic, weights, tie-breaking and the 1-hop graph boost (ALGORITHMS.md B.5)."""

from __future__ import annotations

import pytest

from k0maru_retriever._fusion import channel_weights, rrf_fuse, single_channel, snippet
from k0maru_retriever._graph import LinkGraph


def test_rrf_scores_are_weighted_reciprocal_ranks():
    hits = rrf_fuse([("a", 9.0), ("b", 5.0)], [("b", 0.9), ("c", 0.8)], boost=0.0)
    by = {h.path: h for h in hits}
    assert by["a"].score == pytest.approx(0.5 / 61)
    assert by["b"].score == pytest.approx(0.5 / 62 + 0.5 / 61)
    assert by["c"].score == pytest.approx(0.5 / 62)
    assert [h.path for h in hits] == ["b", "a", "c"]
    assert (by["b"].bm25_rank, by["b"].vector_rank) == (2, 1)


def test_weights_normalise_and_fall_back_to_one_channel():
    assert channel_weights(0.3, 0.9, True, True) == pytest.approx((0.25, 0.75))
    assert channel_weights(0, 0, True, True) == (0.5, 0.5)
    assert channel_weights(0.5, 0.5, True, False) == (1.0, 0.0)
    assert channel_weights(0.5, 0.5, False, True) == (0.0, 1.0)
    only_bm25 = rrf_fuse([("a", 1.0)], [], boost=0.0)
    assert only_bm25[0].score == pytest.approx(1 / 61)
    assert rrf_fuse([], []) == []


def test_ties_break_by_bm25_rank_then_vector_rank_then_path():
    # a: bm25 #1 only; b: vector #1 only -> equal scores; bm25-present first.
    hits = rrf_fuse([("a", 1.0)], [("b", 1.0)], boost=0.0)
    assert [h.path for h in hits] == ["a", "b"]
    # Same scores and ranks in neither channel order: path decides.
    from k0maru_retriever._fusion import FusedHit, tie_break_key

    tied = sorted([FusedHit("z", 0.1, 0, 0, 2), FusedHit("y", 0.1, 0, 0, 2)], key=tie_break_key)
    assert [h.path for h in tied] == ["y", "z"]


def graph(links: dict[str, list[str]]) -> LinkGraph:
    g = LinkGraph()
    for path, targets in links.items():
        g.set_note(path, targets)
    return g


def test_graph_boost_outgoing_backlink_and_isolated():
    g = graph({"a.md": ["b"], "b.md": [], "c.md": [], "d.md": ["c"]})
    hits = rrf_fuse([("a.md", 1), ("b.md", 1), ("c.md", 1)], [], connected=g.connected)
    by = {h.path: h for h in hits}
    assert by["a.md"].boost == 0.05  # links to a candidate
    assert by["b.md"].boost == 0.05  # linked from a candidate
    assert by["c.md"].boost == 0.0  # linked only from d, which is not a candidate
    assert by["a.md"].score == pytest.approx(1 / 61 + 0.05)


def test_graph_boost_is_binary_and_ignores_self_links():
    g = graph({"a.md": ["b", "b", "c", "a"], "b.md": [], "c.md": []})
    hits = {h.path: h for h in rrf_fuse([("a.md", 1), ("b.md", 1), ("c.md", 1)], [], connected=g.connected)}
    assert hits["a.md"].boost == 0.05
    g2 = graph({"solo.md": ["solo"]})
    assert rrf_fuse([("solo.md", 1)], [], connected=g2.connected)[0].boost == 0.0


def test_single_channel_scores():
    hits = single_channel([("a", 3.0), ("b", 2.0)])
    assert [h.score for h in hits] == pytest.approx([1 / 61, 1 / 62])


def test_snippet_window_on_characters_not_bytes():
    body = "前文" * 200 + " the SQLITE_BUSY error " + "后文" * 200
    text = snippet(body, "sqlite_busy")
    assert "SQLITE_BUSY" in text and text.startswith("...") and text.endswith("...")
    assert snippet("short body\nline", "x") == "short body line"
