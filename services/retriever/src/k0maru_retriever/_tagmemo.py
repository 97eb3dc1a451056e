"""TagMemo V3.7: reshape a query vector towards the tags it evokes (ALGORITHMS.md A.6.2, A.6.3, A.9).

reshape(q) runs the EPA projection and the residual pyramid once, then weighs the pyramid's
tags (layer decay 0.7^ℓ, language penalty, core boost), pulls in the co-occurring tags of the
heaviest ones, supplements missing core tags, merges near-duplicate tags (cosine > 0.88),
and mixes the weighted tag centroid c into q: x = normalise((1 − β)·q + β·c).

Core tags are the caller's plus, as VCP's plugin does, those a first pass without core tags
matched (truncated by the dynamic ratio); both passes share the EPA and pyramid work.

Changed from VCP on purpose (A.12): β is clamped to [0, 1], so q never gets a negative
coefficient; pull-back parents are the 5 heaviest tags, not the first 5 by id; core tags
are supplemented case-insensitively (tag names are normalised) and pull-back tags count as
present; the supplemented weight is the heaviest collected weight × γ (VCP divides by a
hard-coded 1.33 first).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ._epa import UNINITIALISED, EpaBasis, Projection
from ._params import RagParams
from ._pyramid import Pyramid, ResidualPyramid

LAYER_DECAY = 0.7
PULLBACK_PARENTS = 5
PULLBACK_NEIGHBOURS = 4
PULLBACK_SHARE = 0.5
MERGE_SHARE = 0.2
CORE_SENSE_KEEP = 5
_HAN = re.compile(r"[\u4e00-\u9fa5]")
_ASCII_TAG = re.compile(r"[A-Za-z0-9\-_.\s]+")
_ASCII_WORLD = re.compile(r"[A-Za-z0-9\-_.]+")
_SOFT_WORLDS = re.compile(r"Politics|Society|History|Economics|Culture", re.IGNORECASE)


@dataclass(frozen=True)
class TagSpace:
    """What the reshaping reads: unit tag vectors (one row per normalised tag) and their neighbours."""

    names: list[str]
    vectors: np.ndarray  # (n, D), unit rows
    epa: EpaBasis | None
    neighbours: Callable[[str, int], list[str]]  # the n tags co-occurring most with a tag
    row_of: dict[str, int] = field(default_factory=dict)
    pyramid: ResidualPyramid = field(init=False)

    def __post_init__(self) -> None:
        if not self.row_of:
            self.row_of.update({name: i for i, name in enumerate(self.names)})
        object.__setattr__(self, "pyramid", ResidualPyramid(self.vectors))


@dataclass(frozen=True)
class WeightedTag:
    name: str
    weight: float
    core: bool


@dataclass(frozen=True)
class TagMemoInfo:
    matched: tuple[WeightedTag, ...]
    core: tuple[str, ...]  # core tags that took part (given or sensed)
    beta: float
    logic_depth: float
    entropy: float
    resonance: float
    coverage: float
    novelty: float
    world: str  # label of the dominant EPA axis, or "Unknown"
    level_energies: tuple[float, ...]  # energy each pyramid level explained


@dataclass(frozen=True)
class Reshaped:
    vector: np.ndarray
    info: TagMemoInfo | None


@dataclass
class _Entry:
    row: int
    weight: float
    core: bool


def _clamp(x: float, bounds: tuple[float, float]) -> float:
    return min(max(x, bounds[0]), bounds[1])


def _is_ascii_tag(name: str) -> bool:
    return not _HAN.search(name) and _ASCII_TAG.fullmatch(name) is not None


def language_penalty(name: str, world: str, params: RagParams) -> float:
    """A.9 step 4: technical (ASCII, > 3 chars) tags are damped unless the query's world is technical."""
    kb = params.knowledge_base
    if not kb.lang_confidence_enabled or not (_is_ascii_tag(name) and len(name) > 3):
        return 1.0
    if world != "Unknown" and _ASCII_WORLD.fullmatch(world):
        return 1.0
    comp = kb.language_compensator
    base = comp.penalty_unknown if world == "Unknown" else comp.penalty_cross_domain
    return math.sqrt(base) if _SOFT_WORLDS.search(world) else base


def dynamic_base_weight(q: np.ndarray, ep: Projection, initialised: bool, params: RagParams) -> float:
    """A.6.2: the plugin-level tag weight when the caller gives none."""
    logic, res = (ep.logic_depth, ep.resonance) if initialised else (0.5, 0.0)
    width = 1.2 * float(np.linalg.norm(q))
    beta = 1 / (1 + math.exp(-(logic * math.log(2 + res) - width * params.rag_diary.noise_penalty)))
    lo, hi = params.rag_diary.tag_weight_range
    return lo + beta * (hi - lo)


def truncation_ratio(q: np.ndarray, ep: Projection, initialised: bool, params: RagParams) -> float:
    logic, res = (ep.logic_depth, ep.resonance) if initialised else (0.5, 0.0)
    width = 1.2 * float(np.linalg.norm(q))
    rd = params.rag_diary
    return _clamp(rd.tag_truncation_base + 0.3 * logic - 0.2 * width + 0.1 * min(res, 1.0), rd.tag_truncation_range)


class TagMemo:
    """One query's reshaping; the EPA and pyramid are computed once for both passes."""

    def __init__(self, q: np.ndarray, space: TagSpace, params: RagParams) -> None:
        self.q = q.astype(np.float32)
        self.space = space
        self.params = params
        self.ep = space.epa.project(self.q) if space.epa is not None else UNINITIALISED
        self.pyramid: Pyramid = space.pyramid.analyze(self.q)
        kb = params.knowledge_base
        f = self.pyramid.features
        a0, a1 = kb.activation_multiplier
        act = a0 + f.activation * (a1 - a0)
        rho = math.log(1 + self.ep.resonance)
        factor = self.ep.logic_depth * (1 + rho) / (1 + 0.5 * self.ep.entropy) * act
        self.factor = _clamp(factor, kb.dynamic_boost_range)
        core_metric = 0.5 * self.ep.logic_depth + 0.5 * (1 - f.coverage)
        c0, c1 = kb.core_boost_range
        self.gamma = c0 + core_metric * (c1 - c0)
        self._base: list[tuple[int, float, float]] | None = None

    def base_weight(self) -> float:
        return dynamic_base_weight(self.q, self.ep, self.space.epa is not None, self.params)

    def sense_core(self) -> list[str]:
        """The first pass: tags matched without core tags, cut by the dynamic truncation ratio."""
        accepted = self._accepted(frozenset())
        matched = [self.space.names[e.row] for e in self._matched(accepted)]
        if len(matched) > CORE_SENSE_KEEP:
            ratio = truncation_ratio(self.q, self.ep, self.space.epa is not None, self.params)
            matched = matched[: max(CORE_SENSE_KEEP, math.ceil(len(matched) * ratio))]
        return matched

    def reshape(self, beta0: float, core_tags: Sequence[str]) -> Reshaped:
        if beta0 <= 0:
            return Reshaped(self.q, None)
        core = frozenset(t.lower() for t in core_tags)
        accepted = self._accepted(core)
        total = sum(e.weight for e in accepted)
        if not accepted or total <= 0:
            return Reshaped(self.q, None)
        rows = np.array([e.row for e in accepted])
        weights = np.array([e.weight for e in accepted], dtype=np.float32)
        context = (weights @ self.space.vectors[rows]) / total
        norm = float(np.linalg.norm(context))
        if norm <= 1e-9:
            return Reshaped(self.q, None)
        context /= norm
        beta = _clamp(beta0 * self.factor, (0.0, 1.0))
        fused = (1 - beta) * self.q + beta * context
        fused_norm = float(np.linalg.norm(fused))
        if fused_norm > 1e-9:
            fused = fused / fused_norm
        names = self.space.names
        f = self.pyramid.features
        info = TagMemoInfo(
            matched=tuple(WeightedTag(names[e.row], e.weight, e.core) for e in self._matched(accepted)),
            core=tuple(names[e.row] for e in accepted if e.core),
            beta=beta,
            logic_depth=self.ep.logic_depth,
            entropy=self.ep.entropy,
            resonance=self.ep.resonance,
            coverage=f.coverage,
            novelty=f.novelty,
            world=self.ep.world,
            level_energies=tuple(level.explained for level in self.pyramid.levels),
        )
        return Reshaped(fused.astype(np.float32), info)

    def _pyramid_tags(self) -> list[tuple[int, float, float]]:
        """(row, weight before any core boost, similarity) of each pyramid tag, first occurrence only."""
        if self._base is None:
            names = self.space.names
            world = self.ep.world
            base = []
            seen: set[int] = set()
            for depth, level in enumerate(self.pyramid.levels):
                for tag in level.tags:
                    if tag.id in seen:
                        continue
                    seen.add(tag.id)
                    penalty = language_penalty(names[tag.id], world, self.params)
                    base.append((tag.id, tag.contribution * LAYER_DECAY**depth * penalty, tag.similarity))
            self._base = base
        return self._base

    def _collect(self, core: frozenset[str]) -> list[_Entry]:
        names = self.space.names
        entries: list[_Entry] = []
        for row, weight, similarity in self._pyramid_tags():
            is_core = names[row].lower() in core
            boost = self.gamma * (0.95 + 0.1 * (similarity or 0.5)) if is_core else 1.0
            entries.append(_Entry(row, weight * boost, is_core))
        seen = {e.row for e in entries}
        if entries:
            parents = sorted(entries, key=lambda e: -e.weight)[:PULLBACK_PARENTS]
            for parent in parents:
                for neighbour in self.space.neighbours(names[parent.row], PULLBACK_NEIGHBOURS):
                    pulled = self.space.row_of.get(neighbour)
                    if pulled is not None and pulled not in seen:
                        seen.add(pulled)
                        entries.append(_Entry(pulled, PULLBACK_SHARE * parent.weight, neighbour.lower() in core))
        present = {names[e.row].lower() for e in entries}
        missing = [t for t in sorted(core) if t not in present]
        if missing:
            base = max((e.weight for e in entries), default=1.0)
            for core_name in missing:
                found = self.space.row_of.get(core_name)
                if found is None:  # names are normalised (lower case); a hand-built space may not be
                    found = next((i for n, i in self.space.row_of.items() if n.lower() == core_name), None)
                if found is not None and found not in seen:
                    seen.add(found)
                    entries.append(_Entry(found, base * self.gamma, True))
        return entries

    def _accepted(self, core: frozenset[str]) -> list[_Entry]:
        """Collected tags, heaviest first, with near-duplicates (cosine > threshold) merged into the heavier."""
        threshold = self.params.knowledge_base.deduplication_threshold
        ordered = sorted(self._collect(core), key=lambda e: -e.weight)
        if not ordered:
            return []
        block = self.space.vectors[[e.row for e in ordered]]
        over = ((block @ block.T) > threshold).tolist()  # one small Gram matrix instead of a dot per pair
        accepted: list[_Entry] = []
        accepted_at: list[int] = []
        for i, entry in enumerate(ordered):
            row = over[i]
            into_at = next((k for k, j in enumerate(accepted_at) if row[j]), None)
            if into_at is not None:
                into = accepted[into_at]
                into.weight += MERGE_SHARE * entry.weight
                into.core = into.core or entry.core
                continue
            accepted.append(_Entry(entry.row, entry.weight, entry.core))
            accepted_at.append(i)
        return accepted

    def _matched(self, accepted: list[_Entry]) -> list[_Entry]:
        if not accepted:
            return []
        kb = self.params.knowledge_base
        top = max(e.weight for e in accepted)
        names = self.space.names
        return [
            e
            for e in accepted
            if e.core
            or e.weight > top * (kb.tech_tag_threshold if _is_ascii_tag(names[e.row]) else kb.normal_tag_threshold)
        ]


def reshape_query(
    q: np.ndarray, space: TagSpace, params: RagParams, beta0: float | None, core_tags: Sequence[str]
) -> Reshaped:
    """The full V3.7 step for one query: base weight (given or dynamic), core tags (given + sensed)."""
    memo = TagMemo(q, space, params)
    weight = memo.base_weight() if beta0 is None else beta0
    core = list(dict.fromkeys(t.lower() for t in core_tags if t))
    if params.retriever.sense_core_tags:
        core = list(dict.fromkeys([*core, *memo.sense_core()]))
    return memo.reshape(weight, core)
