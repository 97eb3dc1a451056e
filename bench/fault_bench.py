"""Fault matrix: kill -9 each service of a running stack during indexing; time to recover, and
whether the index then equals a fresh build (documents, chunks, vectors, BM25 top-10 with scores).

    .venv/bin/python bench/fault_bench.py [--notes 1000] [--workdir DIR]

Per service: SIGKILL while a batch of new notes is being indexed, then the launcher's supervisor
restarts it; "recover_s" runs from the kill until the service is SERVING again and the batch is
searchable. At the end the index is compared with a Reindex (fresh build) of the same vault.
"""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
import time
from pathlib import Path

from _common import emit, synthetic_vault

from k0maru.v1 import retriever_pb2
from k0maru_cli import Launcher
from k0maru_common import K0Error, StackClient, health_name, health_state

QUERIES = ["topic 3", "tag2 details", "second paragraph chunker", "note 42", "link topic 17"]


def status(client: StackClient) -> retriever_pb2.IndexStatusResponse:
    reply: retriever_pb2.IndexStatusResponse = client.call(
        client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 5.0
    )
    return reply


def top10(client: StackClient) -> dict[str, list[tuple[str, float]]]:
    out = {}
    for q in QUERIES:
        request = retriever_pb2.SearchRequest(query=q, limit=10, mode=retriever_pb2.SEARCH_MODE_BM25, explain=True)
        out[q] = [(h.path, round(h.explain.bm25.score, 4)) for h in client.call(client.retriever.Search, request).hits]
    return out


def wait(predicate, timeout_s: float, launcher: Launcher) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        launcher.supervise()
        try:
            if predicate():
                return True
        except K0Error:  # a service is down: keep supervising
            pass
        time.sleep(0.1)
    return False


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    root = args.workdir or Path(tempfile.mkdtemp(prefix="k0-fault-"))
    vault = synthetic_vault(root / "vault", args.notes)
    launcher = Launcher(vault, root / "data", embedders=1, http_port=0, extra_env={"K0_WATCH": "true"})
    state = launcher.start()
    client = state.client()
    try:
        wait(lambda: status(client).documents >= args.notes, 600, launcher)
        for round_, name in enumerate(["retriever", "scanner", "embedder-1", "offload", "gateway"]):
            batch = {f"fault{round_}/n{i}.md": f"# Fault {round_} {i}\n\nmarker{round_} note {i}\n" for i in range(50)}
            for rel, text in batch.items():
                (vault / rel).parent.mkdir(parents=True, exist_ok=True)
                (vault / rel).write_text(text)
            time.sleep(0.5)  # inside the scanner's window: the kill lands mid-indexing
            assert launcher.state is not None
            killed_at = time.monotonic()
            os.kill(launcher.state.pids[name], signal.SIGKILL)
            address = launcher.state.addresses[name]

            def recovered(name: str = name, address: str = address, round_: int = round_) -> bool:
                if health_state(address, health_name(name)) != "SERVING":
                    return False
                request = retriever_pb2.SearchRequest(
                    query=f"marker{round_}", limit=100, mode=retriever_pb2.SEARCH_MODE_BM25
                )
                return len(client.call(client.retriever.Search, request, 5.0).hits) == 50

            ok = wait(recovered, 120, launcher)
            emit("fault", service=name, recovered=ok, recover_s=round(time.monotonic() - killed_at, 2))
        wait(lambda: status(client).chunks_with_vectors == status(client).chunks, 900, launcher)
        before = status(client)
        ranked = top10(client)
        client.call(client.retriever.Reindex, retriever_pb2.ReindexRequest(), 600.0)
        wait(lambda: status(client).chunks_with_vectors == status(client).chunks, 900, launcher)
        fresh = status(client)
        emit(
            "fault_vs_fresh",
            documents=(before.documents, fresh.documents),
            chunks=(before.chunks, fresh.chunks),
            vectors=(before.chunks_with_vectors, fresh.chunks_with_vectors),
            vector_points=(before.vector_points, fresh.vector_points),
            consistent=before.consistent,
            top10_identical=sum(ranked[q] == v for q, v in top10(client).items()),
            queries=len(QUERIES),
        )
    finally:
        client.close()
        launcher.stop()


if __name__ == "__main__":
    main()
