"""Hostile gRPC requests get INVALID_ARGUMENT with a short reason, never INTERNAL or a broken stream."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k0maru.v1 import retriever_pb2, retriever_pb2_grpc, scanner_pb2, scanner_pb2_grpc
from k0maru_common import health_state
from k0maru_retriever.config import RetrieverSettings
from k0maru_retriever.server import RetrieverApp
from k0maru_retriever.server import build_server as build_retriever
from tests.conftest import write_notes
from tests.integration.test_events import running_scanner

pytestmark = pytest.mark.integration
MB = 1024 * 1024
ADDRESSES: dict[str, str] = {}  # filled by the module's stack


@pytest.fixture(scope="module")
def stubs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[scanner_pb2_grpc.ScannerStub, retriever_pb2_grpc.RetrieverStub]]:
    root = tmp_path_factory.mktemp("hostile")
    vault = write_notes(root / "vault", {"a/b.md": "# B\n\nlighthouse keepers\n"})
    with running_scanner(vault, root / "data", watch=False) as (scanner, events):
        app: RetrieverApp = build_retriever(
            RetrieverSettings(
                vault=vault,
                data_dir=root / "data",
                grpc_addr="127.0.0.1:0",
                scanner_addr=scanner.service.address,
                events_addr=events,
            )
        )
        app.service.start()
        app.follower.start()
        try:
            assert app.follower.ready.wait(60)
            app.service.set_serving(True)
            ADDRESSES.update(scanner=scanner.service.address, retriever=app.service.address)
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


# Generated requests: every field of every request message, any value its wire type allows.
ACCEPTED = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.OUT_OF_RANGE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}
_INT_RANGES = {
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_ENUM: (-(2**31), 2**31 - 1),
}
TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "..", "../../etc/passwd", "/abs.md", "a\\b.md", "C:\\x", "a/b.md", "loop/x.md", "#", "*"]),
    st.integers(1000, 20_000).map(lambda n: "a/" * n),
)


def message_strategy(descriptor, depth: int = 0):  # type: ignore[no-untyped-def]
    """Any message of this type: hypothesis picks each field's value, repeated fields included."""
    fields = {}
    for field in descriptor.fields:
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if depth >= 2:
                continue
            one = message_strategy(field.message_type, depth + 1)
        elif field.type == FieldDescriptor.TYPE_STRING:
            one = TEXT
        elif field.type == FieldDescriptor.TYPE_BOOL:
            one = st.booleans()
        elif field.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
            one = st.floats(allow_nan=True, allow_infinity=True, width=32)
        elif field.type in _INT_RANGES:
            low, high = _INT_RANGES[field.type]
            one = st.one_of(st.integers(low, high), st.sampled_from([max(low, 0), min(high, 100), high]))
        else:
            continue
        fields[field.name] = st.lists(one, max_size=4) if field.is_repeated else one
    cls = message_factory.GetMessageClass(descriptor)
    return st.fixed_dictionaries({}, optional=fields).map(lambda values: cls(**values))


SCANNER_CALLS = ["Changes", "GetDocuments", "ListDocuments", "ListDocumentPages", "Status"]
RETRIEVER_CALLS = ["Search", "GetNote", "Backlinks", "IndexStatus"]


def _status(call, request) -> grpc.StatusCode:  # type: ignore[no-untyped-def]
    try:
        reply = call(request, timeout=30)
        if not hasattr(reply, "ByteSize"):
            list(reply)
    except grpc.RpcError as exc:
        assert exc.code() in ACCEPTED, (exc.code(), exc.details()[:300])
        return exc.code()
    return grpc.StatusCode.OK


@pytest.mark.parametrize(
    "service,method", [("scanner", m) for m in SCANNER_CALLS] + [("retriever", m) for m in RETRIEVER_CALLS]
)
def test_generated_requests_get_clear_answers(stubs, service: str, method: str):
    stub = stubs[0] if service == "scanner" else stubs[1]
    pb = scanner_pb2 if service == "scanner" else retriever_pb2
    service_descriptor = pb.DESCRIPTOR.services_by_name[service.capitalize()]
    descriptor = service_descriptor.methods_by_name[method].input_type

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(request=message_strategy(descriptor))
    def check(request) -> None:  # type: ignore[no-untyped-def]
        _status(getattr(stub, method), request)

    check()
    assert health_state(ADDRESSES[service], f"k0maru.v1.{service.capitalize()}") == "SERVING"
