"""What marking superseded notes costs a search, in-process (`_succession.with_successors`).

Run: .venv/bin/python bench/succession_cost.py [--notes 20000] [--share 0.1] [--hits 10]

A synthetic vault of `--notes` notes in a link graph (each linking 3 others), of which a share
(`--share`) replaces an earlier one with a `supersedes` link, half of them through the old note's
`superseded_by` instead; then µs per call of `with_successors` on `--hits` hits drawn at random,
against the same call on a vault where no note holds such a link (what every vault without them
pays). Printed, never asserted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from _common import emit

from k0maru.v1 import common_pb2
from k0maru_retriever._fusion import FusedHit
from k0maru_retriever._graph import LinkGraph, link_target
from k0maru_retriever._succession import Succession, with_successors


def vault(n: int, share: float, rng: random.Random) -> dict[str, common_pb2.Document]:
    docs = {}
    for i in range(n):
        links = [common_pb2.Link(target=f"n{rng.randrange(n)}") for _ in range(3)]
        if i and rng.random() < share:
            earlier = rng.randrange(i)
            if rng.random() < 0.5:
                links.append(common_pb2.Link(target=f"n{earlier}", property="supersedes"))
            else:  # said by the old note
                docs[f"n{earlier}.md"].links.append(common_pb2.Link(target=f"n{i}", property="superseded_by"))
        docs[f"n{i}.md"] = common_pb2.Document(path=f"n{i}.md", links=links)
    return docs


def cost(docs: dict[str, common_pb2.Document], hits: int, rng: random.Random, calls: int = 2000) -> tuple[float, int]:
    graph = LinkGraph()
    graph.load({p: [link_target(lk) for lk in d.links] for p, d in docs.items()}, {p: [] for p in docs})
    succession = Succession(docs.values())
    paths = list(docs)
    marked = 0
    times = []
    for _ in range(calls):
        found = [FusedHit(p, 1.0) for p in rng.sample(paths, hits)]
        t0 = time.perf_counter()
        _ranked, successors = with_successors(found, lambda paths: succession.successors(paths, docs, graph))
        times.append((time.perf_counter() - t0) * 1e6)
        marked += len(successors)
    return statistics.median(times), marked


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=20_000)
    parser.add_argument("--share", type=float, default=0.1)
    parser.add_argument("--hits", type=int, default=10)
    args = parser.parse_args()
    rng = random.Random(7)
    with_links, marked = cost(vault(args.notes, args.share, rng), args.hits, rng)
    without, _ = cost(vault(args.notes, 0.0, rng), args.hits, rng)
    emit(
        "succession",
        notes=args.notes,
        share_replacing=args.share,
        hits=args.hits,
        us_per_search=round(with_links, 1),
        us_per_search_no_such_links=round(without, 2),
        hits_marked_per_search=round(marked / 2000, 2),
    )


if __name__ == "__main__":
    main()
