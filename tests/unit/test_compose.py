"""docker-compose.yml checked offline: the Compose JSON schema, cross-references, and settings names."""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from k0maru_embedder.config import EmbedderSettings
from k0maru_gateway.config import GatewaySettings
from k0maru_offload.config import OffloadSettings
from k0maru_retriever.config import RetrieverSettings
from k0maru_scanner.config import ScannerSettings

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = Path(__file__).resolve().parents[1] / "fixtures" / "compose.schema.json"  # from the npm package dclint 3.1.0
SETTINGS = {
    "scanner": ScannerSettings,
    "embedder": EmbedderSettings,
    "retriever": RetrieverSettings,
    "retriever-2": RetrieverSettings,
    "offload": OffloadSettings,
    "gateway": GatewaySettings,
}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_schema_valid(compose: dict):
    import json

    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator(schema).validate(
        compose
    )  # the schema says draft-07 with an https URL jsonschema does not know


def test_cross_references(compose: dict):
    services = compose["services"]
    for name, svc in services.items():
        for dep in svc.get("depends_on", {}):
            assert dep in services, f"{name} depends on unknown {dep}"
            # the gateway starts beside a retriever still building its index (it answers meanwhile)
            started_only = (name, dep) == ("gateway", "retriever")
            assert svc["depends_on"][dep]["condition"] == ("service_started" if started_only else "service_healthy")
            assert "healthcheck" in services[dep], f"{dep} has no health check"
        for net in svc.get("networks", []):  # a list, or a map with aliases
            assert net in compose["networks"]
        for vol in svc.get("volumes", []):
            source = vol.split(":")[0]
            if not source.startswith(("$", ".", "/")):
                assert source in compose["volumes"], f"{name}: volume {source} undefined"
        if "build" in svc:
            dockerfile = ROOT / svc["build"]["dockerfile"]
            assert dockerfile.exists() and svc["build"]["context"] == "."
            text = dockerfile.read_text()
            assert "USER " in text and text.count("FROM ") >= 2 and "k0maru_${SERVICE}" in text
            assert name.split("-")[0] == svc["build"]["args"]["SERVICE"]  # retriever-2 runs the retriever
            assert (ROOT / "requirements" / f"{name.split('-')[0]}.lock").is_file(), f"no dependency set for {name}"
        assert "healthcheck" in svc


def test_environment_names_are_settings(compose: dict):
    for name, cls in SETTINGS.items():
        env = compose["services"][name]["environment"]
        fields = set(cls.FIELDS)
        for key in env:
            assert key.startswith("K0_") and key[3:].lower() in fields, f"{name}: {key} is not a {cls.__name__} field"


def test_embedder_scales_and_console_is_loopback_and_token_protected(compose: dict):
    embedder = compose["services"]["embedder"]
    assert "container_name" not in embedder and "ports" not in embedder
    # a team names its model (the README said so; nothing forwarded it): the English preset unless set
    assert embedder["environment"]["K0_MODEL"] == "${K0_MODEL:-minilm-l6-int8}"
    gateway = compose["services"]["gateway"]
    assert all(p.startswith("127.0.0.1:") for p in gateway["ports"])
    assert re.search(r"\$\{K0_CONSOLE_TOKEN:\?", gateway["environment"]["K0_CONSOLE_TOKEN"])
    assert compose["services"]["retriever"]["environment"]["K0_EMBEDDER_TARGET"].startswith("dns:///embedder")


def test_second_retriever_is_a_distinct_reader_the_gateway_balances_over(compose: dict):
    first, second = compose["services"]["retriever"], compose["services"]["retriever-2"]
    assert second["profiles"] == ["reads"] and "retriever" in second["networks"]["k0"]["aliases"]
    assert second["environment"]["K0_RETRIEVER_ID"] and not first["environment"].get("K0_RETRIEVER_ID")
    assert {k: v for k, v in second["environment"].items() if k != "K0_RETRIEVER_ID"} == first["environment"]
    assert first["volumes"] != second["volumes"]  # each its own BM25 index and state
    assert compose["services"]["gateway"]["environment"]["K0_RETRIEVER_ADDR"] == "dns:///retriever:50053"


def test_every_service_bound_beyond_loopback_requires_the_grpc_token(compose: dict):
    for name in SETTINGS:
        env = compose["services"][name]["environment"]
        assert not env["K0_GRPC_ADDR"].startswith("127.0.0.1:")
        assert re.search(r"\$\{K0_GRPC_TOKEN:\?", env["K0_GRPC_TOKEN"]), name


def _declared(pyproject: Path) -> set[str]:
    """The distribution names a pyproject depends on, normalised (PEP 503), the workspace's own left out."""
    import tomllib

    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps}
    return {n for n in names if not n.startswith("k0maru-")}


def test_each_services_dependency_set_holds_what_it_declares():
    """An image installs its service from `requirements/<service>.lock` with --no-deps: the scanner
    declared `regex` two days after its lock was exported, and its image could not start."""
    common = _declared(ROOT / "libs" / "common" / "pyproject.toml")
    for service in ("scanner", "embedder", "retriever", "offload", "gateway"):
        lock = (ROOT / "requirements" / f"{service}.lock").read_text()
        locked = {m.lower().replace("_", "-") for m in re.findall(r"^([A-Za-z0-9_.-]+)==", lock, re.MULTILINE)}
        missing = (common | _declared(ROOT / "services" / service / "pyproject.toml")) - locked
        assert not missing, f"requirements/{service}.lock lacks {sorted(missing)}: run scripts/lock.sh"
