"""Candidate fusion rules for bench/fusion_sweep.py: (bm25 ranking, vector ranking) → paths."""

from __future__ import annotations

from collections.abc import Callable

from k0maru_retriever._fusion import confident_weights, convex_fuse, rrf_fuse

Ranking = list[tuple[str, float]]
POOL = 30  # max(3 * limit, 20) at limit 10
K = 10


def top(ranked: list[str]) -> list[str]:
    return ranked[:K]


def rrf(k: int = 60, wb: float = 0.5) -> Callable[[Ranking, Ranking], list[str]]:
    def run(b: Ranking, v: Ranking) -> list[str]:
        return top([h.path for h in rrf_fuse(b[:POOL], v[:POOL], k=k, w_bm25=wb, w_vector=1 - wb, boost=0.0)])

    return run


def convex(wb: float, power: float = 0.0) -> Callable[[Ranking, Ranking], list[str]]:
    """The shipped convex fusion (k0maru_retriever._fusion), fixed or per-query weights."""

    def run(b: Ranking, v: Ranking) -> list[str]:
        b, v = b[:POOL], v[:POOL]
        w1, w2 = confident_weights(b, v, wb, 1 - wb, power)
        return top([h.path for h in convex_fuse(b, v, w_bm25=w1, w_vector=w2, boost=0.0)])

    return run


def adaptive_rrf(k: int = 60, power: float = 1.0) -> Callable[[Ranking, Ranking], list[str]]:
    def run(b: Ranking, v: Ranking) -> list[str]:
        b, v = b[:POOL], v[:POOL]
        w1, w2 = confident_weights(b, v, 0.5, 0.5, power)
        return top([h.path for h in rrf_fuse(b, v, k=k, w_bm25=w1, w_vector=w2, boost=0.0)])

    return run


METHODS: dict[str, Callable[[Ranking, Ranking], list[str]]] = {
    "bm25": lambda b, v: top([p for p, _ in b]),
    "vector": lambda b, v: top([p for p, _ in v]),
    "rrf k60 0.5": rrf(),
    "rrf k20 0.5": rrf(20),
    "rrf k60 0.7": rrf(wb=0.7),
    "rrf k60 0.3": rrf(wb=0.3),
    **{f"convex {w}": convex(w) for w in (0.3, 0.4, 0.5, 0.6, 0.7)},
    "adaptive rrf p1": adaptive_rrf(),
    "adaptive rrf p2": adaptive_rrf(power=2),
    **{f"adaptive convex {w} p{p}": convex(w, p) for w in (0.5, 0.6) for p in (1, 2, 3)},
}
