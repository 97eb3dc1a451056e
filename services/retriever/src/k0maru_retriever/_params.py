"""RagParams: the hot-reloaded `rag_params.json` in the data dir (ALGORITHMS.md A.4 + our fusion knobs).

The file is optional; every key has a default, and a file may give any subset. It is read
again when its modification time or size changes, checked before each search (one stat).
A file that does not parse or does not validate (unknown key, wrong type, a number that is not
finite or out of its bounds, a range whose low end exceeds its high end) is rejected: the error
is logged once and reported by IndexStatus, and the previous values stay in force.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Literal

from k0maru_common import Field, SettingsError, TypedFields

log = logging.getLogger(__name__)
FILE_NAME = "rag_params.json"


def _ordered(pair: tuple[float, float], name: str) -> None:
    if pair[0] > pair[1]:
        raise SettingsError(f"{name}: low end {pair[0]} exceeds high end {pair[1]}")


class RagDiaryParams(TypedFields):
    """How the plugin level turns the query into a base tag weight and a core-tag cut (A.6.2)."""

    noise_penalty: float = Field(0.05, ge=0, le=1)
    tag_weight_range: tuple[float, float] = Field((0.05, 0.45), alias="tagWeightRange")
    tag_truncation_base: float = Field(0.6, ge=0, le=1, alias="tagTruncationBase")
    tag_truncation_range: tuple[float, float] = Field((0.5, 0.9), alias="tagTruncationRange")

    def validate(self) -> None:
        _ordered(self.tag_weight_range, "tagWeightRange")
        _ordered(self.tag_truncation_range, "tagTruncationRange")
        for pair, key in ((self.tag_weight_range, "tagWeightRange"), (self.tag_truncation_range, "tagTruncationRange")):
            if not (pair[0] >= 0 and pair[1] <= 1):
                raise SettingsError(f"{key} must lie within [0, 1]")


class LanguageCompensator(TypedFields):
    penalty_unknown: float = Field(0.05, ge=0, le=1, alias="penaltyUnknown")
    penalty_cross_domain: float = Field(0.1, ge=0, le=1, alias="penaltyCrossDomain")


class KnowledgeBaseParams(TypedFields):
    """TagMemo V3.7 reshaping (A.9)."""

    activation_multiplier: tuple[float, float] = Field((0.5, 1.5), alias="activationMultiplier")
    dynamic_boost_range: tuple[float, float] = Field((0.3, 2.0), alias="dynamicBoostRange")
    core_boost_range: tuple[float, float] = Field((1.20, 1.40), alias="coreBoostRange")
    deduplication_threshold: float = Field(0.88, ge=-1, le=1, alias="deduplicationThreshold")
    tech_tag_threshold: float = Field(0.08, ge=0, le=1, alias="techTagThreshold")
    normal_tag_threshold: float = Field(0.015, ge=0, le=1, alias="normalTagThreshold")
    language_compensator: LanguageCompensator = Field(default_factory=LanguageCompensator, alias="languageCompensator")
    lang_confidence_enabled: bool = Field(True, alias="langConfidenceEnabled")

    def validate(self) -> None:
        for name, key in (
            ("activation_multiplier", "activationMultiplier"),
            ("dynamic_boost_range", "dynamicBoostRange"),
            ("core_boost_range", "coreBoostRange"),
        ):
            pair = getattr(self, name)
            _ordered(pair, key)
            if not (pair[0] >= 0 and pair[1] <= 100):  # a negative range made TagMemo "applied" with β 0
                raise SettingsError(f"{key} must lie within [0, 100]")


class RetrieverParams(TypedFields):
    """Our own knobs: fusion, the TagMemo defaults and what the vector channel searches with."""

    # None everywhere: the K0_* setting of the same name stays in force
    fusion: Literal["convex", "rrf"] | None = Field(None, alias="fusion")
    rrf_k: int | None = Field(None, ge=1, le=1_000_000, alias="rrfK")
    weight_bm25: float | None = Field(None, ge=0, le=1000, alias="weightBm25")
    weight_vector: float | None = Field(None, ge=0, le=1000, alias="weightVector")
    fusion_adaptive: float | None = Field(None, ge=0, le=10, alias="fusionAdaptive")
    # 0, as K0_VECTOR_GAP_SCALE's 0: the setting in force, by default the model's own (it rejected the file)
    vector_gap_scale: float | None = Field(None, ge=0, le=10, alias="vectorGapScale")
    graph_boost: float | None = Field(None, ge=0, lt=1, alias="graphBoost")
    name_match: float | None = Field(None, ge=0, le=100, alias="nameMatch")
    tagmemo_beta: float | None = Field(
        None, ge=0, le=1, alias="tagMemoBeta"
    )  # base weight when a request gives none; None = the dynamic weight of A.6.2
    # fused by measurement (bench/README.md): at VCP's ranges (β ≤ 0.15) both give the same nDCG@10
    # and fused saves a second vector search (~1.7 ms); raw+fused protects a raised β (fused alone
    # lost 0.03 nDCG@10 at β = 0.5, raw+fused nothing)
    vector_query: Literal["fused", "raw+fused"] = Field("fused", alias="vectorQuery")
    sense_core_tags: bool = Field(True, alias="senseCoreTags")
    tag_blacklist: tuple[str, ...] = Field((), alias="tagBlacklist")  # tags (any case) never indexed
    epa_rebuild_share: float = Field(0.05, gt=0, le=1, alias="epaRebuildShare")

    def validate(self) -> None:
        if self.weight_bm25 == 0 and self.weight_vector == 0:  # was read as 0.5 / 0.5 without a word
            raise SettingsError(
                "weightBm25 and weightVector cannot both be 0 (use mode bm25 or vector for one channel)"
            )
        if self.vector_gap_scale is not None and 0 < self.vector_gap_scale < 0.01:  # its ratio overflowed
            raise SettingsError("vectorGapScale must be 0 (the model's own) or at least 0.01")


class RagParams(TypedFields):
    rag_diary: RagDiaryParams = Field(default_factory=RagDiaryParams, alias="RAGDiaryPlugin")
    knowledge_base: KnowledgeBaseParams = Field(default_factory=KnowledgeBaseParams, alias="KnowledgeBaseManager")
    retriever: RetrieverParams = Field(default_factory=RetrieverParams, alias="Retriever")

    @classmethod
    def parse(cls, raw: object) -> RagParams:
        """The parameters of a decoded rag_params.json (SettingsError when it is not valid)."""
        if not isinstance(raw, dict):
            raise SettingsError("the file must hold a JSON object")
        params = cls.from_json(raw)
        assert isinstance(params, RagParams)
        return params


class ParamsFile:
    """The current RagParams of one data dir, re-read when the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._params = RagParams()
        self._stamp: tuple[int, int] | None = None
        self.error = ""
        self.current()

    def current(self) -> RagParams:
        try:
            st = self.path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        with self._lock:
            if stamp != self._stamp:
                self._stamp = stamp
                self._reload(stamp is not None)
            return self._params

    def _reload(self, exists: bool) -> None:
        if not exists:
            self._params, self.error = RagParams(), ""
            return
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8-sig") or "{}")  # Notepad writes a BOM
            params = RagParams.parse(raw)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, SettingsError) as exc:
            detail = str(exc).replace("\n", "; ")
            self.error = f"{self.path}: rejected, previous values stay in force: {detail}"
            log.error("%s", self.error)
            return
        self._params, self.error = params, ""
        log.info("loaded %s", self.path)
