"""Access control: the console answers only to its own Host names; gRPC settings demand a token off loopback."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from k0maru_common import K0Settings, SettingsError, StackClient, is_loopback_address
from k0maru_gateway._console import allowed_hosts, build_console, host_of

ADDRESSES = {"scanner": "127.0.0.1:9", "retriever": "127.0.0.1:9", "offload": "127.0.0.1:9"}


def console(token: str = "", hosts: frozenset[str] | None = None, bind: str = "127.0.0.1") -> TestClient:
    client = StackClient("/home/me/secret-vault", ADDRESSES, token="")
    app = build_console(client, token, "", allowed_hosts(bind, []) if hosts is None else hosts)
    return TestClient(app, base_url="http://127.0.0.1:7878")


def test_dns_rebinding_host_is_refused():
    with console() as c:
        refused = c.get("/api/search?q=x", headers={"host": "evil.example:7878"})
        assert refused.status_code == 403 and "K0_HTTP_ALLOWED_HOSTS" in refused.json()["error"]
        assert c.get("/", headers={"host": "evil.example"}).status_code == 403
        assert c.get("/healthz", headers={"host": "evil.example"}).status_code == 403
        for host in ("127.0.0.1:7878", "localhost:7878", "[::1]:7878", "LOCALHOST"):
            assert c.get("/", headers={"host": host}).status_code == 200, host


def test_allow_list_adds_names():
    hosts = allowed_hosts("127.0.0.1", ["notes.example"])
    with console(hosts=hosts) as c:
        assert c.get("/", headers={"host": "notes.example:7878"}).status_code == 200
        assert c.get("/", headers={"host": "other.example"}).status_code == 403


def test_allowed_hosts_for_each_bind():
    assert allowed_hosts("0.0.0.0", []) is None  # any Host; the token (mandatory there) protects
    assert allowed_hosts("::", ["a.example"]) == frozenset({"a.example"})
    assert allowed_hosts("192.168.1.5", []) == frozenset({"192.168.1.5"})
    assert host_of("[::1]:7878") == "::1" and host_of("Example.COM:80") == "example.com" and host_of("::1") == "::1"


def test_healthz_hides_the_vault_path_without_the_token():
    with console(token="s3cret") as c:
        anonymous = c.get("/healthz")
        assert anonymous.status_code == 503 and "vault" not in anonymous.json()
        assert "secret-vault" not in anonymous.text
        holder = c.get("/healthz", headers={"authorization": "Bearer s3cret"})
        assert holder.json()["vault"] == "/home/me/secret-vault"


def test_grpc_beyond_loopback_needs_a_token(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("K0_GRPC_TOKEN", raising=False)
    with pytest.raises(SettingsError, match="K0_GRPC_TOKEN"):
        K0Settings(grpc_addr="0.0.0.0:50051")
    assert K0Settings(grpc_addr="0.0.0.0:50051", grpc_token="t").grpc_token == "t"
    assert K0Settings(grpc_addr="127.0.0.1:0").grpc_token == ""
    assert [is_loopback_address(a) for a in ("localhost:1", "[::1]:2", "[::]:3", "scanner:4", "10.0.0.1:5")] == [
        True,
        True,
        False,
        False,
        False,
    ]
