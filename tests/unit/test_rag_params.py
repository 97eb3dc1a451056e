"""rag_params.json: every key optional, validated, hot-reloaded; a bad file changes nothing."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from k0maru_retriever._params import FILE_NAME, ParamsFile, RagParams


def write(path: Path, content: str) -> None:
    path.write_text(content, encoding="utf-8")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a distinct stamp even within one tick


def test_defaults_are_vcps() -> None:
    p = RagParams()
    assert p.rag_diary.tag_weight_range == (0.05, 0.45)
    assert p.knowledge_base.dynamic_boost_range == (0.3, 2.0)
    assert p.knowledge_base.deduplication_threshold == 0.88
    assert p.knowledge_base.language_compensator.penalty_unknown == 0.05
    assert p.retriever.vector_query == "fused"


def test_a_subset_of_keys_overrides_only_those(tmp_path: Path) -> None:
    path = tmp_path / "rag_params.json"
    write(path, json.dumps({"KnowledgeBaseManager": {"coreBoostRange": [1.1, 1.3]}, "Retriever": {"rrfK": 30}}))
    params = ParamsFile(path).current()
    assert params.knowledge_base.core_boost_range == (1.1, 1.3)
    assert params.knowledge_base.deduplication_threshold == 0.88
    assert params.retriever.rrf_k == 30


def test_a_change_applies_without_restart_and_a_bad_file_keeps_the_previous_values(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "rag_params.json"
    file = ParamsFile(path)
    assert file.current() == RagParams() and file.error == ""
    write(path, json.dumps({"Retriever": {"tagMemoBeta": 0.2}}))
    assert file.current().retriever.tagmemo_beta == 0.2
    for bad, words in (
        ('{"Retriever": {"tagMemoBeta": 2}}', "tagMemoBeta"),  # out of range
        ('{"Retriever": {"tagMemoBta": 0.1}}', "tagMemoBta"),  # a typo is an unknown key, not a silent default
        ('{"KnowledgeBaseManager": {"dynamicBoostRange": [2.0, 0.3]}}', "low end"),
        ('{"RAGDiaryPlugin": {"tagWeightRange": "wide"}}', "tagWeightRange"),
        ("{not json", "rejected"),
        ("[1, 2]", "rejected"),
    ):
        with caplog.at_level(logging.ERROR):
            write(path, bad)
            assert file.current().retriever.tagmemo_beta == 0.2
        assert words in file.error
        assert any(words in r.getMessage() for r in caplog.records)
        caplog.clear()
    path.unlink()
    assert file.current() == RagParams() and file.error == ""


def test_fusion_knobs_override_the_settings_and_a_boost_of_one_is_refused() -> None:
    from k0maru_common import SettingsError
    from k0maru_retriever._search import FusionParams
    from k0maru_retriever._shaping import QueryShaper

    r = RagParams.parse({"Retriever": {"fusion": "rrf", "graphBoost": 0.2, "vectorGapScale": 0.2}}).retriever
    assert (r.fusion, r.graph_boost, r.vector_gap_scale, r.rrf_k) == ("rrf", 0.2, 0.2, None)
    with pytest.raises(SettingsError, match="graphBoost"):
        RagParams.parse({"Retriever": {"graphBoost": 1.0}})  # would lift a linked note past rank 1

    class Fixed:
        def current(self) -> RagParams:
            return RagParams.parse({"Retriever": {"fusion": "rrf", "fusionAdaptive": 0}})

    shaped = QueryShaper(None, Fixed()).fusion(FusionParams())  # type: ignore[arg-type]
    assert (shaped.method, shaped.adaptive, shaped.k, shaped.graph_boost) == ("rrf", 0, 60, 0.1)

    class ZeroScale:  # "0 = the model's own", as the setting documents it: the file was rejected
        def current(self) -> RagParams:
            return RagParams.parse({"Retriever": {"vectorGapScale": 0}})

    assert QueryShaper(None, ZeroScale()).fusion(FusionParams(gap_scale=0.63)).gap_scale == 0.63  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"Retriever": {"weightBm25": Infinity}}', "weightBm25=inf: must be a finite number"),
        ('{"Retriever": {"weightBm25": 1e400}}', "weightBm25=inf: must be a finite number"),
        ('{"Retriever": {"weightBm25": 1e308, "weightVector": 1e308}}', "weightBm25"),
        ('{"Retriever": {"nameMatch": 1e308}}', "nameMatch"),
        ('{"Retriever": {"fusionAdaptive": 1e308}}', "fusionAdaptive"),
        ('{"Retriever": {"fusion": "rrf", "rrfK": 99999999999999999999}}', "rrfK"),
        ('{"Retriever": {"weightBm25": 0, "weightVector": 0}}', "cannot both be 0"),
        ('{"Retriever": {"vectorGapScale": 1e-300}}', "vectorGapScale"),
        ('{"KnowledgeBaseManager": {"dynamicBoostRange": [-5, -1]}}', "dynamicBoostRange must lie within"),
        ('{"RAGDiaryPlugin": {"tagTruncationRange": [5, 9]}}', "tagTruncationRange must lie within"),
        ('{"RAGDiaryPlugin": {"tagTruncationBase": -3}}', "tagTruncationBase"),
    ],
)
def test_values_no_search_could_use_are_refused_and_the_previous_ones_kept(tmp_path: Path, text: str, said: str):
    """Infinity, 1e400 or 1e308 as a weight was loaded without an error while every search then
    failed (an overflow in the fusion, NaN scores the console could not send); a negative boost
    range made TagMemo "applied" with β 0, both weights 0 were read as 0.5 each."""
    path = tmp_path / FILE_NAME
    write(path, '{"Retriever": {"weightBm25": 0.7}}')
    file = ParamsFile(path)
    assert file.current().retriever.weight_bm25 == 0.7 and file.error == ""
    write(path, text)
    assert file.current().retriever.weight_bm25 == 0.7  # the previous values stay in force
    assert said in file.error, file.error


def test_a_file_saved_with_a_byte_order_mark_is_read(tmp_path: Path):
    """Windows Notepad's UTF-8 begins with a BOM; the file was refused for it."""
    path = tmp_path / FILE_NAME
    path.write_bytes(b"\xef\xbb\xbf" + b'{"Retriever": {"weightBm25": 0.7}}')
    file = ParamsFile(path)
    assert file.current().retriever.weight_bm25 == 0.7 and file.error == ""
