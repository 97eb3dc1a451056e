"""What deleted documents cost BM25: a 4,000-note sample built (as `bm25_equal.py` builds it),
then a share of its notes applied again, each edit leaving its old chunks as deleted documents
in tantivy's statistics; top-10 lists of the same queries compared with the fresh build, before
and after a compaction (`NoteIndex.compact_bm25`, what the retriever runs in the background).

    .venv/bin/python bench/bm25_deleted.py [--workdir DIR]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from pathlib import Path

from bm25_equal import BEIR, sample_vault

from k0maru.v1 import common_pb2
from k0maru_cli._eval import load_jsonl
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index, Scope
from k0maru_retriever._index import NoteIndex
from k0maru_retriever._state import IndexState
from k0maru_retriever._vectors import EdgeVectorStore
from k0maru_scanner._manifest import Manifest
from k0maru_scanner._scanner import IgnoreRules, IncrementalScanner
from k0maru_scanner.server import parse_document

SETS = [("scifact", 300), ("tagged_android", 200), ("cosqa_dev", 200)]
SHARES = (0.005, 0.02, 0.05)


def build(root: Path, docs: list[common_pb2.Document], again: int) -> NoteIndex:
    """Every note applied and committed, then the first `again` applied once more and committed."""
    index = NoteIndex(Bm25Index(root / "b", BM25Analyzer()), EdgeVectorStore(root / "v", 8), IndexState(root / "s"), 8)
    for doc in docs:
        index.apply(doc, want_jobs=False)
    index.commit(1)
    for doc in docs[:again]:  # the same text applied again: an edit that changed nothing
        index.apply(doc, want_jobs=False)
    index.commit(2)
    return index


def compare(expected: list[list[tuple[str, float]]], got: list[list[tuple[str, float]]]) -> tuple[int, float]:
    """(top-10 lists identical, largest relative score difference of a chunk at the same place)."""
    same = sum([c for c, _ in a] == [c for c, _ in b] for a, b in zip(expected, got, strict=True))
    moved = max(
        (
            abs(x[1] - y[1]) / y[1]
            for a, b in zip(got, expected, strict=True)
            for x, y in zip(a, b, strict=False)
            if x[0] == y[0] and y[1]
        ),
        default=0.0,
    )
    return same, moved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "k0-bm25-equal")
    args = parser.parse_args()
    for name, n_queries in SETS:
        vault = sample_vault(name, args.workdir)
        queries = [q["text"] for q in load_jsonl(BEIR / name / "queries.jsonl")][-n_queries:]
        tmp = Path(tempfile.mkdtemp())
        try:
            scanner = IncrementalScanner(vault, Manifest(tmp / "m.sqlite", 1_000_000), IgnoreRules(), 2 << 20)
            scanner.scan()
            paths = sorted(p for p, r in scanner.manifest.files.items() if r.indexed)
            docs = [d for d in (parse_document(scanner, p) for p in paths) if d is not None]

            fresh = build(tmp / "fresh", docs, 0)
            expected = [fresh.bm25.search(q, 10, Scope()) for q in queries]
            for share in SHARES:
                index = build(tmp / f"again-{share}", docs, int(len(docs) * share))
                same, moved = compare(expected, [index.bm25.search(q, 10, Scope()) for q in queries])
                deleted, live = index.bm25.replaced(), index.bm25.count()
                started = time.perf_counter()
                assert index.compact_bm25(threading.Event())
                took = time.perf_counter() - started
                same_c, moved_c = compare(expected, [index.bm25.search(q, 10, Scope()) for q in queries])
                print(
                    f"{name}: {int(len(docs) * share)} notes applied again ({deleted} deleted of {live} chunks,"
                    f" {deleted / live:.1%}): {same}/{len(queries)} top-10 lists unchanged, scores moved by up to {moved:.2%};"
                    f" after the compaction ({took:.2f} s, {index.bm25.replaced()} deleted): {same_c}/{len(queries)},"
                    f" scores moved by up to {moved_c:.2%}",
                    flush=True,
                )
                index.close()
            fresh.close()
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
