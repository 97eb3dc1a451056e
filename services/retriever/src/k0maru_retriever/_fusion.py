"""RrfFusion with a bounded graph boost (ALGORITHMS.md B.5, minus two of its bugs).

score(d) = Σ_m w_m / (k + rank_m(d)); a channel missing d contributes 0. Weights are normalised
when both channels returned something, (1, 0) or (0, 1) when only one did.

Graph boost. B.5 adds a flat +0.05 to a note linked to or from another candidate; RRF scores top
out at 1/61 ≈ 0.016, so that constant put every connected note above every unconnected one (the
note ranked first by both channels came 31st on the example vault). Here the boost is a rank
bonus instead: a connected note is scored as if, in each channel that found it, it had closed a
fraction `boost` (0 ≤ boost < 1) of the distance to rank 1: rank r counts as 1 + (r − 1)(1 − boost).
So the boost lives in the fused score's own scale and keeps its place:
- a note ranked first by every channel that ran stays first (no other note reaches rank 1);
- a note that an unconnected note beats in every channel passes it only when its boosted ranks
  do (its reach with 0.3: rank 11 counts as 8, rank 31 as 22).
Ties: BM25 rank ascending (present first), vector rank ascending (present first), path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class FusedHit:
    path: str
    score: float = 0.0
    bm25_rank: int = 0  # 1-based; 0 = absent
    bm25_score: float = 0.0
    vector_rank: int = 0
    vector_score: float = 0.0
    boost: float = 0.0  # what the graph boost added to the score
    # why it was put first, before fusion's order ("name", "line", "symbol": `HybridSearcher._exact_first`;
    # "replaces": `_succession.with_successors`)
    exact: str = ""


def channel_weights(w_bm25: float, w_vector: float, has_bm25: bool, has_vector: bool) -> tuple[float, float]:
    if has_bm25 and has_vector:
        total = w_bm25 + w_vector
        return (0.5, 0.5) if total <= 0 else (w_bm25 / total, w_vector / total)
    return (1.0, 0.0) if has_bm25 else (0.0, 1.0)


def boosted_rank(rank: int, boost: float) -> float:
    """The rank a connected note counts as: `boost` of the way from `rank` to 1."""
    return 1.0 + (rank - 1) * (1.0 - boost)


def _collect(bm25: list[tuple[str, float]], vector: list[tuple[str, float]]) -> dict[str, FusedHit]:
    hits: dict[str, FusedHit] = {}
    for rank, (path, score) in enumerate(bm25, start=1):
        hit = hits.setdefault(path, FusedHit(path))
        hit.bm25_rank, hit.bm25_score = rank, score
    for rank, (path, score) in enumerate(vector, start=1):
        hit = hits.setdefault(path, FusedHit(path))
        hit.vector_rank, hit.vector_score = rank, score
    return hits


def _score_all(
    hits: dict[str, FusedHit],
    score: Callable[[FusedHit, float], float],
    boost: float,
    connected: Callable[[set[str]], set[str]] | None,
) -> list[FusedHit]:
    """Score every hit, the connected ones with the boost too; best first."""
    if not 0.0 <= boost < 1.0:
        raise ValueError(f"graph boost must be in [0, 1), got {boost}")
    linked = connected(set(hits)) if connected is not None and boost > 0 else set()
    for hit in hits.values():
        hit.score = score(hit, 0.0)
        if hit.path in linked:
            boosted = score(hit, boost)
            hit.boost, hit.score = boosted - hit.score, boosted
    return sorted(hits.values(), key=tie_break_key)


def rrf_fuse(
    bm25: list[tuple[str, float]],
    vector: list[tuple[str, float]],
    *,
    k: int = 60,
    w_bm25: float = 0.5,
    w_vector: float = 0.5,
    boost: float = 0.1,
    connected: Callable[[set[str]], set[str]] | None = None,
    unseen: frozenset[str] = frozenset(),
) -> list[FusedHit]:
    """Fuse two ranked lists of (path, channel score), each already one entry per note.

    `connected(candidates)` returns the candidates linked to or from another candidate.
    `unseen`: notes the vector channel cannot see yet (none of their chunks embedded): in that
    channel they count as BM25 ranks them (no evidence either way), not as missing.
    """
    if not bm25 and not vector:
        return []
    wb, wv = channel_weights(w_bm25, w_vector, bool(bm25), bool(vector))

    def score(hit: FusedHit, bonus: float) -> float:
        total = 0.0
        if hit.bm25_rank:
            total += wb / (k + boosted_rank(hit.bm25_rank, bonus))
        if hit.vector_rank:
            total += wv / (k + boosted_rank(hit.vector_rank, bonus))
        elif hit.bm25_rank and vector and hit.path in unseen:
            total += wv / (k + boosted_rank(hit.bm25_rank, bonus))
        return total

    return _score_all(_collect(bm25, vector), score, boost, connected)


CONFIDENCE_RANK = 10  # each channel's confidence: how far its best note stands above its 10th
MIN_BM25_SPREAD = 0.05  # BM25 scores all equal to the 10th: unsure, not infinitely so
# BM25's best note scores at least twice its 10th (or BM25 found fewer than 10): the vector
# channel's weight is not raised above its own. In a small vault the nearest notes by meaning
# stand far apart (the 10th is about something else), so the vector gap gave that channel 71 % of
# the weight against a BM25 this sure, and a passing mention of `useEffect` came before the note
# about it. Chosen among 0.3-0.9 and "never" on the development sets (bench/README.md, 35th wave).
BM25_SURE_SPREAD = 0.5


def confident_weights(
    bm25: list[tuple[str, float]],
    vector: list[tuple[str, float]],
    w_bm25: float,
    w_vector: float,
    power: float,
    gap_scale: float = 0.19,
) -> tuple[float, float]:
    """Per-query weights: w_vector × (vector gap / (gap_scale × BM25 spread)) ** power, w_bm25 as given.

    Each channel's confidence is how far its best note stands above its 10th: for the vector
    channel the cosine gap (best − 10th; the last when fewer), for BM25 the relative drop
    (best − 10th) / best (BM25 scores have no fixed scale; a note BM25 did not return scores 0,
    so a query matching few notes is a confident one). Where BM25's best note stands far above
    the rest (conversation sessions: long notes sharing the query's names) BM25 leads; where its
    scores are flat and the embedding model separates a few notes (code search, duplicate
    questions, a vault's notes described in other words) the vector channel does. Chosen on six
    development sets and two linked vaults at once (bench/README.md, issue 10); `gap_scale` is the
    model's own (`model_gap_scale`): each model has its own cosine scale. Where BM25 is sure
    (`BM25_SURE_SPREAD`), the vector channel's weight is only ever lowered.
    """
    if power <= 0 or not bm25 or not vector:
        return w_bm25, w_vector
    spread, gap = channel_confidence(bm25, vector)
    factor = (gap / (gap_scale * spread)) ** power
    if spread >= BM25_SURE_SPREAD:  # BM25 is sure: the vector channel does not gain on it
        factor = min(factor, 1.0)
    return w_bm25, w_vector * factor


def channel_confidence(bm25: list[tuple[str, float]], vector: list[tuple[str, float]]) -> tuple[float, float]:
    """(BM25 spread, vector gap): how far each channel's best note stands above its 10th (0 if it ran dry)."""
    gap = max(0.0, vector[0][1] - vector[min(CONFIDENCE_RANK, len(vector)) - 1][1]) if vector else 0.0
    if not bm25:
        return 0.0, gap
    best = bm25[0][1]
    tenth = bm25[CONFIDENCE_RANK - 1][1] if len(bm25) >= CONFIDENCE_RANK else 0.0
    return (max(MIN_BM25_SPREAD, (best - tenth) / best) if best > 0 else 1.0), gap


# The ratio scale per model: each model has its own cosine scale (USE's gaps are wider). Measured
# on the dev sets (bench/README.md, issue 10); other models get the default.
MODEL_GAP_SCALES = {"minilm-l6-int8": 0.19, "use-multilingual-q": 0.63}
DEFAULT_GAP_SCALE = 0.19


def model_gap_scale(model_id: str) -> float:
    """The gap scale of a model id as the embedder names it (preset name, then its dimension)."""
    return next((g for name, g in MODEL_GAP_SCALES.items() if model_id.startswith(name)), DEFAULT_GAP_SCALE)


def minmax(ranked: list[tuple[str, float]]) -> dict[str, float]:
    """Channel scores mapped onto [0, 1] within the pool: its best note 1, its last 0."""
    if not ranked:
        return {}
    hi, lo = ranked[0][1], ranked[-1][1]
    span = hi - lo
    return {p: (s - lo) / span if span > 0 else 1.0 for p, s in ranked}


def convex_fuse(
    bm25: list[tuple[str, float]],
    vector: list[tuple[str, float]],
    *,
    w_bm25: float = 0.5,
    w_vector: float = 0.5,
    boost: float = 0.1,
    connected: Callable[[set[str]], set[str]] | None = None,
    unseen: frozenset[str] = frozenset(),
) -> list[FusedHit]:
    """score(d) = Σ_m w_m · minmax_m(d), a channel missing d contributing 0 (scores, not ranks).

    The graph boost is the same rank-bonus idea on this scale: a connected note closes `boost`
    of its distance to its channel's best (1) in each channel that found it. `unseen`: as in
    `rrf_fuse`, a note the vector channel cannot see yet counts there as BM25 scores it.
    """
    if not bm25 and not vector:
        return []
    wb, wv = channel_weights(w_bm25, w_vector, bool(bm25), bool(vector))
    nb, nv = minmax(bm25), minmax(vector)

    def score(hit: FusedHit, bonus: float) -> float:
        total = 0.0
        if hit.bm25_rank:
            total += wb * (nb[hit.path] + bonus * (1.0 - nb[hit.path]))
        if hit.vector_rank:
            total += wv * (nv[hit.path] + bonus * (1.0 - nv[hit.path]))
        elif hit.bm25_rank and vector and hit.path in unseen:
            total += wv * (nb[hit.path] + bonus * (1.0 - nb[hit.path]))
        return total

    return _score_all(_collect(bm25, vector), score, boost, connected)


def tie_break_key(hit: FusedHit) -> tuple[float, int, int, int, int, str]:
    return (-hit.score, hit.bm25_rank == 0, hit.bm25_rank, hit.vector_rank == 0, hit.vector_rank, hit.path)


def single_channel(ranked: list[tuple[str, float]], *, k: int = 60, vector: bool = False) -> list[FusedHit]:
    out = []
    for rank, (path, score) in enumerate(ranked, start=1):
        hit = FusedHit(path, score=1.0 / (k + rank))
        if vector:
            hit.vector_rank, hit.vector_score = rank, score
        else:
            hit.bm25_rank, hit.bm25_score = rank, score
        out.append(hit)
    return out
