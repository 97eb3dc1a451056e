"""Hostile gRPC requests get INVALID_ARGUMENT with a short reason, never INTERNAL or a broken stream."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from k0maru.v1 import retriever_pb2, retriever_pb2_grpc, scanner_pb2, scanner_pb2_grpc
from k0maru_retriever.config import RetrieverSettings
from k0maru_retriever.server import RetrieverApp
from k0maru_retriever.server import build_server as build_retriever
from tests.conftest import write_notes
from tests.integration.test_events import running_scanner

pytestmark = pytest.mark.integration
MB = 1024 * 1024


@pytest.fixture(scope="module")
def stubs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[scanner_pb2_grpc.ScannerStub, retriever_pb2_grpc.RetrieverStub]]:
    root = tmp_path_factory.mktemp("hostile")
    vault = write_notes(root / "vault", {"a/b.md": "# B\n\nlighthouse keepers\n"})
    with running_scanner(vault, root / "data", watch=False) as (scanner, events):
        app: RetrieverApp = build_retriever(
            RetrieverSettings(
                vault=vault, data_dir=root / "data", scanner_addr=scanner.service.address, events_addr=events
            )
        )
        app.service.start()
        app.follower.start()
        try:
            assert app.follower.ready.wait(60)
            with (
                grpc.insecure_channel(scanner.service.address) as sc,
                grpc.insecure_channel(app.service.address) as rc,
            ):
                yield scanner_pb2_grpc.ScannerStub(sc), retriever_pb2_grpc.RetrieverStub(rc)
        finally:
            app.service.server.stop(0).wait()
            app.close()


def refused(call, request) -> grpc.RpcError:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as caught:
        reply = call(request, timeout=30)
        if not hasattr(reply, "ByteSize"):
            list(reply)  # a stream: its status comes with the first read
    error = caught.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (error.code(), error.details())
    assert len(error.details()) < 2100
    return error


@pytest.mark.parametrize("since", [2**63, 2**64 - 1])
def test_changes_beyond_the_journal_range(stubs, since: int):
    scanner, _ = stubs
    error = refused(scanner.Changes, scanner_pb2.ChangesRequest(since_seq=since))
    assert "since_seq" in error.details()


def test_huge_paths(stubs):
    scanner, retriever = stubs
    assert "paths" in refused(scanner.GetDocuments, scanner_pb2.GetDocumentsRequest(paths=["x" * MB])).details()
    assert "path" in refused(retriever.GetNote, retriever_pb2.GetNoteRequest(path="a/" * (MB // 2))).details()
    assert "path" in refused(retriever.Backlinks, retriever_pb2.BacklinksRequest(path="x" * MB)).details()


def test_huge_folder_filter(stubs):
    _, retriever = stubs
    request = retriever_pb2.SearchRequest(query="lighthouse", scope=retriever_pb2.Scope(path_prefixes=["a" * MB]))
    assert "path_prefixes" in refused(retriever.Search, request).details()
    fine = retriever_pb2.SearchRequest(query="lighthouse", scope=retriever_pb2.Scope(path_prefixes=["a" * 4000]))
    assert list(retriever.Search(fine, timeout=30).hits) == []  # long but legal: answered, not INTERNAL
    scoped = retriever_pb2.SearchRequest(query="lighthouse", scope=retriever_pb2.Scope(path_prefixes=["a"]))
    assert [h.path for h in retriever.Search(scoped, timeout=30).hits] == ["a/b.md"]


def test_unknown_search_mode(stubs):
    _, retriever = stubs
    error = refused(retriever.Search, retriever_pb2.SearchRequest(query="lighthouse", mode=7))
    assert "SearchMode" in error.details()
