"""Generated hostile input for the agent-facing surfaces: MCP tool arguments (the gateway's MCP
server, in memory and over stdio) and the console's HTTP API (a real server on port 0).

Every answer is a result or a clear error (a tool error / a JSON-RPC error / a 4xx with a
reason), never a crash, a 500 or a hang, and nothing is written outside the vault (the skill
export folder excepted: it is configured to a folder of the test)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from k0maru_cli import Launcher, StackState
from k0maru_gateway._mcp import build_mcp
from tests.conftest import MCP_TOOLS, write_notes

pytestmark = pytest.mark.integration
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
CALL_TIMEOUT_S = 60  # a hang fails the test
START_TIMEOUT_S = 300  # a process's imports, on a busy machine


@dataclass
class Stack:
    root: Path
    vault: Path
    skills: Path
    state: StackState


def tree(root: Path, skip: set[Path]) -> dict[str, int]:
    """Every file under `root` but those under `skip`: path → size."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if Path(dirpath, d) not in skip]
        for name in filenames:
            path = Path(dirpath, name)
            out[str(path.relative_to(root))] = path.lstat().st_size
    return out


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("hostile-api")
    vault = write_notes(
        root / "vault",
        {
            "db/sqlite busy.md": "---\ntags: [sqlite]\n---\n# SQLite busy\n\nSQLITE_BUSY: set busy_timeout.\n",
            "notes/lighthouse.md": "# Lighthouse\n\nthe keeper's log [[sqlite busy]]\n",
        },
    )
    skills = root / "skills-export"
    launcher = Launcher(vault, root / "data", embedders=0, http_port=0, extra_env={"K0_SKILLS_EXPORT_DIR": str(skills)})
    state = launcher.start()
    outside_before = tree(root, {vault, root / "data", skills})
    try:
        yield Stack(root, vault, skills, state)
        assert tree(root, {vault, root / "data", skills}) == outside_before, "a write outside the vault"
        assert all(p.parent == skills for p in skills.rglob("*") if p.is_file())
    finally:
        launcher.stop()


# --- values: lone surrogates, huge strings, deep nesting, odd numbers -------------------------

ODD_TEXT = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", " ", "\ud800", "a\udfffb", "\x00", "../../../etc/passwd", "/etc/passwd", "..", "C:\\x", "#"]),
    st.integers(10_000, 200_000).map(lambda n: "x" * n),
    st.integers(1, 3000).map(lambda n: "a/" * n),
)
ODD_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 2**31, 2**32, 2**63, 2**64, -(2**63)]),
    st.floats(allow_nan=True, allow_infinity=True),
)


def nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


ANY_VALUE = st.one_of(
    ODD_TEXT,
    ODD_NUMBERS,
    st.booleans(),
    st.none(),
    st.lists(ODD_TEXT, max_size=5),
    st.integers(20, 200).map(nested),  # deeper: the SDK client cannot send it (the stdio test below can)
    st.dictionaries(st.text(max_size=5), ODD_TEXT, max_size=3),
)


def tool_arguments(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments for one tool: each property absent, a value of its own type, or anything at all;
    sometimes an unknown extra key."""
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for name, spec in schema.get("properties", {}).items():
        kinds = {spec.get("type")} | {s.get("type") for s in spec.get("anyOf", [])}
        own = (
            ODD_TEXT
            if "string" in kinds
            else ODD_NUMBERS
            if kinds & {"integer", "number"}
            else st.booleans()
            if "boolean" in kinds
            else st.lists(ODD_TEXT, max_size=5)
        )
        fields[name] = st.one_of(own, own, ANY_VALUE)
    extra = st.dictionaries(st.sampled_from(["zzz", "__proto__", "query\x00"]), ANY_VALUE, max_size=1)
    return st.tuples(st.fixed_dictionaries({}, optional=fields), extra).map(lambda pair: {**pair[1], **pair[0]})


def error_text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def clear(message: str) -> bool:
    """A message an agent can act on: not empty, no traceback, no gRPC internals."""
    bad = ("Traceback", "INTERNAL", "StatusCode.", "Exception in", "Stream removed")
    return bool(message.strip()) and not any(b in message for b in bad) and len(message) < 5000


@pytest.mark.parametrize("tool", MCP_TOOLS)
def test_mcp_tool_arguments(stack: Stack, tool: str):
    server = build_mcp(stack.state.client())

    async def schema() -> dict[str, Any]:
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return dict(tools[tool].input_schema)

    input_schema = anyio.run(schema)
    answers: dict[str, int] = {"result": 0, "error": 0}

    @SETTINGS
    @given(arguments=tool_arguments(input_schema))
    def check(arguments: dict[str, Any]) -> None:
        async def call() -> Any:
            with anyio.fail_after(CALL_TIMEOUT_S):
                async with Client(server) as client:
                    return await client.call_tool(tool, arguments)

        result = anyio.run(call)
        if result.is_error:
            message = error_text(result)
            assert clear(message), (arguments.keys(), message[:500])
            answers["error"] += 1
        else:
            answers["result"] += 1

    check()
    assert answers["error"] > 0  # the generator does reach the refusals


# --- MCP over stdio: lines the SDK cannot read get an answer ------------------------------------

WIRE_SERVER = """
from k0maru_common import StackClient
from k0maru_gateway import serve_mcp_stdio
serve_mcp_stdio(StackClient("/nowhere", {n: "127.0.0.1:1" for n in ("scanner", "retriever", "offload")}))
"""


def request_line(request_id: int, arguments_json: str) -> str:
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
        f'"params":{{"name":"recall_memory","arguments":{{"query":{arguments_json}}}}}}}'
    )


WIRE_VALUES = st.one_of(
    st.sampled_from(['"\\ud800"', '"a\\udfff"', '"\\udc00\\ud800"']),
    st.integers(300, 20_000).map(lambda n: "[" * n + "]" * n),
    st.integers(300, 5_000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.text(alphabet='{}[]",:\\u0123d8', max_size=30),
)


class WireServer:
    """The gateway's MCP server over stdio in its own process (no stack behind it: the lines
    tested here never reach a service); replies are read by a thread."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WIRE_SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        init = {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        self.send([json.dumps(init)])
        assert self.next(START_TIMEOUT_S)["id"] == "init"
        self.send([json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})])

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.replies.put(json.loads(line))

    def send(self, lines: list[str]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("".join(line + "\n" for line in lines))
        self.proc.stdin.flush()

    def next(self, timeout_s: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        return self.replies.get(timeout=timeout_s)  # queue.Empty: a line left unanswered

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self._reader.join(30)  # it ends at EOF
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def test_mcp_stdio_answers_every_unreadable_line():
    """The issue's repro: a lone surrogate or 5,000-deep nesting got no answer at all."""
    server = WireServer()
    counter = iter(range(1, 1_000_000))
    try:

        @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
        @given(values=st.lists(WIRE_VALUES, min_size=1, max_size=3))
        def check(values: list[str]) -> None:
            ids = [next(counter) for _ in values]
            marker = next(counter)  # a valid request after them: the session goes on
            server.send([*(request_line(i, v) for i, v in zip(ids, values, strict=True)), tools_list(marker)])
            replies = [server.next() for _ in range(len(values) + 1)]  # one answer per line, none missing
            assert marker in [r.get("id") for r in replies], (values, replies)
            for reply in replies:
                if reply.get("id") == marker:
                    continue
                assert reply["id"] in ids or reply["id"] is None, reply
                if "error" in reply:
                    assert reply["error"]["code"] < 0 and clear(reply["error"]["message"]), reply
                elif reply["result"].get("isError"):
                    assert clear(error_text_json(reply["result"])), reply

        check()
    finally:
        server.close()


def tools_list(request_id: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})


def error_text_json(result: dict[str, Any]) -> str:
    return " ".join(c.get("text", "") for c in result.get("content", []))


# --- the console's HTTP API ----------------------------------------------------------------------

ROUTES = {
    "/api/search": [
        "q",
        "mode",
        "limit",
        "explain",
        "diary",
        "prefix",
        "tag",
        "tag_weight",
        "beta",
        "tagmemo",
        "core_tags",
        "dedup",
    ],
    "/api/note": ["path"],
    "/api/graph": ["path", "hops", "max_nodes"],
    "/api/logs": ["limit"],
    "/api/logs/{node}": ["grep", "start", "end", "context", "around_error"],
    "/api/status": [],
    "/healthz": [],
}
MAX_TARGET = 12_000  # below what a client sends and the server's HTTP parser reads in one request line
QUERY_TEXT = st.one_of(
    st.one_of(ODD_TEXT.filter(lambda s: len(s) < 3000), st.integers(1000, 2500).map(lambda n: "a/" * n)).map(
        lambda s: urllib.parse.quote(s.encode("utf-8", "surrogatepass"), safe="")
    ),
    st.binary(max_size=20).map(lambda b: urllib.parse.quote(b, safe="")),  # undecodable bytes, %ED%A0%80
    st.sampled_from(["1", "0", "-1", "true", "nan", "inf", "1e999", "9" * 5000, "0x10", "%", "%zz", "+"]),
)


@st.composite
def console_requests(draw: st.DrawFn) -> str:
    route = draw(st.sampled_from(sorted(ROUTES)))
    if "{node}" in route:
        node = draw(st.one_of(st.sampled_from(["node_0123456789abcdef", "..", "%2e%2e%2f"]), QUERY_TEXT))
        route = route.replace("{node}", node or "x")
    names = ROUTES[route if route in ROUTES else "/api/logs/{node}"]
    pairs = draw(st.lists(st.tuples(st.sampled_from([*names, "zzz"]), QUERY_TEXT), max_size=5))
    target = route + ("?" + "&".join(f"{k}={v}" for k, v in pairs) if pairs else "")
    return target[:MAX_TARGET]


def test_console_api_generated_requests(stack: Stack):
    base = stack.state.console_url.rstrip("/")
    statuses: dict[int, int] = {}
    with httpx.Client(timeout=CALL_TIMEOUT_S) as http:

        @SETTINGS
        @given(target=console_requests())
        def check(target: str) -> None:
            response = http.get(base + target)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            assert response.status_code < 500 or response.status_code == 503, (target[:300], response.text[:500])
            if response.status_code >= 400:  # the API's JSON {"error": reason}, or the router's "Not Found"
                json_body = response.headers.get("content-type", "").startswith("application/json")
                reason = response.json().get("error", "") if json_body else response.text
                assert clear(reason), (target[:300], response.text[:500])

        check()
    assert any(400 <= code < 500 for code in statuses), statuses
