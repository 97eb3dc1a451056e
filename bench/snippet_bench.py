"""Snippet cost: µs per snippet on SciFact's top-10 BM25 hits for 300 queries.

Run: .venv/bin/python bench/snippet_bench.py --scifact-workdir DIR   (a `k0maru eval beir` workdir)
Each query's needles are made first (a retriever keeps them for its last 512 queries), then every
(hit, query) pair is snipped twice; the second pass is printed.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _common import SHARED, emit

from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index, Scope
from k0maru_retriever._search import RECENT_QUERIES
from k0maru_retriever._snippets import Snippets


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact-workdir", type=Path, required=True)
    args = parser.parse_args()
    data = SHARED / "data" / "beir" / "scifact"
    texts = {}
    for line in (data / "corpus.jsonl").open():
        doc = json.loads(line)
        texts[doc["_id"]] = f"{doc['title']}\n{doc['text']}"
    queries = [json.loads(line)["text"] for line in (data / "queries.jsonl").open()][:300]
    index = Bm25Index(args.scifact_workdir / "data" / "retriever" / "bm25", BM25Analyzer())
    pairs = [
        (texts[cid.split("#")[0].removesuffix(".md")][:1500], q)
        for q in queries
        for cid, _score in index.search(q, 10, Scope())
    ]
    snippets = Snippets(BM25Analyzer(), RECENT_QUERIES)
    began = time.perf_counter()
    for q in queries:
        snippets.needles(q)
    needles_us = (time.perf_counter() - began) / len(queries) * 1e6
    for _ in range(2):
        began = time.perf_counter()
        for body, q in pairs:
            snippets(body, q)
        per_snippet = (time.perf_counter() - began) / len(pairs) * 1e6
    emit("snippet", pairs=len(pairs), us_per_snippet=round(per_snippet, 1), us_per_new_query=round(needles_us, 1))


if __name__ == "__main__":
    main()
