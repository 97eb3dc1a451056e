"""EpaBasis: Embedding Projection Analysis over the tag vectors (ALGORITHMS.md A.7).

Build: seeded k-means (Forgy init, dot-product assignment, ≤ 50 iterations) on the tag vectors,
then weighted PCA of the centroids through their Gram matrix, with power iteration that
re-orthogonalises against the earlier components on every step. K = the smallest prefix of
components holding > 95 % of the energy, at least 8 (or all there are).

Changed from VCP on purpose:
- the RNG is seeded, so the same tags always give the same basis;
- each axis is labelled with the tag whose centred vector projects most on it (VCP labels
  axis k with cluster k's name, which has nothing to do with component k);
- the basis is versioned by the tag set it came from and rebuilt when that set changes
  (TagState decides when); VCP computes it once and never again.

Below MIN_TAGS tags there is no basis: `project` returns the uninitialised result
(entropy 1, logic depth 0, no axes), as VCP's TagMemo path does.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MIN_TAGS = 8
MAX_BASIS_DIM = 64
CLUSTER_COUNT = 32
KMEANS_ITERATIONS = 50
KMEANS_TOLERANCE = 1e-4
POWER_ITERATIONS = 100
ENERGY_SHARE = 0.95
DOMINANT_SHARE = 0.05
BRIDGE_STRENGTH = 0.15


@dataclass(frozen=True)
class Axis:
    index: int
    label: str
    energy: float  # π_k: the share of the query's (centred) energy on this axis
    projection: float  # signed p_k


@dataclass(frozen=True)
class Projection:
    entropy: float  # Ĥ, normalised to [0, 1]
    logic_depth: float  # 1 − Ĥ
    axes: tuple[Axis, ...] = field(default=())  # π_k > 0.05, strongest first
    resonance: float = 0.0  # Σ √(π_top·π_i) over bridges stronger than 0.15

    @property
    def world(self) -> str:
        return self.axes[0].label if self.axes else "Unknown"


UNINITIALISED = Projection(entropy=1.0, logic_depth=0.0)


def _normalise_rows(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    out: np.ndarray = np.where(norms > 1e-9, m / np.maximum(norms, 1e-12), m)
    return out


def kmeans(vectors: np.ndarray, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(centroids k×D, cluster sizes) by dot-product k-means; an empty cluster keeps its centroid."""
    n = vectors.shape[0]
    centroids = vectors[rng.choice(n, size=k, replace=False)].astype(np.float64)
    sizes = np.zeros(k, dtype=np.float64)
    for _ in range(KMEANS_ITERATIONS):
        assign = np.argmax(vectors @ centroids.T, axis=1)  # ties → lower j, as VCP
        sizes = np.bincount(assign, minlength=k).astype(np.float64)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, vectors)
        norms = np.linalg.norm(sums, axis=1)
        moved = (sizes > 0) & (norms > 1e-9)
        updated = centroids.copy()
        updated[moved] = sums[moved] / norms[moved, None]
        movement = float(np.sum((updated[sizes > 0] - centroids[sizes > 0]) ** 2))
        centroids = updated
        if movement < KMEANS_TOLERANCE:
            break
    return centroids, sizes


def power_iteration(gram: np.ndarray, previous: list[np.ndarray], rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Leading eigenpair of `gram`, kept orthogonal to `previous` on every step (twice: re-orthogonalised)."""
    v: np.ndarray = np.asarray(rng.uniform(-0.5, 0.5, gram.shape[0]))
    lam_prev = 0.0
    for _ in range(POWER_ITERATIONS):
        w = gram @ v
        lam = float(v @ w) / max(float(v @ v), 1e-30)
        for _pass in range(2):
            for e in previous:
                w = w - float(w @ e) * e
        norm = float(np.linalg.norm(w))
        if norm < 1e-9:
            break
        v = w / norm
        if abs(lam - lam_prev) < 1e-6:
            lam_prev = lam
            break
        lam_prev = lam
    norm = float(np.linalg.norm(v))
    return (v / norm if norm > 0 else v), lam_prev


class EpaBasis:
    """An orthonormal basis (K×D) around a mean, with one label per axis."""

    def __init__(
        self, basis: np.ndarray, mean: np.ndarray, energies: np.ndarray, labels: list[str], version: str
    ) -> None:
        self.basis = basis.astype(np.float32)
        self.mean = mean.astype(np.float32)
        self.energies = energies.astype(np.float64)
        self.labels = labels
        self.version = version  # a digest of the tag set it was built from
        k = self.dimension
        self._max_entropy = float(np.log2(k)) if k > 1 else 0.0  # per basis, not per query

    @property
    def dimension(self) -> int:
        return int(self.basis.shape[0])

    @classmethod
    def build(cls, names: list[str], vectors: np.ndarray, version: str = "", seed: int = 0) -> EpaBasis | None:
        """The basis of these tag vectors, or None below MIN_TAGS tags or with no variance."""
        n = len(names)
        if n < MIN_TAGS or vectors.shape[0] != n:
            return None
        rng = np.random.default_rng(seed)
        unit = _normalise_rows(vectors.astype(np.float64))
        centroids, sizes = kmeans(unit, min(n, CLUSTER_COUNT), rng)
        total = float(sizes.sum())
        mean = (sizes[:, None] * centroids).sum(axis=0) / total
        x = np.sqrt(sizes)[:, None] * (centroids - mean)
        gram = x @ x.T
        components: list[np.ndarray] = []
        energies: list[float] = []
        for _ in range(min(len(centroids), MAX_BASIS_DIM)):
            e, lam = power_iteration(gram, components, rng)
            if lam < 1e-6:
                break
            components.append(e)
            energies.append(lam)
            gram = gram - lam * np.outer(e, e)
        axes: list[np.ndarray] = []
        for e in components:
            e_kept = np.where(np.abs(e) > 1e-9, e, 0.0)
            u = e_kept @ x
            for _pass in range(2):  # power iteration stops on λ, not on e: keep the axes exactly orthogonal
                for prev in axes:
                    u = u - float(u @ prev) * prev
            norm = float(np.linalg.norm(u))
            if norm > 1e-9:
                axes.append(u / norm)
        if not axes:
            return None
        energies = energies[: len(axes)]
        shares = np.cumsum(energies) / sum(energies)
        over = np.nonzero(shares > ENERGY_SHARE)[0]
        k = len(axes) if not len(over) else min(max(int(over[0]) + 1, MIN_TAGS), len(axes))
        basis = np.stack(axes[:k])
        centred = unit - mean
        nearest = np.argmax(np.abs(centred @ basis.T), axis=0)  # the tag that lies most along each axis
        labels = [names[int(i)] for i in nearest]
        return cls(basis, mean, np.asarray(energies[:k]), labels, version)

    def project(self, v: np.ndarray) -> Projection:
        p = self.basis @ (np.asarray(v, dtype=np.float32) - self.mean)
        energy = float(p @ p)
        if energy < 1e-12:
            return UNINITIALISED
        pi = (p.astype(np.float64) ** 2) / energy
        nz = pi[pi > 1e-9]
        h = float(-(nz * np.log2(nz)).sum())
        entropy = h / self._max_entropy if self._max_entropy else 0.0
        shares, coords = pi.tolist(), p.tolist()
        order = [i for i in np.argsort(-pi, kind="stable").tolist() if shares[i] > DOMINANT_SHARE]
        axes = tuple(Axis(i, self.labels[i], shares[i], coords[i]) for i in order)
        resonance = 0.0
        if len(axes) >= 2:
            for axis in axes[1:]:
                strength = math.sqrt(axes[0].energy * axis.energy)
                if strength > BRIDGE_STRENGTH:
                    resonance += strength
        return Projection(entropy=entropy, logic_depth=1.0 - entropy, axes=axes, resonance=resonance)

    def save(self, path: Path) -> None:
        """Write atomically: a .npz of the arrays, labels and version in its metadata."""
        tmp = path.with_suffix(".tmp.npz")
        meta = json.dumps({"labels": self.labels, "version": self.version})
        np.savez(tmp, basis=self.basis, mean=self.mean, energies=self.energies, meta=np.array(meta))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> EpaBasis | None:
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                return cls(data["basis"], data["mean"], data["energies"], list(meta["labels"]), str(meta["version"]))
        except (OSError, KeyError, ValueError):
            return None
