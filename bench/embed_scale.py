"""Embedding throughput with 1, 2 and 3 workers, and how fast query embedding fails over.

Run: nice -n 10 .venv/bin/python bench/embed_scale.py [--chunks 300] [--workers 1,2,3]
  - throughput: the same SciFact chunks through the Redis stream (cache flushed before each run,
    so every text is computed), with N worker processes of one intra-op thread each
  - failover: the retriever's own QueryEmbedder (round robin over two workers, keepalive pings)
    embeds a query every 50 ms for at least 10 s; one worker is frozen (SIGSTOP: the process hangs
    while its kernel still accepts connections) or killed (SIGKILL: the kernel resets its
    connections); reported: failed queries (answered from BM25 in a search), the time from the
    fault until five queries in a row succeeded, and the queries' latency
Numbers are printed, never asserted. The machine this was measured on has 2 cores shared with
other work: 3 workers cannot scale linearly there.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from _common import emit, summary
from embed_bench import scifact_chunks, service_throughput, valkey, workers

from k0maru_retriever._search import QueryEmbedder


def failover(url: str, fault: int) -> dict[str, object]:
    pair = workers(2, url)
    embedder = QueryEmbedder("ipv4:" + ",".join(a for _p, a in pair), timeout_s=2.0)
    try:
        for i in range(20):  # both workers warm and in the round robin
            assert embedder.embed(f"warm up {i}") is not None
        victim = pair[0][0]
        os.kill(victim.pid, fault)
        t0 = time.monotonic()
        outcomes: list[tuple[float, bool]] = []
        took_ms: list[float] = []
        i = 0
        while time.monotonic() - t0 < 60:
            q0 = time.monotonic()
            ok = embedder.embed(f"query after the fault {i}") is not None
            outcomes.append((time.monotonic() - t0, ok))
            took_ms.append((time.monotonic() - q0) * 1000)
            i += 1
            if len(outcomes) >= 5 and all(o for _t, o in outcomes[-5:]) and time.monotonic() - t0 > 10:
                break
            time.sleep(0.05)
        first_good = next(
            (outcomes[k][0] for k in range(len(outcomes) - 4) if all(o for _t, o in outcomes[k : k + 5])), None
        )
        return {
            "queries": len(outcomes),
            "failed": sum(1 for _t, o in outcomes if not o),
            "recovered_s": None if first_good is None else round(first_good, 3),
            "query_ms": summary(took_ms),
        }
    finally:
        embedder.close()
        for p, _a in pair:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                p.kill()
            p.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--workers", default="1,2,3", help="worker counts to measure; empty: failover only")
    args = parser.parse_args()
    texts = scifact_chunks(args.chunks)
    with tempfile.TemporaryDirectory() as d:
        proc, url = valkey(Path(d))
        try:
            rates: dict[int, float] = {}
            running: list[tuple[subprocess.Popen[bytes], str]] = []
            for n in sorted(int(x) for x in args.workers.split(",") if x):
                running += workers(n - len(running), url)
                service_throughput(texts[:32], url, f"warm{n}-")  # every worker loaded and reading
                rates[n] = round(len(texts) / service_throughput(texts, url, f"w{n}-"), 1)
            for p, _a in running:
                p.terminate()
                p.wait()
            if rates:
                base = rates[min(rates)]
                emit(
                    "embed_scale",
                    chunks=len(texts),
                    cores=os.cpu_count(),
                    chunks_per_s=rates,
                    ratio_to_fewest={n: round(r / base, 2) for n, r in rates.items()},
                )
            emit("query_failover_frozen_host", **failover(url, signal.SIGSTOP))
            emit("query_failover_killed_worker", **failover(url, signal.SIGKILL))
        finally:
            proc.terminate()


if __name__ == "__main__":
    main()
