"""deploy/k8s checked offline: Kubernetes' own JSON schemas (kubernetes-validate, strict), the KEDA
ScaledObject against the shape KEDA documents for the fields used, and agreement with
docker-compose.yml and the services' settings."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from k0maru_common import EMBED_GROUP, JOBS_STREAM
from tests.unit.test_compose import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
KUBERNETES = "1.33.0"  # the oldest minor still supported upstream when this was written

# KEDA v2 ScaledObject (keda.sh/v1alpha1), the fields this deployment uses, as KEDA's reference
# documents them (Scaling Deployments: ScaledObject spec; Redis Streams scaler).
REDIS_STREAMS_KEYS = {
    "address", "addressFromEnv", "host", "hostFromEnv", "port", "portFromEnv", "username", "usernameFromEnv",
    "password", "passwordFromEnv", "stream", "consumerGroup", "pendingEntriesCount", "streamLength", "lagCount",
    "activationLagCount", "databaseIndex", "enableTLS", "unsafeSsl",
}  # fmt: skip
_INT_STRING = {"type": "string", "pattern": r"^[0-9]+$"}
SCALED_OBJECT = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "keda.sh/v1alpha1"},
        "kind": {"const": "ScaledObject"},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}},
        },
        "spec": {
            "type": "object",
            "required": ["scaleTargetRef", "triggers"],
            "additionalProperties": False,
            "properties": {
                "scaleTargetRef": {
                    "type": "object",
                    "required": ["name"],
                    "additionalProperties": False,
                    "properties": {
                        "name": {"type": "string"},
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "envSourceContainerName": {"type": "string"},
                    },
                },
                "minReplicaCount": {"type": "integer", "minimum": 0},
                "maxReplicaCount": {"type": "integer", "minimum": 1},
                "pollingInterval": {"type": "integer", "minimum": 1},
                "cooldownPeriod": {"type": "integer", "minimum": 0},
                "idleReplicaCount": {"type": "integer", "minimum": 0},
                "triggers": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["type", "metadata"],
                        "additionalProperties": False,
                        "properties": {
                            "type": {"const": "redis-streams"},
                            "name": {"type": "string"},
                            "metadata": {
                                "type": "object",
                                "required": ["stream", "consumerGroup"],
                                "propertyNames": {"enum": sorted(REDIS_STREAMS_KEYS)},
                                "additionalProperties": {"type": "string"},  # KEDA metadata values are strings
                                "properties": {
                                    "pendingEntriesCount": _INT_STRING,
                                    "streamLength": _INT_STRING,
                                    "lagCount": _INT_STRING,
                                    "activationLagCount": _INT_STRING,
                                },
                                "oneOf": [
                                    {"required": ["pendingEntriesCount"]},
                                    {"required": ["streamLength"]},
                                    {"required": ["lagCount"]},
                                ],
                            },
                        },
                    },
                },
            },
        },
    },
}


@pytest.fixture(scope="module")
def kustomization() -> dict[str, Any]:
    return yaml.safe_load((K8S / "kustomization.yaml").read_text())


@pytest.fixture(scope="module")
def resources(kustomization: dict[str, Any]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for name in kustomization["resources"]:
        docs += [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]
    return docs


def _by_kind(resources: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {r["metadata"]["name"]: r for r in resources if r["kind"] == kind}


def _workloads(resources: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {**_by_kind(resources, "Deployment"), **_by_kind(resources, "StatefulSet")}


def test_every_file_is_listed_and_valid_against_the_kubernetes_schemas(resources: list[dict[str, Any]]):
    listed = set(yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"])
    assert listed == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    for r in resources:
        if r["apiVersion"].startswith("keda.sh/"):
            continue
        kubernetes_validate.validate(r, KUBERNETES, strict=True)  # raises on any unknown or wrong field


def test_the_validator_refuses_a_broken_manifest(resources: list[dict[str, Any]]):
    broken = yaml.safe_load(yaml.safe_dump(_workloads(resources)["embedder"]))
    broken["spec"]["template"]["spec"]["containers"][0]["env"][0]["valu"] = "typo"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


def test_keda_scaled_object_scales_the_embedders_on_the_job_stream(resources: list[dict[str, Any]]):
    (scaled,) = [r for r in resources if r["kind"] == "ScaledObject"]
    jsonschema.Draft7Validator(SCALED_OBJECT).validate(scaled)
    spec = scaled["spec"]
    assert spec["scaleTargetRef"]["name"] in _by_kind(resources, "Deployment")
    assert spec["scaleTargetRef"]["name"] == "embedder" and spec["minReplicaCount"] >= 1  # queries need one
    (trigger,) = spec["triggers"]
    meta = trigger["metadata"]
    assert meta["stream"] == JOBS_STREAM and meta["consumerGroup"] == EMBED_GROUP
    host, port = meta["address"].split(":")
    service = _by_kind(resources, "Service")[host.split(".")[0]]
    namespace = yaml.safe_load((K8S / "kustomization.yaml").read_text())["namespace"]
    assert host in (service["metadata"]["name"], f"{service['metadata']['name']}.{namespace}.svc.cluster.local")
    assert int(port) in [p["port"] for p in service["spec"]["ports"]]
    broken = {**scaled, "spec": {**spec, "triggers": [{**trigger, "metadata": {**meta, "lagCount": 500}}]}}
    with pytest.raises(jsonschema.ValidationError):  # a number where KEDA wants a string
        jsonschema.Draft7Validator(SCALED_OBJECT).validate(broken)


def test_services_select_their_pods_and_name_real_ports(resources: list[dict[str, Any]]):
    workloads = _workloads(resources)
    for name, svc in _by_kind(resources, "Service").items():
        pods = [w for w in workloads.values() if w["spec"]["template"]["metadata"]["labels"] == svc["spec"]["selector"]]
        assert len(pods) == 1, name
        ports = {p["name"] for c in pods[0]["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])}
        assert {p["targetPort"] for p in svc["spec"]["ports"]} <= ports, name
    for headless in ("embedder", "retriever"):  # dns:///name:port resolves to every replica
        assert _by_kind(resources, "Service")[headless]["spec"]["clusterIP"] == "None"
    retriever = workloads["retriever"]
    assert retriever["kind"] == "StatefulSet" and retriever["spec"]["volumeClaimTemplates"]  # one index each


def test_environment_matches_compose_and_settings(resources: list[dict[str, Any]]):
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    workloads = _workloads(resources)
    for service in ("scanner", "embedder", "retriever", "offload", "gateway"):
        (container,) = workloads[service]["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e for e in container["env"]}
        fields = set(SETTINGS[service].FIELDS)
        assert all(k.startswith("K0_") and k[3:].lower() in fields for k in env), service
        expected = set(compose[service]["environment"]) | ({"K0_RETRIEVER_ID"} if service == "retriever" else set())
        assert set(env) == expected, service
        for key, raw in compose[service]["environment"].items():
            if key.endswith("_TOKEN"):  # from the Secret, never written here
                ref = env[key]["valueFrom"]["secretKeyRef"]
                assert ref["name"] == "k0maru-tokens" and "value" not in env[key]
            else:  # compose's `${K0_MODEL:-minilm-l6-int8}`: its default here
                default = re.fullmatch(r"\$\{\w+:-(.*)\}", str(raw))
                assert env[key]["value"] == (default.group(1) if default else str(raw)), (service, key)
        probe = container["readinessProbe"]["exec"]["command"]
        assert probe == compose[service]["healthcheck"]["test"][1:], service
    ref = workloads["retriever"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "K0_RETRIEVER_ID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in ref


def test_the_vault_is_mounted_where_compose_mounts_it(resources: list[dict[str, Any]]):
    """Each service reads the vault's files in k8s as in compose: the scanner and the retrievers
    (read_note reads the note's file; without the volume every note came back "as indexed")
    read-only, the offload writing notes; the embedder and the gateway never."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    workloads = _workloads(resources)
    expected = {"scanner": True, "retriever": True, "offload": False}  # read-only?
    for service in ("scanner", "embedder", "retriever", "offload", "gateway"):
        (container,) = workloads[service]["spec"]["template"]["spec"]["containers"]
        mounts = {m["mountPath"]: m.get("readOnly", False) for m in container.get("volumeMounts", [])}
        volumes = [str(v) for v in compose[service].get("volumes", [])]
        in_compose = [re.search(r":/vault(:ro)?$", v) for v in volumes]
        if service in expected:
            assert mounts.get("/vault") is expected[service], service
            found = [m for m in in_compose if m]
            assert len(found) == 1 and bool(found[0].group(1)) is expected[service], service
        else:
            assert "/vault" not in mounts and not any(in_compose), service
    reader = [str(v) for v in compose["retriever-2"]["volumes"]]
    assert any(v.endswith(":/vault:ro") for v in reader)
