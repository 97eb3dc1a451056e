"""gRPC over TLS (K0_GRPC_TLS_CERT / _KEY / _CA): a TLS service answers TLS clients, refuses
plaintext ones; a whole stack runs over TLS (service-to-service channels and health checks)."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

import grpc
import pytest

from k0maru.v1 import retriever_pb2, scanner_pb2, scanner_pb2_grpc
from k0maru_cli import Launcher, free_port
from k0maru_common import GrpcService, health_state, open_channel
from k0maru_scanner.config import ScannerSettings
from k0maru_scanner.server import build_server as build_scanner
from tests.conftest import write_notes

pytestmark = pytest.mark.integration


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost / 127.0.0.1 and its key, made now."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "k0maru test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "server.pem", directory / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_path.chmod(0o600)
    return cert_path, key_path


@pytest.fixture
def tls_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cert, key = self_signed(tmp_path)
    monkeypatch.setenv("K0_GRPC_TLS_CERT", str(cert))
    monkeypatch.setenv("K0_GRPC_TLS_KEY", str(key))
    monkeypatch.setenv("K0_GRPC_TLS_CA", str(cert))
    return cert


def test_tls_service_answers_tls_and_refuses_plaintext(vault: Path, tmp_path: Path, tls_env: Path):
    write_notes(vault, {"a.md": "# Alpha\n\nlighthouses\n"})
    scanner = build_scanner(
        ScannerSettings(
            vault=vault,
            data_dir=tmp_path,
            grpc_addr="127.0.0.1:0",
            events_addr=f"tcp://127.0.0.1:{free_port()}",
            watch=False,
        )
    )
    scanner.service.start()
    scanner.scanner.scan()
    scanner.service.set_serving(True)
    address = scanner.service.address
    try:
        assert health_state(address, "k0maru.v1.Scanner") == "SERVING"  # the health check speaks TLS too
        with open_channel(address) as channel:
            assert (
                scanner_pb2_grpc.ScannerStub(channel).Status(scanner_pb2.ScannerStatusRequest(), timeout=10).documents
                == 1
            )
        with grpc.insecure_channel(address) as plain:
            with pytest.raises(grpc.RpcError) as refused:
                scanner_pb2_grpc.ScannerStub(plain).Status(scanner_pb2.ScannerStatusRequest(), timeout=5)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        (tmp_path / "other").mkdir()
        other_ca, _ = self_signed(tmp_path / "other")
        with grpc.secure_channel(address, grpc.ssl_channel_credentials(other_ca.read_bytes())) as untrusted:
            with pytest.raises(grpc.RpcError) as unverified:  # a server the client's CA did not sign
                scanner_pb2_grpc.ScannerStub(untrusted).Status(scanner_pb2.ScannerStatusRequest(), timeout=5)
            assert unverified.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        scanner.service.server.stop(0).wait()
        scanner.close()


def test_whole_stack_over_tls(vault: Path, tmp_path: Path, tls_env: Path):
    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n"})
    launcher = Launcher(vault, tmp_path / "data", embedders=0, http_port=0)  # the children inherit the TLS env
    state = launcher.start()
    client = state.client()
    try:
        reply = client.call(
            client.retriever.Search,  # the retriever followed the scanner over TLS
            retriever_pb2.SearchRequest(query="lighthouses", mode=retriever_pb2.SEARCH_MODE_BM25),
        )
        assert [h.path for h in reply.hits] == ["a.md"]
        with grpc.insecure_channel(state.addresses["retriever"]) as plain:
            with pytest.raises(grpc.RpcError) as refused:
                grpc_health_check(plain)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        client.close()
        launcher.stop()


def grpc_health_check(channel: grpc.Channel) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)


def test_half_configured_tls_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("K0_GRPC_TLS_CERT", str(tmp_path / "server.pem"))
    monkeypatch.delenv("K0_GRPC_TLS_KEY", raising=False)
    with pytest.raises(SystemExit, match="K0_GRPC_TLS_KEY is not set"):
        GrpcService("k0maru.v1.Test", "127.0.0.1:0")
    monkeypatch.setenv("K0_GRPC_TLS_KEY", str(tmp_path / "missing.key"))
    with pytest.raises(SystemExit, match=r"K0_GRPC_TLS_KEY=.*missing.key: cannot read it"):
        GrpcService("k0maru.v1.Test", "127.0.0.1:0")
