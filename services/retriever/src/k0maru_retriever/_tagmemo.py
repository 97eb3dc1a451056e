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
    # per tag, computed once per space (i.e. per tag-set version), not per query
    lower: list[str] = field(init=False)  # names in lower case (core tags match case-insensitively)
    ascii: list[bool] = field(init=False)  # ASCII tag: the tech threshold of A.9 step 11
    tech: list[bool] = field(init=False)  # ASCII and longer than 3: the language penalty of A.9 step 4
    row_of_lower: dict[str, int] = field(init=False)  # lower-case name → its first row
    # threshold → row → the other rows with cosine above it; filled lazily, a row at its first query
    _duplicates: dict[float, dict[int, frozenset[int]]] = field(init=False)

    def __post_init__(self) -> None:
        if not self.row_of:
            self.row_of.update({name: i for i, name in enumerate(self.names)})
        lower = [n.lower() for n in self.names]
        ascii_ = [_is_ascii_tag(n) for n in self.names]
        row_of_lower: dict[str, int] = {}
        for name, row in self.row_of.items():
            row_of_lower.setdefault(name.lower(), row)
        object.__setattr__(self, "pyramid", ResidualPyramid(self.vectors))
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "ascii", ascii_)
        object.__setattr__(self, "tech", [a and len(n) > 3 for a, n in zip(ascii_, self.names, strict=True)])
        object.__setattr__(self, "row_of_lower", row_of_lower)
        object.__setattr__(self, "_duplicates", {})

    def near_duplicates(self, rows: Sequence[int], threshold: float) -> dict[int, frozenset[int]]:
        """For each of `rows` (and any row seen before), the other tags with cosine > threshold.

        Computed once per row and tag space (one (new rows × tags) product), then looked up: the
        semantic merge asks about the same few hundred tags query after query, and a tag space
        lives until the tag vectors change. Concurrent queries may compute a row twice (same value)."""
        cache = self._duplicates.get(threshold)
        if cache is None:
            cache = self._duplicates.setdefault(threshold, {})
        new = [r for r in dict.fromkeys(rows) if r not in cache]
        if new:
            above = (self.vectors[new] @ self.vectors.T) > threshold
            for row, hits in zip(new, above, strict=True):
                cache[row] = frozenset(np.flatnonzero(hits).tolist()) - {row}
        return cache

    def fill_near_duplicates(self, threshold: float, block: int = 256) -> int:
        """Compute the near-duplicate sets of every tag not yet done, `block` rows per product
        (the tag maintainer's thread does this once a tag space has settled, so queries only look
        them up). Returns how many rows it computed."""
        done = self._duplicates.get(threshold, {})
        missing = [r for r in range(len(self.names)) if r not in done]
        for start in range(0, len(missing), block):
            self.near_duplicates(missing[start : start + block], threshold)
        return len(missing)


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


@dataclass(slots=True)
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
    if not (_is_ascii_tag(name) and len(name) > 3):
        return 1.0
    return tech_penalty(world, params)


def tech_penalty(world: str, params: RagParams) -> float:
    """The language penalty of a technical tag in this world (1 = none)."""
    kb = params.knowledge_base
    if not kb.lang_confidence_enabled:
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
        self._pulled: dict[str, list[str]] = {}

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

    def reshape(self, beta0: float, core_tags: Sequence[str], details: bool = True) -> Reshaped:
        """The fused vector; `details` False leaves the info's matched and core tags empty (only
        an explanation reads them)."""
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
            matched=tuple(WeightedTag(names[e.row], e.weight, e.core) for e in self._matched(accepted))
            if details
            else (),
            core=tuple(names[e.row] for e in accepted if e.core) if details else (),
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
            tech = self.space.tech
            damped = tech_penalty(self.ep.world, self.params)
            base = []
            seen: set[int] = set()
            for depth, level in enumerate(self.pyramid.levels):
                decay = LAYER_DECAY**depth
                for row, contribution, similarity in zip(
                    level.ids, level.contributions, level.similarities, strict=True
                ):
                    if row in seen:
                        continue
                    seen.add(row)
                    penalty = damped if tech[row] else 1.0
                    base.append((row, contribution * decay * penalty, similarity))
            self._base = base
        return self._base

    def _collect(self, core: frozenset[str]) -> list[_Entry]:
        space = self.space
        names, lower = space.names, space.lower
        gamma = self.gamma
        if core:
            entries = [
                _Entry(row, weight * (gamma * (0.95 + 0.1 * (similarity or 0.5))), True)
                if lower[row] in core
                else _Entry(row, weight, False)
                for row, weight, similarity in self._pyramid_tags()
            ]
        else:  # the sensing pass
            entries = [_Entry(row, weight, False) for row, weight, _similarity in self._pyramid_tags()]
        seen = {e.row for e in entries}
        if entries:
            parents = sorted(entries, key=lambda e: -e.weight)[:PULLBACK_PARENTS]
            for parent in parents:
                for neighbour in self._neighbours(names[parent.row]):
                    pulled = space.row_of.get(neighbour)
                    if pulled is not None and pulled not in seen:
                        seen.add(pulled)
                        entries.append(_Entry(pulled, PULLBACK_SHARE * parent.weight, neighbour.lower() in core))
        if not core:
            return entries
        present = {lower[e.row] for e in entries}
        missing = [t for t in sorted(core) if t not in present]
        if missing:
            base = max((e.weight for e in entries), default=1.0)
            for core_name in missing:
                found = space.row_of.get(core_name)
                if found is None:  # names are normalised (lower case); a hand-built space may not be
                    found = space.row_of_lower.get(core_name)
                if found is not None and found not in seen:
                    seen.add(found)
                    entries.append(_Entry(found, base * gamma, True))
        return entries

    def _neighbours(self, name: str) -> list[str]:
        """The pull-back tags of one parent, asked once per query (both passes often share parents)."""
        found = self._pulled.get(name)
        if found is None:
            found = self._pulled[name] = self.space.neighbours(name, PULLBACK_NEIGHBOURS)
        return found

    def _accepted(self, core: frozenset[str]) -> list[_Entry]:
        """Collected tags, heaviest first, with near-duplicates (cosine > threshold) merged into the heavier:
        a tag whose earlier (heavier) near-duplicates include an accepted one adds MERGE_SHARE of its
        weight to the first such; the others are accepted."""
        ordered = sorted(self._collect(core), key=lambda e: -e.weight)
        if not ordered:
            return []
        threshold = self.params.knowledge_base.deduplication_threshold
        duplicates = self.space.near_duplicates([e.row for e in ordered], threshold)
        position = {e.row: i for i, e in enumerate(ordered)}
        accepted: dict[int, _Entry] = {}  # position in `ordered` → entry, in order
        for i, entry in enumerate(ordered):
            near = duplicates[entry.row]
            if near:
                earlier = [j for j in (position.get(r, i) for r in near) if j < i and j in accepted]
                if earlier:  # the first accepted tag (heaviest) it duplicates takes its weight
                    target = accepted[min(earlier)]
                    target.weight += MERGE_SHARE * entry.weight
                    target.core = target.core or entry.core
                    continue
            accepted[i] = _Entry(entry.row, entry.weight, entry.core)
        return list(accepted.values())

    def _matched(self, accepted: list[_Entry]) -> list[_Entry]:
        if not accepted:
            return []
        kb = self.params.knowledge_base
        top = max(e.weight for e in accepted)
        tech_cut, normal_cut = top * kb.tech_tag_threshold, top * kb.normal_tag_threshold
        ascii_ = self.space.ascii
        return [e for e in accepted if e.core or e.weight > (tech_cut if ascii_[e.row] else normal_cut)]


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
