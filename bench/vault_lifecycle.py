"""A big vault's whole first run through the stack: `up`, BM25, every vector, then searches; memory throughout.

Run: nice -n 10 .venv/bin/python bench/vault_lifecycle.py VAULT DATA_DIR [--embedders 2] [--queries 300]
  (VAULT: e.g. the held-out vault's shape from `bench/linked_vault.py OUT --sections 3`; DATA_DIR
  is emptied first)

Issue 15 measured this on a 6,571-note vault (48,001 chunks) with two embedders: all healthy
after 44.8 s, every vector after ~23.5 min, the job queue's peak 71,376 pending jobs, hybrid p50
24 ms, stack RSS 2,263 MB while embedding and 2,515 MB at the end. This script measures the same:
  - the launcher in this process (`k0maru up` with `--embedders`); all healthy, BM25 holding every
    note, the first and the last vector (seconds from the start);
  - every 2 s: the retriever's IndexStatus (vectors, jobs pending in the stream) and the RSS / PSS of
    every process of the stack (peaks, and each process's peak RSS);
  - once every chunk has its vector and the HNSW build (if any) is swapped in: hybrid and BM25
    searches through gRPC, one per note title of `--queries` notes spread over the vault (fresh
    query texts: every hybrid search embeds its query), p50 / p99; then the memory of the idle stack.
Prints JSON lines; never asserts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from pathlib import Path

from _common import emit
from stack_rss import memory_mb, name_of, tree

from k0maru.v1 import retriever_pb2
from k0maru_cli import Launcher
from k0maru_cli._eval import percentile

POLL_S = 2.0


def stack_memory() -> tuple[float, float, dict[str, float]]:
    """(RSS, PSS, each process's RSS) of the stack, in MB: this process's descendants (the launcher
    runs here, and this script's own memory is left out); processes gone meanwhile are skipped."""
    rss = pss = 0.0
    each: dict[str, float] = {}
    me = os.getpid()
    for pid in tree(me):
        if pid == me:
            continue
        try:
            m = memory_mb(pid)
            name = name_of(pid)
        except (OSError, UnicodeDecodeError):
            continue
        rss += m["rss"]
        pss += m["pss"]
        each[f"{name} {pid}"] = m["rss"]
    return rss, pss, each


def titles(vault: Path, n: int) -> list[str]:
    """The first heading (or the file name) of `n` notes spread evenly over the vault."""
    notes = sorted(vault.rglob("*.md"))
    step = max(1, len(notes) // n)
    out = []
    for path in notes[::step][:n]:
        text = path.read_text(encoding="utf-8", errors="replace")
        heading = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("# ")), "")
        out.append(heading or path.stem.replace("-", " "))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--embedders", type=int, default=2)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--timeout-min", type=float, default=90.0, help="give up waiting for the vectors after this")
    args = parser.parse_args()
    shutil.rmtree(args.data_dir, ignore_errors=True)
    notes = sum(1 for _ in args.vault.rglob("*.md"))
    launcher = Launcher(args.vault, args.data_dir, embedders=args.embedders, http_port=0)
    t0 = time.perf_counter()
    state = launcher.start()
    healthy = time.perf_counter() - t0
    client = state.client()
    marks: dict[str, float] = {"healthy_s": healthy}
    peak_rss = peak_pss = 0.0
    peak_each: dict[str, float] = {}
    peak_pending = 0
    try:
        while True:
            status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
            now = time.perf_counter() - t0
            rss, pss, each = stack_memory()
            peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
            for name, mb in each.items():
                peak_each[name] = max(peak_each.get(name, 0.0), mb)
            peak_pending = max(peak_pending, status.embed_queue_pending)
            if "bm25_searchable_s" not in marks and status.documents >= notes:
                marks["bm25_searchable_s"] = now
            if "first_vector_s" not in marks and status.chunks_with_vectors:
                marks["first_vector_s"] = now
            done = status.chunks and status.chunks_with_vectors == status.chunks
            if done and "all_vectors_s" not in marks:
                marks["all_vectors_s"] = now
                emit(
                    "vault_lifecycle_embedded",
                    notes=notes,
                    chunks=status.chunks,
                    **{k: round(v, 1) for k, v in marks.items()},
                    chunks_per_s=round(status.chunks / now, 1),
                    peak_jobs_pending=peak_pending,
                    peak_rss_mb=round(peak_rss),
                    peak_pss_mb=round(peak_pss),
                    peak_rss_by_process={k: round(v) for k, v in sorted(peak_each.items())},
                )
            if done and not status.index_building:
                break
            if now > args.timeout_min * 60:
                emit(
                    "vault_lifecycle_gave_up",
                    after_s=round(now),
                    chunks=status.chunks,
                    vectors=status.chunks_with_vectors,
                )
                return
            time.sleep(POLL_S)
        queries = titles(args.vault, args.queries)
        latencies: dict[str, list[float]] = {"bm25": [], "hybrid": []}
        for mode, key in ((retriever_pb2.SEARCH_MODE_BM25, "bm25"), (retriever_pb2.SEARCH_MODE_HYBRID, "hybrid")):
            for q in queries:
                started = time.perf_counter()
                client.call(client.retriever.Search, retriever_pb2.SearchRequest(query=q, limit=10, mode=mode))
                latencies[key].append((time.perf_counter() - started) * 1000)
        time.sleep(5)
        rss, pss, each = stack_memory()
        emit(
            "vault_lifecycle_searched",
            queries=len(queries),
            vectors_indexed=status.vectors_indexed,
            **{
                f"{key}_{name}_ms": round(fn(values), 1)
                for key, values in latencies.items()
                for name, fn in (("p50", statistics.median), ("p99", lambda v: percentile(v, 0.99)))
            },
            idle_rss_mb=round(rss),
            idle_pss_mb=round(pss),
            idle_rss_by_process={k: round(v) for k, v in sorted(each.items())},
        )
    finally:
        client.close()
        launcher.stop()


if __name__ == "__main__":
    main()
