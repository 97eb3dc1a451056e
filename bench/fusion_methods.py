"""Candidate fusion rules for bench/fusion_sweep.py: (bm25 ranking, vector ranking) → paths."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from k0maru_retriever._fusion import confident_weights, convex_fuse, model_gap_scale, rrf_fuse
from k0maru_retriever._graph import LinkGraph
from k0maru_retriever._search import FusionParams

Ranking = list[tuple[str, float]]
POOL = 30  # the search's pool at limit 10 (max(3 * limit, MIN_POOL))
K = 20  # the sweep leaves out notes graded -1 (known-item sources), then scores the top 10


def top(ranked: list[str]) -> list[str]:
    return ranked[:K]


def rrf(k: int = 60, wb: float = 0.5) -> Callable[[Ranking, Ranking], list[str]]:
    def run(b: Ranking, v: Ranking) -> list[str]:
        return top([h.path for h in rrf_fuse(b[:POOL], v[:POOL], k=k, w_bm25=wb, w_vector=1 - wb, boost=0.0)])

    return run


MODEL_SCALE = {"gap": FusionParams().gap_scale}  # the dumped set's model's own scale (set_model)


def set_model(model_id: str) -> None:
    """Methods without a scale of their own use this model's (a dump names its model; older ones don't)."""
    MODEL_SCALE["gap"] = model_gap_scale(model_id) if model_id else FusionParams().gap_scale


def convex(wb: float, power: float = 0.0, scale: float = 0.0) -> Callable[[Ranking, Ranking], list[str]]:
    """The shipped convex fusion (k0maru_retriever._fusion), fixed or per-query weights; scale 0: the model's."""

    def run(b: Ranking, v: Ranking) -> list[str]:
        b, v = b[:POOL], v[:POOL]
        w1, w2 = confident_weights(b, v, wb, 1 - wb, power, scale or MODEL_SCALE["gap"])
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
    **{f"adaptive convex {w} p{p}": convex(w, p) for w in (0.4, 0.5, 0.6) for p in (1, 1.25, 2)},
    **{f"adaptive convex 0.5 p1.25 s×{f}": convex(0.5, 1.25, f * FusionParams().gap_scale) for f in (0.9, 1.1)},
    # sixteenth wave: BM25 with the name match (eighth wave) and file names as names, weights again
    **{f"adaptive convex {w} p{p}": convex(w, p) for w in (0.55, 0.6, 0.65) for p in (1, 1.25, 1.5, 2, 2.5, 3)},
}
METHODS["default"] = convex(0.5, FusionParams().adaptive)


def vault_graph(vault: Path) -> LinkGraph:
    """The retriever's link graph for a vault, from the scanner's own parser."""
    from k0maru_scanner._markdown import parse_note

    graph = LinkGraph()
    for file in sorted(vault.rglob("*.md")):
        rel = file.relative_to(vault).as_posix()
        note = parse_note(rel, file.read_text(encoding="utf-8", errors="replace"))
        graph.set_note(rel, [lk.target for lk in note.links if lk.target], [note.title, *note.aliases])
    return graph


def boosted(graph: LinkGraph, boost: float, method: str = "convex") -> Callable[[Ranking, Ranking], list[str]]:
    def run(b: Ranking, v: Ranking) -> list[str]:
        b, v = b[:POOL], v[:POOL]
        w1, w2 = confident_weights(b, v, 0.5, 0.5, FusionParams().adaptive, MODEL_SCALE["gap"])
        if method == "rrf":
            hits = rrf_fuse(b, v, boost=boost, connected=graph.connected_among)
        else:
            hits = convex_fuse(b, v, w_bm25=w1, w_vector=w2, boost=boost, connected=graph.connected_among)
        return top([h.path for h in hits])

    return run


def neighbour_boost(graph: LinkGraph, boost: float) -> Callable[[Ranking, Ranking], list[str]]:
    """Experiment: a note gains boost × the best normalised fused score among its linked candidates."""

    def run(b: Ranking, v: Ranking) -> list[str]:
        b, v = b[:POOL], v[:POOL]
        w1, w2 = confident_weights(b, v, 0.5, 0.5, 2.0)
        hits = convex_fuse(b, v, w_bm25=w1, w_vector=w2, boost=0.0)
        best = hits[0].score or 1.0
        score = {h.path: h.score / best for h in hits}
        pool = set(score)
        final = {}
        for p, s in score.items():
            links = (graph.outgoing(p) | graph.backlinks(p)) & pool
            links |= {q for q in pool if q != p and graph.connected_among({p, q})} if not links else set()
            links.discard(p)
            final[p] = s + boost * max((score[q] for q in links), default=0.0) * (1 - s)
        return top(sorted(final, key=lambda p: -final[p]))

    return run
