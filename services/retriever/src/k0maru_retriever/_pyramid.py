"""ResidualPyramid: how much of a query the tag vectors explain, level by level (ALGORITHMS.md A.8).

Each level takes the 10 tags nearest the current residual, orthogonalises them (modified
Gram-Schmidt, in similarity order: VCP uses SQLite's id order by accident), projects the
residual on their span and keeps what is left for the next level. Up to 3 levels, stopping
once less than 10 % of the query's energy remains. The "handshakes" (directions from each tag
to the residual) of level 0 give coherence, novelty and the TagMemo activation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    tags: tuple[PyramidTag, ...]
    explained: float  # share of the query's energy this level removed
    residual_ratio: float  # ‖r′‖² / ‖q‖²
    handshake: Handshake


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
    magnitude = np.linalg.norm(delta, axis=1)
    directions = np.where(magnitude[:, None] > 1e-9, delta / np.maximum(magnitude, 1e-12)[:, None], 0.0)
    coherence = float(np.linalg.norm(directions.mean(axis=0))) if len(directions) else 0.0
    head = directions[: min(len(directions), 5)]
    pattern = 0.0
    if len(head) >= 2:
        dots = np.abs(head @ head.T)
        iu = _PAIRS if len(head) == 5 else np.triu_indices(len(head), k=1)
        pattern = float(dots[iu].mean())
    return Handshake(coherence, pattern, (1 - coherence) * (1 - pattern)), magnitude


_PAIRS = np.triu_indices(5, k=1)


def orthonormal_span(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(D×m orthonormal basis, indices of the rows that added a direction), rows taken in order.

    Householder QR equals modified Gram-Schmidt up to signs while the rows are independent;
    a row (numerically) inside the span of the earlier ones is skipped, as MGS skips it.
    """
    q, r = np.linalg.qr(rows.T)
    diag = np.abs(np.diag(r))
    if bool(np.all(diag > 1e-6)):
        return q, np.arange(len(rows))
    basis: list[np.ndarray] = []
    kept = []
    for i, t in enumerate(rows):
        v = t.copy()
        for u in basis:
            v -= float(v @ u) * u
        norm = float(np.linalg.norm(v))
        if norm > 1e-6:
            basis.append(v / norm)
            kept.append(i)
    return (np.stack(basis, axis=1) if basis else np.zeros((rows.shape[1], 0))), np.array(kept, dtype=int)


class ResidualPyramid:
    """Over a matrix of unit tag vectors (one row per tag)."""

    def __init__(self, tag_vectors: np.ndarray) -> None:
        self._tags = tag_vectors.astype(np.float32)

    def analyze(self, q: np.ndarray) -> Pyramid:
        q = q.astype(np.float32)
        e0 = float(q @ q)
        if e0 < 1e-12 or not len(self._tags):
            return Pyramid()
        r = q.copy()
        levels: list[PyramidLevel] = []
        explained = 0.0
        for _ in range(MAX_LEVELS):
            scores = self._tags @ r
            k = min(TOP_K, len(scores))
            top = np.argpartition(-scores, k - 1)[:k]
            top = top[np.argsort(-scores[top], kind="stable")]
            r_norm = float(np.linalg.norm(r))
            rows = self._tags[top].astype(np.float64)
            rd = r.astype(np.float64)
            basis, independent = orthonormal_span(rows)
            coefficients = basis.T @ rd  # ⟨r, u_i⟩ against the current residual
            contributions = np.zeros(k)
            contributions[independent] = np.abs(coefficients)
            r_next = rd - basis @ coefficients
            energy = max(0.0, float(rd @ rd) - float(r_next @ r_next)) / e0
            shake, magnitude = handshake_features(rd, rows)
            sims = scores[top] / max(r_norm, 1e-12)
            level_tags = tuple(
                PyramidTag(int(top[i]), float(sims[i]), float(contributions[i]), float(magnitude[i])) for i in range(k)
            )
            ratio = float(r_next @ r_next) / e0
            levels.append(PyramidLevel(level_tags, energy, ratio, shake))
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
