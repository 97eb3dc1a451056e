"""What a background BM25 compaction costs the searches that run meanwhile, on a big vault.

    .venv/bin/python bench/bm25_compaction.py VAULT [--edits 50] [--queries 200]

Parses VAULT with the scanner's own code, builds the retriever's index in-process (BM25 only),
edits `--edits` notes (each applied again with one more line: their old chunks stay deleted
documents), then runs the same BM25 queries three times, in turn: idle, while a compaction
(`NoteIndex.compact_bm25`) runs in another thread (repeated until the queries are done), and
idle again. Prints each pass's p50 / p99, the compaction's duration and the process's peak RSS
before and after it.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import threading
import time
from pathlib import Path

from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index, Scope
from k0maru_retriever._index import NoteIndex
from k0maru_retriever._state import IndexState
from k0maru_retriever._vectors import EdgeVectorStore
from k0maru_scanner._manifest import Manifest
from k0maru_scanner._scanner import IgnoreRules, IncrementalScanner
from k0maru_scanner.server import parse_document


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(index: NoteIndex, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        started = time.perf_counter()
        index.bm25.search(q, 10, Scope())
        out.append((time.perf_counter() - started) * 1000)
    return out


def summary(ms: list[float]) -> str:
    cuts = statistics.quantiles(ms, n=100)
    return f"p50 {cuts[49]:.2f} ms, p99 {cuts[98]:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    scanner = IncrementalScanner(args.vault, Manifest(tmp / "m.sqlite", 1_000_000), IgnoreRules(), 2 << 20)
    scanner.scan()
    docs = [
        d for d in (parse_document(scanner, p) for p, r in sorted(scanner.manifest.files.items()) if r.indexed) if d
    ]
    index = NoteIndex(Bm25Index(tmp / "bm25", BM25Analyzer()), EdgeVectorStore(tmp / "v", 8), IndexState(tmp / "s"), 8)
    for doc in docs:
        index.apply(doc, want_jobs=False, link_later=True)
    index.commit(1)
    step = max(1, len(docs) // args.edits)
    for doc in docs[::step][: args.edits]:
        doc.chunks[-1].text += "\nan edited line"
        index.apply(doc, want_jobs=False)
    index.commit(2)
    chunks = index.bm25.count()
    print(f"{len(docs)} notes, {chunks} chunks, {index.bm25.replaced()} deleted after {args.edits} edits", flush=True)
    # queries: each edited note's title and a few of the vault's other titles
    queries = [" ".join(d.title.split()[:5]) or d.path for d in docs[:: max(1, len(docs) // args.queries)]]
    queries = queries[: args.queries]
    timed(index, queries)  # warm

    before = timed(index, queries)
    rss_before = peak_rss_mb()
    durations: list[float] = []
    running = threading.Event()

    def compact() -> None:
        running.set()
        started = time.perf_counter()
        index.compact_bm25(threading.Event())
        durations.append(time.perf_counter() - started)
        running.clear()

    during: list[float] = []
    thread = threading.Thread(target=compact)
    thread.start()
    running.wait()
    while thread.is_alive():  # only queries that ran while the compaction did
        during.extend(timed(index, queries[:10]))
    thread.join()
    after = timed(index, queries)
    print(f"idle before: {summary(before)}")
    print(f"during the compaction ({len(during)} queries): {summary(during)}")
    print(f"idle after:  {summary(after)}")
    print(
        f"compaction: {durations[0]:.2f} s ({chunks / durations[0]:,.0f} chunks/s), {index.bm25.replaced()} deleted left;"
        f" peak RSS {rss_before:.0f} MB before, {peak_rss_mb():.0f} MB after"
    )
    index.close()


if __name__ == "__main__":
    main()
