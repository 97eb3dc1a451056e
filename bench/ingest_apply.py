"""The retriever's cold apply path in-process: every note of a vault parsed by the scanner's
`parse_document` into GetDocuments replies (200 notes each, serialised once and cached), then
each reply deserialised and applied with `NoteIndex.apply` and one commit, as the follower's
reconcile does. Prints wall and CPU time (process, and per live thread: tantivy's indexing
threads end at the commit, so process − main thread is mostly tantivy).

    nice -n 10 .venv/bin/python bench/ingest_apply.py VAULT WORKDIR [--reparse]

Run it with two checkouts' venvs alternately (A/B): `apply` takes `link_later` where it has it.
"""

from __future__ import annotations

import inspect
import os
import pickle
import shutil
import sys
import time
from pathlib import Path

from k0maru.v1 import scanner_pb2
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index
from k0maru_retriever._index import NoteIndex
from k0maru_retriever._state import IndexState
from k0maru_retriever._vectors import EdgeVectorStore
from k0maru_scanner._manifest import Manifest
from k0maru_scanner._scanner import IgnoreRules, IncrementalScanner
from k0maru_scanner.server import parse_document

LATER = {"link_later": True} if "link_later" in inspect.signature(NoteIndex.apply).parameters else {}


def replies(vault: Path, work: Path, reparse: bool) -> list[bytes]:
    cache = work / "replies.pickle"
    if cache.exists() and not reparse:
        loaded: list[bytes] = pickle.loads(cache.read_bytes())
        return loaded
    shutil.rmtree(work / "manifest", ignore_errors=True)
    (work / "manifest").mkdir(parents=True)
    scanner = IncrementalScanner(vault, Manifest(work / "manifest" / "m.sqlite", 1_000_000), IgnoreRules(), 2 << 20)
    scanner.scan()
    paths = sorted(p for p, r in scanner.manifest.files.items() if r.indexed)
    cpu, wall = time.process_time(), time.perf_counter()
    out = []
    for start in range(0, len(paths), 200):
        reply = scanner_pb2.GetDocumentsResponse()
        for path in paths[start : start + 200]:
            doc = parse_document(scanner, path)
            if doc is not None:
                reply.documents.append(doc)
        out.append(reply.SerializeToString())
    print(f"parse: {len(paths)} notes, {time.perf_counter() - wall:.2f} s wall, {time.process_time() - cpu:.2f} s CPU")
    cache.write_bytes(pickle.dumps(out))
    return out


def main() -> None:
    vault, work = Path(sys.argv[1]), Path(sys.argv[2])
    raw = replies(vault, work, "--reparse" in sys.argv)
    root = work / "index"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    index = NoteIndex(
        Bm25Index(root / "bm25", BM25Analyzer()), EdgeVectorStore(root / "vectors", 8), IndexState(root / "s.sqlite"), 8
    )
    cpu, wall, thread = time.process_time(), time.perf_counter(), time.thread_time()
    notes = 0
    for blob in raw:
        for doc in scanner_pb2.GetDocumentsResponse.FromString(blob).documents:
            index.apply(doc, want_jobs=False, **LATER)
            notes += 1
    applied = time.perf_counter()
    index.commit(1)
    done = time.perf_counter()
    main_cpu = time.thread_time() - thread
    print(
        f"apply: {notes} notes, {index.bm25.count()} chunks: {done - wall:.2f} s wall (commit {done - applied:.2f} s); "
        f"CPU {time.process_time() - cpu:.2f} s, of it the applying thread {main_cpu:.2f} s; load {os.getloadavg()[0]:.2f}"
    )
    index.close()


if __name__ == "__main__":
    main()
