"""Two retriever versions on one index and one embedder, each query sent to both (paired A/B).

Run: nice -n 10 .venv/bin/python bench/retriever_ab.py WORKDIR OTHER_SRC [--queries 600] [--mode hybrid]
  WORKDIR: an eval workdir with vectors (`k0maru eval beir … --workdir WORKDIR`: vault/ + data/)
  OTHER_SRC: the `services/retriever/src` folder of another checkout (`git worktree add /tmp/base REV`)

On this shared 2-core machine a hybrid p50 moves by ±3 ms between runs of the same code, far more
than most changes to the retriever's own path. Here the stack of this checkout runs (A), and a
second retriever (B) is started from OTHER_SRC with A's exact command line and environment, on a
copy of A's retriever data dir, using the same embedder. Every query goes to both, the order
alternating, so both see the same machine. Printed: p50 / p99 wall (client) and took_ms (inside
the retriever) of each, the median of the per-query differences A − B, and how many top-10 lists
are identical. SciFact's queries are used (any eval workdir's index works: the queries need not
match it).

The two sides are not quite alike: A is the stack's own retriever (its follower, pipeline and
sweeps run beside it). An A/A run, OTHER_SRC a worktree of this very checkout, gave A − B
+0.27 ms in hybrid and +0.06 ms in BM25 (SciFact, 600 queries, 2026-12-05): run one beside a
change and compare against it, not against 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import grpc
from _common import SHARED, emit

from k0maru.v1 import retriever_pb2, retriever_pb2_grpc
from k0maru_cli import free_port
from k0maru_cli._eval import percentile, stack_for, wait_indexed
from k0maru_cli._state import StackState
from k0maru_common import wait_until_serving

MODES = {"hybrid": retriever_pb2.SEARCH_MODE_HYBRID, "bm25": retriever_pb2.SEARCH_MODE_BM25}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("other_src", type=Path)
    parser.add_argument("--queries", type=int, default=600)
    parser.add_argument("--mode", choices=sorted(MODES), default="hybrid")
    args = parser.parse_args()
    rows = (SHARED / "data" / "beir" / "scifact" / "queries.jsonl").read_text().splitlines()
    queries = [json.loads(r)["text"] for r in rows][: args.queries]
    mode = MODES[args.mode]
    with stack_for(args.workdir / "vault", args.workdir / "data", embedders=1) as a, tempfile.TemporaryDirectory() as d:
        wait_indexed(a, need_vectors=True)
        state = StackState.load(args.workdir / "data")
        assert state is not None
        pid = state.pids["retriever"]
        env = dict(e.split("=", 1) for e in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in e)
        argv = Path(f"/proc/{pid}/cmdline").read_text().split("\0")[:-1]
        data_b = Path(d) / "data"  # the retriever keeps its state in DATA_DIR/retriever
        shutil.copytree(Path(env["K0_DATA_DIR"]) / "retriever", data_b / "retriever")
        address = f"127.0.0.1:{free_port()}"
        env.update(K0_GRPC_ADDR=address, K0_DATA_DIR=str(data_b), PYTHONPATH=str(args.other_src.resolve()))
        log = Path(d) / "retriever-b.log"
        with open(log, "wb") as out:
            b = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            assert wait_until_serving(address, "k0maru.v1.Retriever", 120), log.read_text()
            metadata = [("authorization", f"Bearer {state.grpc_token}")] if state.grpc_token else []
            channel = grpc.insecure_channel(address)
            stub_b = retriever_pb2_grpc.RetrieverStub(channel)

            def search_a(q: str) -> retriever_pb2.SearchResponse:
                return a.call(a.retriever.Search, retriever_pb2.SearchRequest(query=q, limit=10, mode=mode))

            def search_b(q: str) -> retriever_pb2.SearchResponse:
                request = retriever_pb2.SearchRequest(query=q, limit=10, mode=mode)
                reply: retriever_pb2.SearchResponse = stub_b.Search(request, metadata=metadata, timeout=10)
                return reply

            for q in ("warm-up one", "warm-up two"):
                search_a(q)
                search_b(q)
            wall: dict[str, list[float]] = {"a": [], "b": []}
            took: dict[str, list[float]] = {"a": [], "b": []}
            same = 0
            for i, q in enumerate(queries):
                pair = (("a", search_a), ("b", search_b))
                hits = {}
                for side, search in pair if i % 2 == 0 else pair[::-1]:
                    started = time.perf_counter()
                    reply = search(q)
                    wall[side].append((time.perf_counter() - started) * 1000)
                    took[side].append(reply.took_ms)
                    hits[side] = [(h.path, h.chunk_index) for h in reply.hits]
                same += hits["a"] == hits["b"]
            channel.close()
        finally:
            b.terminate()
            b.wait(30)
    emit(
        "retriever_ab",
        mode=args.mode,
        queries=len(queries),
        **{
            f"{k}_p50_ms_{s}": round(statistics.median(v[s]), 2)
            for k, v in (("wall", wall), ("took", took))
            for s in "ab"
        },
        **{f"wall_p99_ms_{s}": round(percentile(wall[s], 0.99), 2) for s in "ab"},
        median_paired_a_minus_b_ms=round(
            statistics.median(x - y for x, y in zip(wall["a"], wall["b"], strict=True)), 2
        ),
        identical_top10=same,
        cpu_count=os.cpu_count(),
    )


if __name__ == "__main__":
    main()
