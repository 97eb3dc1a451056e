"""RrfFusion and snippets, exactly as ALGORITHMS.md B.5 states (minus its byte-offset bug).

score(d) = Σ_m w_m / (k + rank_m(d)) + boost(d); a channel missing d contributes 0. Weights
are normalised when both channels returned something, (1, 0) or (0, 1) when only one did.
boost(d) = +0.05 when d links to, or is linked from, another candidate (binary, not per link).
Ties: BM25 rank ascending (present first), vector rank ascending (present first), path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_HAN = re.compile(r"[\u3400-\u9fff]")


@dataclass
class FusedHit:
    path: str
    score: float = 0.0
    bm25_rank: int = 0  # 1-based; 0 = absent
    bm25_score: float = 0.0
    vector_rank: int = 0
    vector_score: float = 0.0
    boost: float = 0.0


def channel_weights(w_bm25: float, w_vector: float, has_bm25: bool, has_vector: bool) -> tuple[float, float]:
    if has_bm25 and has_vector:
        total = w_bm25 + w_vector
        return (0.5, 0.5) if total <= 0 else (w_bm25 / total, w_vector / total)
    return (1.0, 0.0) if has_bm25 else (0.0, 1.0)


def rrf_fuse(
    bm25: list[tuple[str, float]],
    vector: list[tuple[str, float]],
    *,
    k: int = 60,
    w_bm25: float = 0.5,
    w_vector: float = 0.5,
    boost: float = 0.05,
    connected: Callable[[str, set[str]], bool] | None = None,
) -> list[FusedHit]:
    """Fuse two ranked lists of (path, channel score), each already one entry per note."""
    if not bm25 and not vector:
        return []
    wb, wv = channel_weights(w_bm25, w_vector, bool(bm25), bool(vector))
    hits: dict[str, FusedHit] = {}
    for rank, (path, score) in enumerate(bm25, start=1):
        hit = hits.setdefault(path, FusedHit(path))
        hit.bm25_rank, hit.bm25_score = rank, score
        hit.score += wb / (k + rank)
    for rank, (path, score) in enumerate(vector, start=1):
        hit = hits.setdefault(path, FusedHit(path))
        hit.vector_rank, hit.vector_score = rank, score
        hit.score += wv / (k + rank)
    if connected is not None and boost:
        pool = set(hits)
        for hit in hits.values():
            if connected(hit.path, pool):
                hit.boost = boost
                hit.score += boost
    return sorted(hits.values(), key=tie_break_key)


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


def snippet(body: str, query: str, width: int = 200) -> str:
    """A window of `width` characters around the first match of the query or one of its terms."""
    flat = " ".join(body.split())
    if len(flat) <= width:
        return flat
    lowered = flat.lower()
    needles = [query.strip().lower(), *[t.lower() for t in query.split() if len(t) > 1]]
    needles += [query[i : i + 2] for i in range(len(query) - 1) if _HAN.match(query[i])]
    pos = next((p for n in needles if n and (p := lowered.find(n)) >= 0), -1)
    if pos < 0:
        return flat[:width] + "..."
    start = max(0, min(pos - width // 2, len(flat) - width))
    end = start + width
    return ("..." if start > 0 else "") + flat[start:end] + ("..." if end < len(flat) else "")
