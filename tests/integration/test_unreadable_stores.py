"""Stores a crash of the machine left unreadable are set aside and built again (real processes).

Every index can be rebuilt from the vault: a damaged SQLite file, tantivy meta file or Qdrant
Edge segment made its service exit at every start, and `k0maru up` fail, until someone deleted
it by hand. Now each is moved to `<name>.unreadable-<time>` and rebuilt, and the stack answers
as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from k0maru.v1 import retriever_pb2
from k0maru_cli import Launcher
from k0maru_common import StackClient
from tests.conftest import wait_for, write_notes

pytestmark = pytest.mark.integration
QUERIES = ("lighthouse keeper", "ships in the harbour", "storm warnings", "tide tables")


def damage(path: Path) -> None:
    """The first bytes overwritten, as a torn write can leave them."""
    data = bytearray(path.read_bytes())
    data[:16] = b"not what it was!"[: len(data)]
    path.write_bytes(bytes(data))


@contextlib.contextmanager
def stack(vault: Path, data: Path) -> Iterator[StackClient]:
    launcher = Launcher(vault, data, embedders=1, http_port=0, extra_env={"K0_WATCH": "true"})
    client = launcher.start().client()  # failed: "retriever exited with code 1 during start-up"
    try:
        yield client
    finally:
        client.close()
        launcher.stop()


def settled(client: StackClient) -> retriever_pb2.IndexStatusResponse:
    """Once the stores agree and every chunk has its vector."""

    def check() -> retriever_pb2.IndexStatusResponse | None:
        s = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
        whole = s.consistent and s.chunks and s.chunks_with_vectors == s.chunks == s.vector_points == s.bm25_documents
        return s if whole else None

    status: retriever_pb2.IndexStatusResponse = wait_for(check, 90, "the index whole again")
    return status


def answers(client: StackClient) -> dict[str, list[str]]:
    search = client.retriever.Search
    return {
        q: [h.path for h in client.call(search, retriever_pb2.SearchRequest(query=q, limit=5)).hits] for q in QUERIES
    }


def found(client: StackClient, query: str, path: str) -> bool:
    request = retriever_pb2.SearchRequest(query=query, mode=retriever_pb2.SEARCH_MODE_BM25)
    return path in [h.path for h in client.call(client.retriever.Search, request).hits]


def test_stores_a_crash_left_unreadable_are_set_aside_and_rebuilt(vault: Path, tmp_path: Path):
    write_notes(
        vault,
        {
            "ops/lighthouse.md": "# Lighthouse\n\nThe lighthouse keeper logs every storm. #coast\n",
            "ops/harbour.md": "# Harbour\n\nShips in the harbour wait for the tide. #coast #ships\n",
            "ops/storms.md": "# Storms\n\nStorm warnings reach the [[lighthouse]] first.\n",
            "misc/tides.md": "# Tides\n\nTide tables for the bay, printed weekly.\n",
            "misc/gulls.md": "# Gulls\n\nGulls follow the fishing boats home.\n",
        },
    )
    data = tmp_path / "data"
    with stack(vault, data) as client:
        settled(client)
        for i in range(8):  # the journal runs ahead of what a fresh scan writes into a new one
            (vault / "misc" / "gulls.md").write_text(f"# Gulls\n\nGulls follow the fishing boats home, version {i}.\n")
            wait_for(lambda i=i: found(client, f"version {i}", "misc/gulls.md"), 30, f"edit {i}")
        before = settled(client)
        expected = answers(client)
    retriever = data / "retriever"

    for damaged in (
        [retriever / "state.sqlite"],  # the bookkeeping alone: BM25 and vectors it no longer knows of
        [next(retriever.glob("vectors-*")) / "edge_config.json"],
        [
            data / "scanner" / "manifest.sqlite",
            retriever / "bm25" / "meta.json",
            next(retriever.glob("tags-*.sqlite")),
        ],
    ):
        for path in damaged:
            damage(path)
        with stack(vault, data) as client:
            after = settled(client)
            assert (after.documents, after.chunks) == (before.documents, before.chunks)
            assert answers(client) == expected
            for path in damaged:  # the store that held it, kept for a look
                store = path.parent if path.name in ("edge_config.json", "meta.json") else path
                assert len(list(store.parent.glob(store.name + ".unreadable-*"))) == 1, path
            if any(p.name == "edge_config.json" for p in damaged):
                # one warning, that it was set aside; none that it "kept its own configuration"
                assert "kept its own configuration" not in (data / "logs" / "retriever.log").read_text()
            if data / "scanner" / "manifest.sqlite" in damaged:
                # the new manifest's journal goes on past the old one's seqs: a note written now is
                # not taken by the retriever for a change it has already applied
                (vault / "misc" / "buoys.md").write_text("# Buoys\n\nRed buoys mark the channel.\n")
                wait_for(lambda: found(client, "red buoys", "misc/buoys.md"), 30, "a note written after the reset")
