"""What a date scope costs each store when it is pushed into it as a set of notes (`NoteDays`).

    .venv/bin/python bench/date_scope.py [--notes 10000] [--dim 384] [--runs 15]

A synthetic vault of one-chunk notes (30 random words; random unit vectors, searched brute force
by Qdrant Edge) dated over 256 days, one per note in turn; ranges that keep 1/256 … 255/256 of it.
Per range: whether the range is handed to the stores as the notes it keeps (`PUSH_MAX`), and the median of `runs` calls of `NoteDays.scope`, a BM25 search (120 chunks) and a
vector search (120 chunks), against the same searches with no scope.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

import numpy as np
from _common import emit

from k0maru.v1 import common_pb2
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index, Scope
from k0maru_retriever._days import PUSH_MAX, NoteDays
from k0maru_retriever._vectors import EdgeVectorStore, VectorPoint


def median_ms(call: Callable[[], object], runs: int) -> float:
    took = []
    for _ in range(runs):
        began = time.perf_counter()
        call()
        took.append((time.perf_counter() - began) * 1000)
    return statistics.median(took)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(5000)]
    paths = [f"notes/{i:06}.md" for i in range(args.notes)]
    with tempfile.TemporaryDirectory() as tmp:
        bm25 = Bm25Index(Path(tmp) / "bm25", BM25Analyzer())
        for path in paths:
            bm25.add_note(path, "notes", [], [(f"{path}#0", " ".join(rng.choice(words, 30)))])
        bm25.commit()
        vectors = EdgeVectorStore(Path(tmp) / "edge", args.dim)
        for start in range(0, args.notes, 2000):
            block = rng.standard_normal((min(2000, args.notes - start), args.dim)).astype(np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            vectors.upsert(
                [VectorPoint(f"{p}#0", "h", p, "notes", [], v) for p, v in zip(paths[start:], block, strict=False)]
            )
        first = date(2026, 1, 1)
        day = [(first + timedelta(days=d)).isoformat() for d in range(256)]
        days = NoteDays(common_pb2.Document(path=p, date=day[i % 256]) for i, p in enumerate(paths))
        query = rng.standard_normal(args.dim).astype(np.float32)
        query /= np.linalg.norm(query)
        for kept in (0, 1, 8, 128, 248, 255):  # of 256 days
            asked = Scope(since=day[256 - kept]) if kept else Scope()
            scope = days.scope(asked)
            pushed = f"keep {len(scope.keep_paths)}" if scope.keep_paths is not None else "none"
            emit(
                "date_scope",
                notes=args.notes,
                range_keeps=f"{kept}/256" if kept else "no range",
                pushed=pushed,
                push_max=PUSH_MAX,
                scope_ms=round(median_ms(lambda a=asked: days.scope(a), args.runs), 3),
                bm25_ms=round(median_ms(lambda s=scope: bm25.search("w1 w2 w3", 120, s), args.runs), 3),
                vector_ms=round(median_ms(lambda s=scope: vectors.search(query, 120, s), args.runs), 3),
            )
        vectors.close()
        bm25.close()


if __name__ == "__main__":
    main()
