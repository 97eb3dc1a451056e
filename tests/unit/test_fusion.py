"""RRF arithmetic, weights, tie-breaking and the 1-hop graph boost (ALGORITHMS.md B.5)."""

from __future__ import annotations

import pytest

from k0maru_retriever._fusion import (
    channel_weights,
    confident_weights,
    convex_fuse,
    minmax,
    rrf_fuse,
    single_channel,
)
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
    hits = rrf_fuse([("c.md", 1), ("a.md", 1), ("b.md", 1)], [], connected=g.connected_among, boost=0.5)
    by = {h.path: h for h in hits}
    assert by["a.md"].score == pytest.approx(1 / (60 + 1.5))  # links to a candidate: rank 2 counts as 1.5
    assert by["b.md"].score == pytest.approx(1 / (60 + 2))  # linked from a candidate: rank 3 counts as 2
    assert by["c.md"].boost == 0.0  # linked only from d, which is not a candidate
    assert by["a.md"].boost == pytest.approx(1 / 61.5 - 1 / 62)


def test_graph_boost_is_binary_and_ignores_self_links():
    g = graph({"x.md": [], "a.md": ["b", "b", "c", "a"], "b.md": [], "c.md": []})
    pool = [("x.md", 1), ("a.md", 1), ("b.md", 1), ("c.md", 1)]
    hits = {h.path: h for h in rrf_fuse(pool, [], connected=g.connected_among, boost=0.3)}
    assert hits["a.md"].score == pytest.approx(1 / (60 + 1 + 0.7))  # three links, one bonus
    g2 = graph({"solo.md": ["solo"], "top.md": []})
    assert rrf_fuse([("top.md", 1), ("solo.md", 1)], [], connected=g2.connected_among)[1].boost == 0.0


def test_links_match_titles_aliases_stems_and_path_suffixes():
    g = LinkGraph()
    g.set_note("decisions/2026-08-01-embedded-default.md", [], ["Embedded default without Docker", "embedded"])
    g.set_note("by-title.md", ["embedded default without docker"])
    g.set_note("by-alias.md", ["Embedded"])
    g.set_note("by-suffix.md", ["decisions/2026-08-01-embedded-default"])
    g.set_note("by-relative.md", ["../decisions/2026-08-01-embedded-default.md"])
    g.set_note("unrelated.md", ["Something else"])
    target = "decisions/2026-08-01-embedded-default.md"
    for source in ("by-title.md", "by-alias.md", "by-suffix.md", "by-relative.md"):
        assert g.connected_among({source, target}) == {source, target}, source
    assert g.connected_among({"unrelated.md", target}) == set()


def ranked(*paths: str) -> list[tuple[str, float]]:
    return [(p, 1.0) for p in paths]


@pytest.mark.parametrize("fuse", [rrf_fuse, convex_fuse])
def test_first_in_both_channels_stays_first_whatever_the_links(fuse):
    import random

    rng = random.Random(3)
    notes = [f"n{i}.md" for i in range(30)]
    # every note but the winner links to every other note
    g = graph({p: [q.removesuffix(".md") for q in notes if q != p] for p in notes[1:]} | {"n0.md": []})
    for _ in range(100):
        b = notes[1:]
        v = notes[1:]
        rng.shuffle(b)
        rng.shuffle(v)
        scores = sorted((rng.random() for _ in b), reverse=True)
        hits = fuse(
            [("n0.md", 2.0), *zip(b, scores, strict=True)],
            [("n0.md", 2.0), *zip(v, scores, strict=True)],
            connected=g.connected_among,
            boost=0.99,
        )
        assert hits[0].path == "n0.md" and hits[0].boost == 0.0


def test_unconnected_note_above_in_both_channels_stays_above_unless_within_reach():
    g = graph({"hub.md": ["other"], "other.md": [], "plain.md": []})
    filler = [f"f{i}.md" for i in range(40)]

    def order(plain_rank: int, hub_rank: int, boost: float) -> list[str]:
        b = filler[:]
        b.insert(plain_rank - 1, "plain.md")
        b.insert(hub_rank - 1, "hub.md")
        v = list(b)
        hits = rrf_fuse(ranked(*b, "other.md"), ranked(*v), connected=g.connected_among, boost=boost)
        return [h.path for h in hits if h.path in ("plain.md", "hub.md")]

    # plain at 5 in both, hub at 20 in both: 20 counts as 14.3 with 0.3, still below plain.
    assert order(5, 20, 0.3) == ["plain.md", "hub.md"]
    # hub at 6, right behind plain: 6 counts as 4.5, within reach.
    assert order(5, 6, 0.3) == ["hub.md", "plain.md"]
    # No boost: order by the channels.
    assert order(5, 6, 0.0) == ["plain.md", "hub.md"]


def test_convex_fusion_uses_scores_and_its_boost_keeps_its_reach():
    # BM25: a far ahead of b and c; vector: c slightly ahead of a. Scores, not ranks, decide.
    b = [("a", 10.0), ("b", 2.0), ("c", 1.0)]
    v = [("c", 0.62), ("a", 0.60), ("b", 0.20)]
    hits = convex_fuse(b, v, boost=0.0)
    assert [h.path for h in hits] == ["a", "c", "b"]
    assert hits[0].score == pytest.approx(0.5 * 1.0 + 0.5 * (0.40 / 0.42))
    assert minmax(b) == {"a": 1.0, "b": pytest.approx(1 / 9), "c": 0.0}
    g = graph({"b": ["c"], "c": [], "a": []})
    boosted = {h.path: h for h in convex_fuse(b, v, boost=0.5, connected=g.connected_among)}
    # b closes half its distance to the top in each channel: 0.5*(1/9 + 8/18) + 0.5*(0 + 0.5)
    assert boosted["b"].score == pytest.approx(0.5 * (1 / 9 + 0.5 * 8 / 9) + 0.5 * 0.5)
    assert boosted["a"].boost == 0.0 and boosted["b"].boost > 0 and boosted["c"].boost > 0


def test_confident_weights_weigh_the_vector_gap_against_the_bm25_spread():
    bm25 = [(f"b{i}", 10.0 - 0.5 * i) for i in range(12)]  # 10th: 5.5, relative spread 0.45
    wide = [(f"v{i}", 0.80 - 0.02 * i) for i in range(12)]  # 10th: 0.62, gap 0.18
    narrow = [(f"v{i}", 0.80 - 0.005 * i) for i in range(12)]  # gap 0.045
    # ratio gap / (scale x spread): 0.18 / (0.2 x 0.45) = 2 -> vector weight x 4 at power 2
    assert confident_weights(bm25, wide, 0.5, 0.5, 2.0, 0.2) == pytest.approx((0.5, 2.0))
    assert confident_weights(bm25, narrow, 0.5, 0.5, 2.0, 0.2) == pytest.approx((0.5, 0.125))
    assert confident_weights(bm25, narrow, 0.5, 0.5, 0.0) == (0.5, 0.5)  # fixed weights
    assert confident_weights([], narrow, 0.5, 0.5, 2.0) == (0.5, 0.5)  # one channel: nothing to weigh
    # Weights then decide the convex order: b0 (BM25's best) vs v0 (the vector channel's best).
    assert convex_fuse(bm25, wide, w_bm25=0.5, w_vector=2.0, boost=0.0)[0].path == "v0"
    assert convex_fuse(bm25, narrow, w_bm25=0.5, w_vector=0.125, boost=0.0)[0].path == "b0"


def test_a_steep_bm25_pool_keeps_the_lead_and_few_bm25_matches_are_confident():
    vector = [(f"v{i}", 0.80 - 0.01 * i) for i in range(12)]  # gap 0.09
    steep = [(f"b{i}", 20.0 - 1.5 * i) for i in range(12)]  # 10th: 6.5, spread 0.675
    flat = [(f"b{i}", 10.0 - 0.1 * i) for i in range(12)]  # 10th: 9.1, spread 0.09
    _, wv_steep = confident_weights(steep, vector, 0.5, 0.5, 1.0, 0.2)
    _, wv_flat = confident_weights(flat, vector, 0.5, 0.5, 1.0, 0.2)
    assert wv_steep == pytest.approx(0.5 * 0.09 / (0.2 * 0.675))
    assert wv_flat == pytest.approx(0.5 * 0.09 / (0.2 * 0.09))
    assert wv_steep < 0.5 < wv_flat
    # three matching notes: the notes BM25 did not return score 0, so its spread is 1 (confident)
    _, wv_few = confident_weights(steep[:3], vector, 0.5, 0.5, 1.0, 0.2)
    assert wv_few == pytest.approx(0.5 * 0.09 / 0.2)
    # the gap is read at the 10th note whatever the pool's depth
    deep = vector + [(f"w{i}", 0.3) for i in range(30)]
    assert confident_weights(steep, deep, 0.5, 0.5, 1.0, 0.2) == confident_weights(steep, vector, 0.5, 0.5, 1.0, 0.2)


def test_a_sure_bm25_is_never_outweighed_by_a_wide_vector_gap():
    """A small vault's nearest notes by meaning stand far apart: "useEffect" got a vector gap of
    0.35 and 71 % of the weight against a BM25 whose best note scored 11x its 10th, and a passing
    mention came first. Where BM25's best scores at least twice its 10th, the vector weight is
    at most its configured one; where BM25 is unsure, a wide gap still raises it."""
    wide = [(f"v{i}", 0.58 - 0.035 * i) for i in range(12)]  # gap 0.315
    sure = [(f"b{i}", 21.0 - 2.1 * i) for i in range(12)]  # 10th: 2.1, spread 0.9
    unsure = [(f"b{i}", 10.0 - 0.6 * i) for i in range(12)]  # 10th: 4.6, spread 0.54 -> just sure
    flat = [(f"b{i}", 10.0 - 0.3 * i) for i in range(12)]  # 10th: 7.3, spread 0.27
    assert confident_weights(sure, wide, 0.5, 0.5, 1.25, 0.19) == (0.5, 0.5)
    assert confident_weights(unsure, wide, 0.5, 0.5, 1.25, 0.19) == (0.5, 0.5)
    assert confident_weights(sure[:3], wide, 0.5, 0.5, 1.25, 0.19) == (0.5, 0.5)  # few matches: sure
    _, wv_flat = confident_weights(flat, wide, 0.5, 0.5, 1.25, 0.19)
    assert wv_flat == pytest.approx(0.5 * (0.315 / (0.19 * 0.27)) ** 1.25) and wv_flat > 0.5
    narrow = [(f"v{i}", 0.58 - 0.002 * i) for i in range(12)]
    assert confident_weights(sure, narrow, 0.5, 0.5, 1.25, 0.19)[1] < 0.5  # lowered as before
    assert confident_weights(sure, wide, 0.2, 0.8, 1.25, 0.19) == (0.2, 0.8)  # the configured weights kept


def test_boost_outside_its_range_is_refused():
    with pytest.raises(ValueError):
        rrf_fuse(ranked("a"), [], boost=1.0)


def test_single_channel_scores():
    hits = single_channel([("a", 3.0), ("b", 2.0)])
    assert [h.score for h in hits] == pytest.approx([1 / 61, 1 / 62])


def test_each_model_has_its_own_gap_scale_and_others_get_the_default():
    from k0maru_retriever._fusion import DEFAULT_GAP_SCALE, model_gap_scale

    assert model_gap_scale("minilm-l6-int8-384") == 0.19
    assert model_gap_scale("use-multilingual-q-512") > model_gap_scale("minilm-l6-int8-384")  # wider cosines
    assert model_gap_scale("custom-e5-768") == DEFAULT_GAP_SCALE == model_gap_scale("")
