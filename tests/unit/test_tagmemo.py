"""TagMemo V3.7 pieces on vectors chosen so the answer is known (ALGORITHMS.md A.14.3–A.14.7)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from k0maru_retriever._dedup import deduplicate
from k0maru_retriever._epa import MIN_TAGS, EpaBasis
from k0maru_retriever._params import RagParams
from k0maru_retriever._pyramid import ResidualPyramid
from k0maru_retriever._tagmemo import TagMemo, TagSpace, language_penalty, reshape_query
from k0maru_retriever._tags import CoOccurrence, TagIndex, normalise_tag, tag_key

D = 16


def e(i: int, d: int = D) -> np.ndarray:
    v = np.zeros(d, dtype=np.float32)
    v[i] = 1.0
    return v


def injected_basis() -> EpaBasis:
    return EpaBasis(np.stack([e(i) for i in range(8)]), np.zeros(D), np.ones(8), [f"L{i + 1}" for i in range(8)], "t")


def space_of(names: list[str], vectors: np.ndarray, epa: EpaBasis | None = None, cooc: CoOccurrence | None = None):
    co = cooc or CoOccurrence()
    return TagSpace(names, vectors.astype(np.float32), epa, co.neighbours)


# -- EPA (A.14.3) --------------------------------------------------------------------------------


def test_epa_single_axis_is_pure_logic() -> None:
    p = injected_basis().project(e(0))
    assert p.entropy == pytest.approx(0.0)
    assert p.logic_depth == pytest.approx(1.0)
    assert [a.label for a in p.axes] == ["L1"]
    assert p.axes[0].energy == pytest.approx(1.0)
    assert p.resonance == 0.0


def test_epa_two_axes_share_entropy_and_resonate() -> None:
    p = injected_basis().project((e(0) + e(1)) / math.sqrt(2))
    assert [a.energy for a in p.axes] == pytest.approx([0.5, 0.5])
    assert p.entropy == pytest.approx(1 / 3)
    assert p.logic_depth == pytest.approx(2 / 3)
    assert {a.label for a in p.axes} == {"L1", "L2"}
    assert p.resonance == pytest.approx(0.5)


def test_epa_query_at_the_mean_is_uninitialised() -> None:
    p = injected_basis().project(np.zeros(D, dtype=np.float32))
    assert (p.entropy, p.logic_depth, p.axes, p.world) == (1.0, 0.0, (), "Unknown")


def test_epa_needs_eight_tags_and_is_deterministic() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(40, D)).astype(np.float32)
    names = [f"t{i}" for i in range(40)]
    assert EpaBasis.build(names[: MIN_TAGS - 1], vectors[: MIN_TAGS - 1]) is None
    a = EpaBasis.build(names, vectors)
    b = EpaBasis.build(names, vectors)
    assert a is not None and b is not None
    np.testing.assert_array_equal(a.basis, b.basis)
    assert a.labels == b.labels
    assert a.dimension >= MIN_TAGS
    np.testing.assert_allclose(a.basis @ a.basis.T, np.eye(a.dimension), atol=1e-4)  # orthonormal


def test_epa_labels_an_axis_with_the_tag_lying_along_it() -> None:
    # two well separated groups: the main axis runs between them, labelled by an extreme tag
    rng = np.random.default_rng(2)
    group_a = e(0) + 0.05 * rng.normal(size=(10, D))
    group_b = e(1) + 0.05 * rng.normal(size=(10, D))
    names = [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)]
    basis = EpaBasis.build(names, np.vstack([group_a, group_b]).astype(np.float32))
    assert basis is not None
    main = basis.basis[0]
    assert abs(main[0]) > 0.6 and abs(main[1]) > 0.6  # along a − b
    assert basis.labels[0][0] in "ab"


def test_epa_round_trips_through_its_file(tmp_path) -> None:
    basis = injected_basis()
    basis.save(tmp_path / "epa.npz")
    loaded = EpaBasis.load(tmp_path / "epa.npz")
    assert loaded is not None and loaded.labels == basis.labels and loaded.version == "t"
    assert EpaBasis.load(tmp_path / "missing.npz") is None


# -- Residual pyramid (A.14.4) ---------------------------------------------------------------------


def test_pyramid_explains_a_query_inside_an_orthonormal_tag_set_in_one_level() -> None:
    tags = np.stack([e(i) for i in range(12)])
    q = (0.8 * e(2) + 0.6 * e(5)).astype(np.float32)
    pyr = ResidualPyramid(tags).analyze(q)
    assert len(pyr.levels) == 1
    assert pyr.levels[0].explained == pytest.approx(1.0, abs=1e-5)
    assert pyr.features.coverage == pytest.approx(1.0, abs=1e-5)
    dc = pyr.levels[0].handshake.coherence
    assert pyr.features.novelty == pytest.approx(0.3 * dc, abs=1e-5)
    top = pyr.levels[0].tags
    assert [t.id for t in top[:2]] == [2, 5]  # similarity order, not id order
    assert top[0].contribution == pytest.approx(0.8, abs=1e-5)
    assert top[1].contribution == pytest.approx(0.6, abs=1e-5)


def test_pyramid_of_a_zero_query_is_empty() -> None:
    pyr = ResidualPyramid(np.stack([e(i) for i in range(3)])).analyze(np.zeros(D, dtype=np.float32))
    assert pyr.levels == () and pyr.features.novelty == 1.0 and pyr.features.activation == 0.0


def test_pyramid_goes_deeper_when_tags_do_not_explain_the_query() -> None:
    tags = np.stack([e(i) for i in range(12)])
    q = (0.3 * e(1) + np.sqrt(1 - 0.09) * e(14)).astype(np.float32)  # e14 is no tag's direction
    pyr = ResidualPyramid(tags).analyze(q)
    assert pyr.features.coverage == pytest.approx(0.09, abs=1e-4)
    assert len(pyr.levels) == 3


# -- Reshaping (A.14.5 and A.9) ----------------------------------------------------------------------


def test_beta_zero_searches_with_the_raw_query() -> None:
    space = space_of(["a", "b"], np.stack([e(0), e(1)]), injected_basis())
    q = (e(0) + e(3)) / math.sqrt(2)
    out = reshape_query(q, space, RagParams(), 0.0, [])
    np.testing.assert_array_equal(out.vector, q.astype(np.float32))
    assert out.info is None


def test_reshaping_pulls_the_query_towards_its_tags_and_keeps_beta_in_range() -> None:
    space = space_of(["alpha", "beta"], np.stack([e(0), e(1)]), injected_basis())
    q = ((0.9 * e(0) + 0.44 * e(3)) / np.linalg.norm(0.9 * e(0) + 0.44 * e(3))).astype(np.float32)
    out = reshape_query(q, space, RagParams(), 1.0, [])  # β₀ = 1 with F up to 2: VCP gives β > 1
    assert out.info is not None
    assert 0.0 < out.info.beta <= 1.0
    assert float(out.vector @ e(0)) > float(q @ e(0))  # moved towards the tag
    assert float(np.linalg.norm(out.vector)) == pytest.approx(1.0, abs=1e-5)
    assert float(out.vector @ e(3)) >= 0.0  # q never enters with a negative coefficient
    assert out.info.matched[0].name == "alpha"
    assert out.info.world == "L1"


def test_core_tags_are_supplemented_case_insensitively() -> None:
    fillers = [(0.1 * e(0) + e(i)) / np.linalg.norm(0.1 * e(0) + e(i)) for i in range(1, 11)]
    names = ["alpha"] + [f"f{i}" for i in range(1, 11)] + ["gamma"]
    space = space_of(names, np.stack([e(0), *fillers, e(15)]), injected_basis())  # gamma: not in any top 10
    out = reshape_query(e(0), space, RagParams(), 0.3, ["GAMMA"])
    assert out.info is not None
    assert "gamma" in out.info.core
    assert float(out.vector @ e(15)) > 0.0


def test_co_occurring_tags_are_pulled_back() -> None:
    cooc = CoOccurrence()
    cooc.add(["alpha", "delta"])
    names = ["alpha", "delta"]
    space = space_of(names, np.stack([e(0), e(9)]), injected_basis(), cooc)
    memo = TagMemo(e(0), space, RagParams())
    rows = {names[x.row] for x in memo._collect(frozenset())}
    assert rows == {"alpha", "delta"}


def test_near_duplicate_tags_merge_into_the_heavier() -> None:
    near = (e(0) + 0.2 * e(1)) / np.linalg.norm(e(0) + 0.2 * e(1))
    space = space_of(["alpha", "alpha2"], np.stack([e(0), near]), injected_basis())
    memo = TagMemo(e(0), space, RagParams())
    accepted = memo._accepted(frozenset())
    assert [space.names[a.row] for a in accepted] == ["alpha"]


def test_language_penalty_damps_ascii_tags_in_an_unknown_world() -> None:
    params = RagParams()
    assert language_penalty("android", "Unknown", params) == pytest.approx(0.05)
    assert language_penalty("android", "rooting", params) == 1.0
    assert language_penalty("安卓", "Unknown", params) == 1.0
    assert language_penalty("ios", "Unknown", params) == 1.0  # 3 characters: not technical
    assert language_penalty("android", "中国 History", params) == pytest.approx(math.sqrt(0.1))


# -- Deduplication (A.14.6) -----------------------------------------------------------------------------


def test_dedup_leaves_five_or_fewer_candidates_alone() -> None:
    vectors = np.stack([e(0)] * 5)
    assert deduplicate(vectors, np.ones(5), e(0), 10) == [0, 1, 2, 3, 4]


def test_dedup_prefers_new_directions_over_duplicates() -> None:
    vectors = np.stack([e(0), e(0), e(0), e(1), e(1), e(2), e(3)])
    scores = np.array([1.0, 0.99, 0.98, 0.5, 0.49, 0.3, 0.2])
    picked = deduplicate(vectors, scores, e(0), 10)
    assert picked == [0, 3, 5, 6]  # the anchor, then one per new direction; duplicates never chosen


# -- Co-occurrence and the tag index (A.14.7) ---------------------------------------------------


def test_cooccurrence_counts_notes_per_pair() -> None:
    index = TagIndex(None, "m", D)
    index.set_note("1.md", ["a", "b"])
    index.set_note("2.md", ["a", "b", "c"])
    index.set_note("3.md", ["b", "c"])
    w = index.cooc.weight
    assert (w("a", "b"), w("b", "c"), w("a", "c")) == (2, 2, 1)
    assert w("b", "a") == 2
    index.set_note("2.md", ["a"])  # edited: its pairs go
    assert (w("a", "b"), w("b", "c"), w("a", "c")) == (1, 1, 0)
    index.drop_note("1.md")
    assert w("a", "b") == 0 and index.cooc.counts == {"b": {"c": 1}, "c": {"b": 1}}


def test_tag_index_normalises_and_forgets_a_tag_with_its_last_note() -> None:
    index = TagIndex(None, "m", D)
    assert index.set_note("1.md", ["Android ", "android", "Root  Access"]) == ["android", "root access"]
    assert normalise_tag("Ｗｉｆｉ") == "wifi"
    index.apply_vectors([("android", tag_key("android", "m"), e(0)), ("root access", "stale", e(1))])
    assert set(index.vectors) == {"android"}  # a result for another key is dropped
    index.set_note("2.md", ["android"])
    index.drop_note("1.md")
    assert "android" in index.vectors
    index.drop_note("2.md")
    assert index.vectors == {} and index.space() is None


def test_tags_in_a_script_the_model_cannot_read_are_left_out_of_the_tag_space() -> None:
    """The English model embeds 数据库, 运维 and 故障 alike (cosine 0.96–1.0): a query's core tag
    数据库 was merged into 故障 and its note dropped out. A model that reads only Latin letters
    keeps such tags out of the space TagMemo reads; one that reads Han keeps them."""
    for scripts, expected in (
        (("latin",), ["db", "ops"]),
        ((), ["db", "ops", "数据库"]),
        (("latin", "han"), ["db", "ops", "数据库"]),
    ):
        index = TagIndex(None, "m", D, scripts)
        index.set_note("1.md", ["db", "ops", "数据库"])
        index.apply_vectors([(t, tag_key(t, "m"), e(i)) for i, t in enumerate(("db", "ops", "数据库"))])
        space = index.space()
        assert space is not None and list(space.names) == expected, scripts


def test_a_tag_in_either_chinese_script_is_one_tag() -> None:
    """A team in Taiwan tags `#資料庫`, one on the mainland `#数据库`: one tag, one vector, and
    their notes' co-occurrences counted together (before: two tags, each half as strong, and a
    query's core tag `資料庫` matched only the Traditional one)."""
    index = TagIndex(None, "m", D)
    assert index.set_note("tw.md", ["資料庫", "網路"]) == ["数据库", "网络"]
    assert index.set_note("cn.md", ["数据库", "网络"]) == ["数据库", "网络"]
    assert index.note_count == {"数据库": 2, "网络": 2} and index.cooc.weight("数据库", "网络") == 2
    assert normalise_tag(" 資料庫 ") == normalise_tag("数据库") == "数据库"
    assert normalise_tag("Café") == "café"  # nothing else changes


# -- What is cached per tag space, not per query ---------------------------------------------------


def test_near_duplicate_sets_match_the_gram_matrix() -> None:
    rng = np.random.default_rng(4)
    base = rng.standard_normal((6, D))
    vectors = np.concatenate([base, base + 0.05 * rng.standard_normal((6, D)), rng.standard_normal((8, D))])
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    space = space_of([f"t{i}" for i in range(len(vectors))], vectors)
    gram = vectors @ vectors.T
    asked = [3, 9, 0, 3, 15]
    found = space.near_duplicates(asked, 0.88)
    for row in asked:
        expected = {j for j in range(len(vectors)) if j != row and gram[row, j] > 0.88}
        assert found[row] == expected
    assert found[3] == {9} and found[15] == frozenset()  # a base vector and its noisy copy; a loner
    assert space.near_duplicates([3], 0.5)[3] >= found[3]  # another threshold: its own sets


def test_tag_space_is_kept_across_note_edits_and_rebuilt_when_vectors_change() -> None:
    index = TagIndex(None, "m", D)
    index.set_note("1.md", ["a", "b"])
    index.apply_vectors([(t, tag_key(t, "m"), e(i)) for i, t in enumerate(["a", "b"])])
    space = index.space()
    assert space is not None and space.names == ["a", "b"]
    index.set_note("2.md", ["a"])  # tags already embedded: same vectors, same space
    assert index.set_note("1.md", ["a", "b", "c"]) == ["c"]  # "b" (on no other note) keeps its vector
    assert index.space() is space
    assert index.neighbours("a", 4) == ["b", "c"]  # co-occurrence is read live, not from the space
    index.apply_vectors([("c", tag_key("c", "m"), e(2))])
    rebuilt = index.space()
    assert rebuilt is not space and rebuilt is not None and rebuilt.names == ["a", "b", "c"]
    index.epa = injected_basis()  # a new EPA basis: a new space
    assert index.space() is not rebuilt
    index.set_note("1.md", ["a"])  # "b" and "c" lose their last note: their vectors go
    smaller = index.space()
    assert smaller is not None and smaller.names == ["a"]


def test_pyramid_projection_falls_back_to_gram_schmidt_on_dependent_tags() -> None:
    rows = np.stack([e(0), e(1), e(0), e(2)]).astype(np.float32)  # the third adds no direction
    q = (e(0) + 2 * e(1) + 3 * e(2) + 4 * e(3)) / math.sqrt(30)
    with np.errstate(all="raise"):
        level = ResidualPyramid(rows).analyze(q).levels[0]
    by_row = dict(zip(level.ids, level.contributions, strict=True))
    assert by_row[2] == 0.0 or by_row[0] == 0.0  # whichever of the two copies comes second adds nothing
    assert sorted(by_row.values()) == pytest.approx(
        sorted([0.0, 1 / math.sqrt(30), 2 / math.sqrt(30), 3 / math.sqrt(30)])
    )
    assert level.residual_ratio == pytest.approx(16 / 30, rel=1e-5)


def test_tag_maintainer_fills_near_duplicate_sets_once_the_space_settles(tmp_path: Path) -> None:
    from k0maru_retriever._analysis import BM25Analyzer
    from k0maru_retriever._bm25 import Bm25Index
    from k0maru_retriever._index import NoteIndex
    from k0maru_retriever._params import ParamsFile
    from k0maru_retriever._state import IndexState
    from k0maru_retriever._tags import TagMaintainer
    from k0maru_retriever._vectors import EdgeVectorStore

    tags = TagIndex(None, "m", D)
    index = NoteIndex(
        Bm25Index(tmp_path / "bm25", BM25Analyzer()),
        EdgeVectorStore(tmp_path / "vectors", D),
        IndexState(tmp_path / "state.sqlite"),
        D,
        "m",
        tags,
    )
    names = ["a", "a2", "b"]
    tags.set_note("1.md", names)
    near = (e(0) + 0.2 * e(1)) / np.linalg.norm(e(0) + 0.2 * e(1))
    tags.apply_vectors([(n, tag_key(n, "m"), v) for n, v in zip(names, [e(0), near, e(5)], strict=True)])
    maintainer = TagMaintainer(index, ParamsFile(tmp_path / "rag_params.json"), lambda _jobs: None, None)
    maintainer.step()  # builds the space; tags may still be arriving: nothing computed yet
    space = tags.space()
    assert space is not None and space.near_duplicates([], 0.88) == {}
    maintainer.step()  # the same space a round later: every tag's set computed
    assert tags.space() is space
    assert space.near_duplicates([], 0.88) == {0: {1}, 1: {0}, 2: frozenset()}
    assert space.fill_near_duplicates(0.88) == 0  # nothing left to compute
    index.close()
