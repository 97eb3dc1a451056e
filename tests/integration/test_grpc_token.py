"""The shared gRPC token: calls without it are refused, k0maru's own clients carry it, health stays open."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from k0maru.v1 import scanner_pb2, scanner_pb2_grpc
from k0maru_cli import free_port
from k0maru_common import GrpcService, health_state, open_channel
from k0maru_retriever.config import RetrieverSettings
from k0maru_retriever.server import build_server as build_retriever
from k0maru_scanner.config import ScannerSettings
from k0maru_scanner.server import build_server as build_scanner
from tests.conftest import write_notes

pytestmark = pytest.mark.integration
TOKEN = "per-stack-secret"


def test_token_is_required_and_carried(vault: Path, tmp_path: Path):
    write_notes(vault, {"a.md": "# Alpha\n\nlighthouses\n"})
    events = f"tcp://127.0.0.1:{free_port()}"
    scanner = build_scanner(
        ScannerSettings(
            vault=vault, data_dir=tmp_path, grpc_addr="127.0.0.1:0", events_addr=events, watch=False, grpc_token=TOKEN
        )
    )
    scanner.service.start()
    scanner.scanner.scan()
    scanner.service.set_serving(True)
    address = scanner.service.address
    try:
        assert health_state(address, "k0maru.v1.Scanner") == "SERVING"  # probes need no secret
        for token in ("", "wrong"):
            with open_channel(address, token) as channel:
                stub = scanner_pb2_grpc.ScannerStub(channel)
                with pytest.raises(grpc.RpcError) as unary:
                    stub.Status(scanner_pb2.ScannerStatusRequest(), timeout=10)
                assert unary.value.code() == grpc.StatusCode.UNAUTHENTICATED
                with pytest.raises(grpc.RpcError) as stream:
                    list(stub.Changes(scanner_pb2.ChangesRequest(), timeout=10))
                assert stream.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with open_channel(address, TOKEN) as channel:
            stub = scanner_pb2_grpc.ScannerStub(channel)
            assert stub.Status(scanner_pb2.ScannerStatusRequest(), timeout=10).documents == 1
            assert [e.path for e in stub.Changes(scanner_pb2.ChangesRequest(), timeout=10)] == ["a.md"]
        retriever = build_retriever(  # its follower reaches the scanner only with the token
            RetrieverSettings(
                vault=vault,
                data_dir=tmp_path,
                grpc_addr="127.0.0.1:0",
                scanner_addr=address,
                events_addr=events,
                grpc_token=TOKEN,
            )
        )
        retriever.follower.start()
        try:
            assert retriever.follower.ready.wait(60)
            assert "a.md" in retriever.index.state.docs
        finally:
            retriever.service.server.stop(0).wait()
            retriever.close()
    finally:
        scanner.service.server.stop(0).wait()
        scanner.close()


def test_service_beyond_loopback_refuses_to_start_without_a_token(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("K0_GRPC_TOKEN", raising=False)
    with pytest.raises(SystemExit, match="K0_GRPC_TOKEN"):
        GrpcService("k0maru.v1.Test", "0.0.0.0:0")
