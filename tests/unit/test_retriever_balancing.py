"""The gateway's (and CLI's) retriever channel spreads reads over several retrievers and keeps
answering when one goes away: real gRPC servers on loopback, each answering with its own name."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from k0maru.v1 import retriever_pb2, retriever_pb2_grpc
from k0maru_common import GrpcService, StackClient
from k0maru_common._server import balanced_target


class NamedRetriever(retriever_pb2_grpc.RetrieverServicer):  # type: ignore[misc]
    def __init__(self, name: str) -> None:
        self.name = name

    def IndexStatus(self, request: object, context: grpc.ServicerContext) -> retriever_pb2.IndexStatusResponse:
        return retriever_pb2.IndexStatusResponse(instance=self.name)


@pytest.fixture
def retrievers() -> Iterator[list[GrpcService]]:
    services = []
    for name in ("first", "second"):
        service = GrpcService("k0maru.v1.Retriever", "127.0.0.1:0")
        retriever_pb2_grpc.add_RetrieverServicer_to_server(NamedRetriever(name), service.server)
        service.start()
        service.set_serving(True)
        services.append(service)
    yield services
    for service in services:
        service.server.stop(0).wait()


def test_balanced_target():
    assert balanced_target("retriever:50053") == "retriever:50053"
    assert balanced_target("dns:///retriever:50053") == "dns:///retriever:50053"
    assert balanced_target("10.0.0.5:50053, 10.0.0.6:50053") == "ipv4:10.0.0.5:50053,10.0.0.6:50053"


def test_reads_spread_over_retrievers_and_survive_one_stopping(retrievers: list[GrpcService]):
    target = ",".join(s.address for s in retrievers)
    with StackClient("v", {"scanner": target, "retriever": target, "offload": target}, token="") as client:
        seen = [
            client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 10).instance
            for _ in range(40)
        ]
        assert set(seen) == {"first", "second"}
        retrievers[1].server.stop(0).wait()  # the second one goes away
        after = [
            client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 10).instance
            for _ in range(20)
        ]
        assert after == ["first"] * 20


def test_a_retriever_that_does_not_answer_in_time_is_named():
    """A hung retriever (`kill -STOP`) made `k0maru search` say only "Deadline Exceeded"."""
    import threading

    from k0maru_common import DependencyFailed

    release = threading.Event()

    class Hung(retriever_pb2_grpc.RetrieverServicer):  # type: ignore[misc]
        def Search(self, request: object, context: grpc.ServicerContext) -> retriever_pb2.SearchResponse:
            release.wait(10)
            return retriever_pb2.SearchResponse()

    service = GrpcService("k0maru.v1.Retriever", "127.0.0.1:0")
    retriever_pb2_grpc.add_RetrieverServicer_to_server(Hung(), service.server)
    service.start()
    address = f"127.0.0.1:{service.port}"
    try:
        for token in ("", "a-token"):  # a token's interceptor names the call as text, not bytes
            client = StackClient("v", {"scanner": address, "retriever": address, "offload": address}, token=token)
            with pytest.raises(DependencyFailed, match=r"the retriever did not answer Search in 0\.5 s: busy, hung"):
                client.call(client.retriever.Search, retriever_pb2.SearchRequest(query="x"), 0.5)
            client.close()
    finally:
        release.set()
        service.server.stop(0).wait()
