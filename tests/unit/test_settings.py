"""K0Settings reads K0_* variables: types converted, bounds and cross-field rules checked, errors name the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from k0maru_common import SettingsError
from k0maru_embedder.config import EmbedderSettings
from k0maru_gateway.config import GatewaySettings
from k0maru_retriever.config import RetrieverSettings
from k0maru_scanner.config import ScannerSettings


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("K0_"):
            monkeypatch.delenv(name)


def test_environment_values_become_typed_fields(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("K0_VAULT", str(tmp_path))
    monkeypatch.setenv("K0_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("K0_WATCH", "False")
    monkeypatch.setenv("K0_WINDOW_S", "0.5")
    monkeypatch.setenv("K0_WINDOW_MAX_FILES", "7")
    monkeypatch.setenv("K0_IGNORE_FOLDERS", '["a", "b c"]')
    monkeypatch.setenv("K0_NOT_A_SCANNER_SETTING", "ignored")
    settings = ScannerSettings()
    assert (settings.vault, settings.data_dir) == (tmp_path, tmp_path / "d")
    assert settings.watch is False and settings.window_s == 0.5 and settings.window_max_files == 7
    assert settings.ignore_folders == ["a", "b c"] and settings.rescan_interval_s == 30.0  # the default
    assert ScannerSettings(watch=True, window_max_files=3).watch is True  # arguments win over the environment
    with pytest.raises(AttributeError):
        settings.watch = True  # type: ignore[misc]


def test_tokens_from_a_secret_file_lose_its_newline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """`echo secret > file`: a service took the token with its newline, started, and then every call
    failed with gRPC's "Illegal header value"; each side now reads the token without it."""
    from k0maru_common import StackClient, env_token

    monkeypatch.setenv("K0_VAULT", str(tmp_path))
    monkeypatch.setenv("K0_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("K0_GRPC_TOKEN", "s3cret\n")
    monkeypatch.setenv("K0_CONSOLE_TOKEN", " c t\r\n")
    assert ScannerSettings().grpc_token == "s3cret" and env_token("K0_GRPC_TOKEN") == "s3cret"
    gateway = GatewaySettings()
    assert (gateway.grpc_token, gateway.console_token) == ("s3cret", "c t")
    assert (
        StackClient("v", {"scanner": "127.0.0.1:1", "retriever": "127.0.0.1:1", "offload": "127.0.0.1:1"}).token
        == "s3cret"
    )


def test_a_redis_url_without_its_scheme_is_refused_by_name(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("K0_REDIS_URL", "valkey.internal:6379")
    with pytest.raises(SettingsError, match="K0_REDIS_URL must start with redis://"):
        EmbedderSettings()
    monkeypatch.setenv("K0_REDIS_URL", "rediss://:pw@valkey.internal:6380/0")
    assert EmbedderSettings().redis_url.startswith("rediss://")


def test_optional_paths_and_choices(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("K0_MODEL_PATH", "")
    assert EmbedderSettings().model_path is None
    monkeypatch.setenv("K0_MODEL_PATH", str(tmp_path / "m.onnx"))
    assert EmbedderSettings().model_path == tmp_path / "m.onnx"
    assert RetrieverSettings(vault=tmp_path, data_dir=tmp_path, fusion="rrf").fusion == "rrf"


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("K0_FUSION", "borda", "one of convex, rrf"),
        ("K0_GRAPH_BOOST", "1.5", "< 1.0"),
        ("K0_WEIGHT_BM25", "-1", ">= 0.0"),
        ("K0_RRF_K", "sixty", "must be an integer"),
        ("K0_RRF_K", "2.5", "integer"),
        ("K0_RETRIEVER_ID", "a/b", "must match"),
        ("K0_EMBEDDER_GONE_S", "0", "> 0.0"),
    ],
)
def test_bad_values_are_refused_by_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable, value, says):
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match=variable) as caught:
        RetrieverSettings(vault=tmp_path, data_dir=tmp_path)
    assert says in str(caught.value)


def test_missing_required_unknown_arguments_and_cross_field_rules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    with pytest.raises(SettingsError, match="K0_VAULT is required"):
        ScannerSettings(data_dir=tmp_path)
    with pytest.raises(SettingsError, match="no setting vaults"):
        ScannerSettings(vaults=tmp_path, data_dir=tmp_path)
    monkeypatch.setenv("K0_WATCH", "maybe")
    with pytest.raises(SettingsError, match="K0_WATCH='maybe': must be true or false"):
        ScannerSettings(vault=tmp_path, data_dir=tmp_path)
    with pytest.raises(SettingsError, match="K0_CONSOLE_TOKEN"):
        GatewaySettings(vault=tmp_path, http_host="0.0.0.0")
    with pytest.raises(SettingsError, match="K0_PRICE_CURRENCY"):
        GatewaySettings(vault=tmp_path, price_currency="")
    shown = repr(GatewaySettings(vault=tmp_path, http_host="0.0.0.0", console_token="s3cret"))
    assert "s3cret" not in shown and "console_token='***'" in shown


def test_the_launcher_shares_the_cores_out_among_embedders(monkeypatch: pytest.MonkeyPatch):
    from k0maru_cli import _stack

    for cores, embedders, threads in ((2, 1, 2), (2, 2, 1), (1, 1, 1), (3, 2, 1), (16, 1, 4), (16, 4, 4), (16, 8, 2)):
        monkeypatch.setattr(_stack.os, "sched_getaffinity", lambda _pid, n=cores: set(range(n)))
        assert _stack.embedder_threads(embedders) == threads, (cores, embedders)
    monkeypatch.delenv("K0_QUERY_THREADS", raising=False)
    assert EmbedderSettings().query_threads == 0  # queries follow K0_THREADS


def test_a_service_started_without_an_address_binds_where_its_clients_look(tmp_path: Path):
    """A service started by hand with no K0_GRPC_ADDR bound a free port, while the services
    calling it default to 50051 (scanner), 50053 (retriever) and 50054 (offload): a hand-started
    topology never found itself. Each now binds its clients' default (the embedder and the
    gateway the ports compose gives them)."""
    from k0maru_offload.config import OffloadSettings

    gateway = GatewaySettings(vault=tmp_path)
    retriever = RetrieverSettings(vault=tmp_path, data_dir=tmp_path)
    assert (
        ScannerSettings(vault=tmp_path, data_dir=tmp_path).grpc_addr == gateway.scanner_addr == retriever.scanner_addr
    )
    assert retriever.grpc_addr == gateway.retriever_addr
    assert OffloadSettings(vault=tmp_path).grpc_addr == gateway.offload_addr
    assert EmbedderSettings().grpc_addr == "127.0.0.1:50052" and gateway.grpc_addr == "127.0.0.1:50055"
    ports = {s.grpc_addr for s in (gateway, retriever, EmbedderSettings(), OffloadSettings(vault=tmp_path))}
    assert len(ports) == 4  # and none shares another's
