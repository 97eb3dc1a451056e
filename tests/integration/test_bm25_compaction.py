"""Edits leave deleted documents in BM25's statistics; a running retriever compacts them away in
the background, and one killed in the middle of a compaction comes back consistent and
compacts again."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from k0maru.v1 import retriever_pb2, scanner_pb2
from k0maru_cli import Launcher
from k0maru_common import DependencyFailed, StackClient

pytestmark = pytest.mark.integration

NOTES = 8000


def _status(client: StackClient) -> retriever_pb2.IndexStatusResponse:
    return client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())


def _answered(client: StackClient) -> retriever_pb2.IndexStatusResponse | None:
    try:
        return _status(client)
    except DependencyFailed:  # UNAVAILABLE: the channel's reconnect backoff
        return None


def _scored(client: StackClient, query: str) -> list[tuple[str, float]]:
    request = retriever_pb2.SearchRequest(query=query, limit=10, mode=retriever_pb2.SEARCH_MODE_BM25, explain=True)
    return [(h.path, round(h.explain.bm25.score, 5)) for h in client.call(client.retriever.Search, request).hits]


def _until(condition, timeout_s: float, what: str, every_s: float = 0.1):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every_s)
    return value


def test_a_retriever_killed_mid_compaction_comes_back_consistent_and_compacts_again(vault: Path, tmp_path: Path):
    for i in range(NOTES):
        (vault / f"n{i:04d}.md").write_text(f"# Note {i}\n\nshared words about topic{i % 13} and uniq{i:04d}\n")
    # 2 s of quiet before a compaction: the watcher may apply the edits before the test's own scan
    # returns, and with 0.5 s a compaction could start and end before the test looked for it (seen
    # once in a fresh clone's CI run, on a loaded machine)
    launcher = Launcher(vault, tmp_path / "data", embedders=0, http_port=0, extra_env={"K0_BM25_COMPACT_QUIET_S": "2"})
    state = launcher.start()
    client = state.client()
    building = tmp_path / "data" / "retriever" / "bm25.next"
    try:
        assert _status(client).bm25_deleted == 0  # a first build leaves none
        for i in range(0, NOTES, 80):  # 100 notes edited: their old chunks stay as deleted documents
            (vault / f"n{i:04d}.md").write_text(
                f"# Note {i}\n\nshared words, edited, about topic{i % 7} and new{i:04d}\n"
            )
        last = client.call(client.scanner.Scan, scanner_pb2.ScanRequest()).last_seq
        _until(lambda: _status(client).last_applied_seq >= last, 60, "the edits applied")
        _until(building.exists, 60, "a compaction under way", every_s=0.005)
        launcher.restart("retriever")  # SIGKILL in the middle of it, then a new process
        # the client's connection saw the refused connections and may still be in its reconnect
        # backoff (up to 1 s), failing calls at once although the new process is SERVING; a new
        # channel does not help (gRPC shares connections to an address between channels)
        status = _until(lambda: _answered(client), 5, "the restarted retriever's first answer")
        # searchable at once: a restart no longer rebuilds BM25 for deleted documents
        assert status.consistent and status.bm25_documents == status.chunks == NOTES, status.problem
        assert [h for h, _ in _scored(client, "new0080")] == ["n0080.md"]
        _until(lambda: _status(client).bm25_deleted == 0, 120, "the compaction after the restart")
        assert not building.exists()
        assert any(w.name == "bm25-compactor" and w.state == "running" for w in _status(client).workers)
        queries = ["topic3 edited", "shared words", "uniq0081", "new0160 topic6"]
        compacted = {q: _scored(client, q) for q in queries}
        client.call(client.retriever.Reindex, retriever_pb2.ReindexRequest())  # a fresh build of the same notes
        fresh = {q: _scored(client, q) for q in queries}
        # the same scores; which of many equally scored notes make the ten is tantivy's choice
        assert {q: [s for _, s in hits] for q, hits in fresh.items()} == {
            q: [s for _, s in hits] for q, hits in compacted.items()
        }
        assert fresh["uniq0081"][0][0] == compacted["uniq0081"][0][0] == "n0081.md"
        assert fresh["new0160 topic6"][0][0] == compacted["new0160 topic6"][0][0] == "n0160.md"
    finally:
        client.close()
        launcher.stop()
