"""What listing a scope's notes costs (a search with no query: `HybridSearcher._listed`), on
synthetic documents: N notes in 100 folders, 50 tags (and one tag on 4 notes), 336 days. Prints
the median of 5 per scope, in ms, and what building the scope candidates took.

    .venv/bin/python bench/listing_cost.py [--notes 100000] [--limit 10]
"""

from __future__ import annotations

import argparse
import statistics
import time
import types

from k0maru.v1 import common_pb2
from k0maru_retriever._bm25 import Scope
from k0maru_retriever._days import NoteDays
from k0maru_retriever._listing import ScopeCandidates
from k0maru_retriever._search import HybridSearcher


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--notes", type=int, default=100_000)
    ap.add_argument("--limit", type=int, default=10)
    args = ap.parse_args()
    n = args.notes
    docs = {}
    for i in range(n):
        path = f"f{i % 100}/n{i}.md"
        docs[path] = common_pb2.Document(
            path=path,
            title=f"N{i}",
            diary=f"f{i % 100}",
            tags=[f"t{i % 50}"] + (["rare"] if i % (n // 3) == 0 else []),
            date=f"2026-{1 + i % 12:02}-{1 + i % 28:02}",
            chunks=[common_pb2.Chunk(index=0, text=f"note {i} text " * 20, start_line=1, end_line=3)],
        )
    days = NoteDays(docs.values())
    began = time.perf_counter()
    candidates = ScopeCandidates(docs.values())
    print(f"{n} notes; scope candidates built in {(time.perf_counter() - began) * 1000:.0f} ms")
    searcher = HybridSearcher.__new__(HybridSearcher)  # only what _listed reads
    searcher._index = types.SimpleNamespace(  # type: ignore[assignment]
        state=types.SimpleNamespace(docs=docs, days=days, scope_candidates=candidates)
    )
    scopes = {
        f"tag t7 ({n // 50} notes)": Scope(tags=(("t7",),)),
        f"folder f3/ ({n // 100})": Scope(path_prefixes=("f3/",)),
        "tag rare (4 notes)": Scope(tags=(("rare",),)),
        "a tag no note carries": Scope(tags=(("zz",),)),
        "a folder that holds no note": Scope(path_prefixes=("zz/",)),
        "until 2026-01-03": days.scope(Scope(until="2026-01-03")),
        "since 2026-12-01": days.scope(Scope(since="2026-12-01")),
        "since 2026-06-01": days.scope(Scope(since="2026-06-01")),
    }
    for label, scope in scopes.items():
        took = []
        for _ in range(5):
            began = time.perf_counter()
            hits = searcher._listed(scope, args.limit)
            took.append((time.perf_counter() - began) * 1000)
        first = f"{hits[0].path} {hits[0].date}" if hits else "-"
        print(f"{label:32} {statistics.median(took):8.2f} ms  {len(hits)} listed, first {first}")


if __name__ == "__main__":
    main()
