"""ResidualPyramid: how much of a query the tag vectors explain, level by level (ALGORITHMS.md A.8).

Each level takes the 10 tags nearest the current residual, orthogonalises them (modified
Gram-Schmidt, in similarity order: VCP uses SQLite's id order by accident), projects the
residual on their span and keeps what is left for the next level. Up to 3 levels, stopping
once less than 10 % of the query's energy remains. The "handshakes" (directions from each tag
to the residual) of level 0 give coherence, novelty and the TagMemo activation.

Speed (it runs on every TagMemo query): a level costs one matrix-vector product over the tags
and k×k work on the 10 tags' Gram matrix; the handshakes come from that Gram matrix too, and
those of deeper levels (which nothing reads) and the per-tag records are only built on access.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

MAX_LEVELS = 3
TOP_K = 10
MIN_ENERGY_RATIO = 0.1


@dataclass(frozen=True)
class PyramidTag:
    id: int  # row in the tag matrix
    similarity: float  # cosine with the residual the level searched with
    contribution: float  # |⟨r, u_i⟩|, 0 for a tag dependent on the earlier ones
    handshake: float  # ‖r − t_i‖


@dataclass(frozen=True)
class Handshake:
    coherence: float  # DC = ‖mean of the unit directions tag → residual‖
    pattern: float  # PS = mean |⟨d_i, d_j⟩| over pairs of the first 5
    noise: float  # (1 − DC)(1 − PS)


@dataclass(frozen=True)
class PyramidLevel:
    ids: list[int]  # rows of the level's tags, most similar first
    similarities: list[float]  # cosine of each with the residual the level searched with
    contributions: list[float]  # |⟨r, u_i⟩|, 0 for a tag dependent on the earlier ones
    explained: float  # share of the query's energy this level removed
    residual_ratio: float  # ‖r′‖² / ‖q‖²
    residual: np.ndarray = field(repr=False, compare=False)  # the residual r this level searched with
    rows: np.ndarray = field(repr=False, compare=False)  # the tags' vectors
    gram: np.ndarray = field(repr=False, compare=False)  # their Gram matrix
    dots: np.ndarray = field(repr=False, compare=False)  # ⟨t_i, r⟩

    @cached_property
    def _shake(self) -> tuple[Handshake, np.ndarray]:
        shaken = _handshake_from_gram(self.residual, self.gram, self.dots)
        return shaken if shaken is not None else handshake_features(self.residual, self.rows)

    @property
    def handshake(self) -> Handshake:
        return self._shake[0]

    @property
    def tags(self) -> tuple[PyramidTag, ...]:
        magnitudes = self._shake[1].tolist()
        return tuple(map(PyramidTag, self.ids, self.similarities, self.contributions, magnitudes))


@dataclass(frozen=True)
class PyramidFeatures:
    depth: int = 0
    coverage: float = 0.0
    novelty: float = 1.0
    coherence: float = 0.0
    activation: float = 0.0  # tagMemoActivation = coverage · PS₀ · (1 − noise₀)


@dataclass(frozen=True)
class Pyramid:
    levels: tuple[PyramidLevel, ...] = field(default=())
    features: PyramidFeatures = field(default_factory=PyramidFeatures)


def handshake_features(residual: np.ndarray, tags: np.ndarray) -> tuple[Handshake, np.ndarray]:
    delta = residual[None, :] - tags
    magnitude = np.sqrt(np.einsum("ij,ij->i", delta, delta))
    return _handshake(delta, magnitude), magnitude


def _handshake_from_gram(r: np.ndarray, gram: np.ndarray, dots: np.ndarray) -> tuple[Handshake, np.ndarray] | None:
    """The handshake of r with the rows from their Gram matrix and ⟨t_i, r⟩ alone (k×k work
    instead of k×D): ‖r − t_i‖² = ‖r‖² − 2⟨t_i, r⟩ + ‖t_i‖² and ⟨r − t_i, r − t_j⟩ likewise.
    None when a tag lies within 1e-3 of r, where the subtraction would lose precision."""
    rr = float(r @ r)
    inner = (rr - dots[:, None] - dots[None, :]) + gram  # ⟨r − t_i, r − t_j⟩
    squared = inner.diagonal()
    if not len(squared) or float(squared.min()) <= 1e-6:
        return None
    magnitude = np.sqrt(squared)
    cos = inner / np.outer(magnitude, magnitude)  # ⟨d_i, d_j⟩ of the unit directions
    n = len(magnitude)
    coherence = math.sqrt(max(float(cos.sum()), 0.0)) / n  # ‖Σ d_i‖ / n
    pattern = 0.0
    head = min(n, 5)
    if head >= 2:
        iu = _PAIRS if head == 5 else np.triu_indices(head, k=1)
        pattern = float(np.abs(cos[:head, :head][iu]).mean())
    return Handshake(coherence, pattern, (1 - coherence) * (1 - pattern)), magnitude


def _handshake(delta: np.ndarray, magnitude: np.ndarray) -> Handshake:
    """DC, PS and noise from the (tag → residual) differences and their lengths."""
    n = len(delta)
    if not n:
        return Handshake(0.0, 0.0, 1.0)
    scale = np.where(magnitude > 1e-9, 1.0 / np.maximum(magnitude, 1e-12), 0.0)
    directions = delta * scale[:, None]  # unit directions; the zero vector where the tag is the residual
    mean = directions.sum(axis=0) / n
    coherence = math.sqrt(float(mean @ mean))
    pattern = 0.0
    head = directions[: min(n, 5)]
    if len(head) >= 2:
        iu = _PAIRS if len(head) == 5 else np.triu_indices(len(head), k=1)
        pattern = float(np.abs(head @ head.T)[iu].mean())
    return Handshake(coherence, pattern, (1 - coherence) * (1 - pattern))


_PAIRS = np.triu_indices(5, k=1)


def _public_cholesky(a: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return np.full_like(a, np.nan)


# NumPy's own float64 kernels behind np.linalg.cholesky / solve, without their per-call checks and
# error-state wrappers (≈ 10 µs a call; a pyramid makes 9 on 10×10 matrices): same LAPACK routines, same
# results. The public functions where a NumPy version does not have them.
_cholesky: Callable[[np.ndarray], np.ndarray]
_solve: Callable[[np.ndarray, np.ndarray], np.ndarray]
try:
    from numpy.linalg import _umath_linalg

    _cholesky = functools.partial(_umath_linalg.cholesky_lo, signature="d->d")
    _solve = functools.partial(_umath_linalg.solve1, signature="dd->d")
except (ImportError, AttributeError):  # pragma: no cover - other NumPy layouts
    _cholesky, _solve = _public_cholesky, np.linalg.solve


def project_onto_rows(rows: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    contributions, residual, _gram, _dots = _project(rows, r)
    return contributions, residual


def _project(rows: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(|⟨r, u_i⟩| per row, r minus its projection on the rows' span), the u_i being the rows
    orthonormalised in order (modified Gram-Schmidt); a row inside the span of the earlier
    ones adds no direction and gets 0.

    Fast path: Cholesky of the rows' k×k Gram matrix gives MGS's R (positive diagonal), so
    ⟨r, u⟩ = L⁻¹·(rows·r) without forming the u_i. Near-dependent rows fall back to MGS itself.
    """
    gram = rows @ rows.T
    dots = rows @ r
    with np.errstate(invalid="ignore"):  # a Gram matrix that is not positive definite gives NaNs: MGS below
        lower = _cholesky(gram)
        if bool((lower.diagonal() > 1e-6).all()):
            coefficients = _solve(lower, dots)
            residual = r - _solve(lower.T, coefficients) @ rows
            return np.abs(coefficients), residual, gram, dots
    contributions = np.zeros(len(rows))
    residual = r.copy()
    basis: list[np.ndarray] = []
    for i, t in enumerate(rows):
        v = t.copy()
        for u in basis:
            v -= float(v @ u) * u
        norm = float(np.linalg.norm(v))
        if norm > 1e-6:
            u = v / norm
            basis.append(u)
            c = float(r @ u)
            contributions[i] = abs(c)
            residual -= c * u
    return contributions, residual, gram, dots


class ResidualPyramid:
    """Over a matrix of unit tag vectors (one row per tag)."""

    def __init__(self, tag_vectors: np.ndarray) -> None:
        self._tags = np.ascontiguousarray(tag_vectors, dtype=np.float32)  # shared with the caller's when it is so

    def analyze(self, q: np.ndarray) -> Pyramid:
        q = np.asarray(q, dtype=np.float32)
        e0 = float(q @ q)
        if e0 < 1e-12 or not len(self._tags):
            return Pyramid()
        r = q
        k = min(TOP_K, len(self._tags))
        levels: list[PyramidLevel] = []
        explained = 0.0
        for _ in range(MAX_LEVELS):
            scores = self._tags @ r
            top = np.argpartition(-scores, k - 1)[:k]
            near = scores[top]
            order = np.argsort(-near, kind="stable")
            top, near = top[order], near[order]
            r_norm = math.sqrt(float(r @ r))  # = float32 norm once `near /` rounds it to float32
            rows = self._tags[top].astype(np.float64)
            rd = r.astype(np.float64)
            contributions, r_next, gram, dots = _project(rows, rd)  # against the current residual
            before, left = float(rd @ rd), float(r_next @ r_next)
            energy = max(0.0, before - left) / e0
            sims = near / max(r_norm, 1e-12)
            ratio = left / e0
            level = PyramidLevel(
                top.tolist(), sims.tolist(), contributions.tolist(), energy, ratio, rd, rows, gram, dots
            )
            levels.append(level)
            explained += energy
            r = r_next.astype(np.float32)
            if ratio < MIN_ENERGY_RATIO:
                break
        coverage = min(1.0, explained)
        first = levels[0].handshake
        return Pyramid(
            tuple(levels),
            PyramidFeatures(
                depth=len(levels),
                coverage=coverage,
                novelty=0.7 * (1 - coverage) + 0.3 * first.coherence,
                coherence=first.pattern,
                activation=coverage * first.pattern * (1 - first.noise),
            ),
        )
