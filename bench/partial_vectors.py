"""Hybrid search while a vault is still being embedded, measured offline (development sets only).

Run (dumps from `bench/fusion_sweep.py dump`, full vectors):
  .venv/bin/python bench/partial_vectors.py DUMP.jsonl --beir DATASET      (a BEIR set as `k0maru eval` writes it)
  .venv/bin/python bench/partial_vectors.py DUMP.jsonl --vault VAULT       (a vault's own known items)

During a first build the vector channel searches only the chunks embedded so far. Notes are
embedded in the order the index took them (path order on a first build), so the embedded part
is not a fair sample: on the dendron vault the changelogs come first. This simulates a coverage c
by keeping, in each query's vector ranking, only the first c of the vault's notes (in path order,
and in a seeded random order as the unbiased case), and fuses with each candidate rule.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path

from fusion_methods import POOL, set_model, top
from fusion_sweep import evaluate, load

from k0maru_cli._eval import load_jsonl, note_name
from k0maru_retriever._fusion import confident_weights, convex_fuse, minmax
from k0maru_retriever._search import FusionParams

Ranking = list[tuple[str, float]]
COVERAGES = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)


def whole(b: Ranking, v: Ranking, embedded: set[str]) -> list[str]:
    """The retriever's fusion before this bench: the partial vector channel as though it were whole."""
    p = FusionParams()
    b, v = b[:POOL], v[:POOL]
    wb, wv = confident_weights(b, v, p.w_bm25, p.w_vector, p.adaptive, GAP["scale"])
    return top([h.path for h in convex_fuse(b, v, w_bm25=wb, w_vector=wv, boost=0.0)])


def scaled(b: Ranking, v: Ranking, embedded: set[str], coverage: float) -> list[str]:
    """The vector channel's weight times the share of the vault embedded."""
    p = FusionParams()
    b, v = b[:POOL], v[:POOL]
    wb, wv = confident_weights(b, v, p.w_bm25, p.w_vector, p.adaptive, GAP["scale"])
    return top([h.path for h in convex_fuse(b, v, w_bm25=wb, w_vector=wv * coverage, boost=0.0)])


def unknown_as_bm25(  # "now: both" is what the retriever does (HybridSearcher._unseen)
    b: Ranking, v: Ranking, embedded: set[str], coverage: float = 1.0, only_new: bool = False
) -> list[str]:
    """A note the vector channel cannot see yet (no vectors) is given, in that channel, what BM25
    gives it: no evidence either way, instead of the vector channel's 0. `coverage` < 1: the
    vector channel's weight times it (`only_new`: for the notes BM25 did not find only)."""
    p = FusionParams()
    b, v = b[:POOL], v[:POOL]
    wb, wv = confident_weights(b, v, p.w_bm25, p.w_vector, p.adaptive, GAP["scale"])
    if not only_new:
        wv *= coverage
    if not v:
        return top([d for d, _ in b])
    if not b:
        return top([d for d, _ in v])
    nb, nv = minmax(b), minmax(v)
    scores: dict[str, float] = {}
    for d in {*nb, *nv}:
        from_bm25 = nb.get(d, 0.0)
        from_vector = nv.get(d, 0.0) if d in embedded else from_bm25
        scores[d] = wb * from_bm25 + wv * from_vector * (coverage if only_new and d not in nb else 1.0)
    return top(sorted(scores, key=lambda d: (-scores[d], d)))


GAP = {"scale": FusionParams().gap_scale}


def notes_of(args: argparse.Namespace) -> list[str]:
    """The vault's notes as the dumps name them, in the order a first build embeds them."""
    if args.beir:
        ids = {note_name(doc["_id"]): doc["_id"] for doc in load_jsonl(args.beir / "corpus.jsonl")}
        return [ids[name] for name in sorted(ids)]
    return sorted(p.relative_to(args.vault).as_posix() for p in args.vault.rglob("*.md"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dump", type=Path)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--beir", type=Path)
    where.add_argument("--vault", type=Path)
    args = parser.parse_args()
    rows = load(args.dump)
    set_model(str(rows[0].get("model", "")) if rows else "")
    from fusion_methods import MODEL_SCALE

    GAP["scale"] = MODEL_SCALE["gap"]
    notes = notes_of(args)
    shuffled = list(notes)
    random.Random(7).shuffle(shuffled)
    methods: dict[str, Callable[[Ranking, Ranking, set[str], float], list[str]]] = {
        "bm25": lambda b, v, e, c: top([d for d, _ in b]),
        "before: as if whole": lambda b, v, e, c: whole(b, v, e),
        "weight x coverage": scaled,
        "unseen as bm25": lambda b, v, e, c: unknown_as_bm25(b, v, e),
        "now: both": lambda b, v, e, c: unknown_as_bm25(b, v, e, c),
        "unseen, new x coverage": lambda b, v, e, c: unknown_as_bm25(b, v, e, c, only_new=True),
        "unseen, weight x coverage^2": lambda b, v, e, c: unknown_as_bm25(b, v, e, c * c),
    }
    for order_name, order in (("path order", notes), ("random order", shuffled)):
        print(f"{args.dump.stem}, {order_name}: nDCG@10 by the share of notes embedded")
        print("method".ljust(26) + "".join(f"{c:>8.2f}" for c in COVERAGES))
        for name, method in methods.items():
            cells = []
            for coverage in COVERAGES:
                embedded = set(order[: round(coverage * len(order))])

                def fused(b: Ranking, v: Ranking) -> list[str]:
                    return method(b, [x for x in v if x[0] in embedded], embedded, coverage)  # noqa: B023

                cells.append(f"{evaluate(rows, fused)[0]:8.4f}")
            print(name.ljust(26) + "".join(cells))
        print(json.dumps({"bench": "partial_vectors", "dump": str(args.dump), "order": order_name}))


if __name__ == "__main__":
    main()
