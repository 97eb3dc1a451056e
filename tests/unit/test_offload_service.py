"""The offload gRPC service and the MCP tools in front of it, in-process, with a real Valkey.

A real OffloadServicer on a loopback port, the gateway's StackClient and the MCP server built by
build_mcp; tools are called through MCPServer.call_tool, as an agent host's request would be.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis
from mcp.server.mcpserver.exceptions import ToolError

from k0maru.v1 import offload_pb2, offload_pb2_grpc
from k0maru_common import TOKEN_LEDGER, CommitDays, GrpcService, StackClient
from k0maru_gateway._mcp import build_mcp
from k0maru_offload.config import OffloadSettings
from k0maru_offload.server import OffloadServicer, TokenLedger

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "corpus" / "go_subtest_nil_panic.log"


class Stack:
    def __init__(self, vault: Path, valkey_url: str) -> None:
        settings = OffloadSettings(vault=vault, redis_url=valkey_url, skills_export_dir=vault.parent / "hermes")
        self.redis = redis.Redis.from_url(valkey_url)
        self.service = GrpcService("k0maru.v1.Offload", "127.0.0.1:0")
        offload_pb2_grpc.add_OffloadServicer_to_server(
            OffloadServicer(settings, TokenLedger(self.redis), CommitDays(vault.resolve())), self.service.server
        )
        self.service.start()
        self.service.set_serving(True)
        addr = self.service.address
        self.client = StackClient(str(vault), {"scanner": addr, "retriever": addr, "offload": addr})
        self.mcp = build_mcp(self.client)

    def tool(self, name: str, **arguments: Any) -> Any:
        async def call() -> Any:
            return await self.mcp.call_tool(name, arguments)

        return anyio.run(call)

    def close(self) -> None:
        self.client.close()
        self.service.server.stop(0).wait()
        self.redis.close()


@pytest.fixture
def stack(vault: Path, valkey_url: str) -> Iterator[Stack]:
    s = Stack(vault, valkey_url)
    try:
        yield s
    finally:
        s.close()


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(result.structured_content)


def test_offload_answer_names_the_next_tool_not_the_cli(stack: Stack):
    text = LOG.read_text() + "\n".join(f"filler {i}" for i in range(500))
    answer = structured(stack.tool("offload_log", text=text))
    node = answer["node_id"]
    assert f'inspect_log_node(node_id="{node}", around_first_error=true)' in answer["summary"]
    assert "k0maru inspect" not in answer["summary"]
    assert answer["next_call"] == {
        "tool": "inspect_log_node",
        "arguments": {"node_id": node, "around_first_error": True},
    }
    assert answer["location"].endswith("store.go:11") and "TestNameOf/missing" in answer["first_error"]
    assert len(answer["mermaid"].splitlines()) <= 3
    # the suggested call works as suggested
    follow = structured(stack.tool("inspect_log_node", **answer["next_call"]["arguments"]))
    assert "nil pointer dereference" in follow["text"]


def test_the_ledger_counts_each_distinct_log_once(stack: Stack):
    text = "\n".join(f"line {i}" for i in range(200))
    for _ in range(3):
        stack.tool("offload_log", text=text)
    stack.tool("offload_log", text=text, task_id="other-task")  # same content, another file name
    stats = stack.client.offload.TokenStats(offload_pb2.TokenStatsRequest(), timeout=10)
    assert stats.offloads == 1 and stats.repeats == 3
    one = stack.client.offload.OffloadLog(offload_pb2.OffloadLogRequest(text=text), timeout=10)
    assert not one.counted and stats.original_tokens == one.original_tokens


def test_the_ledger_counts_streamed_lines(stack: Stack):
    text = "\n".join(f"compiling crate number {i} of 300" for i in range(300))
    reply = stack.client.offload.OffloadLog(offload_pb2.OffloadLogRequest(text=text, streamed_lines=50), timeout=10)
    assert reply.counted
    totals = {k.decode(): int(v) for k, v in stack.redis.hgetall(TOKEN_LEDGER).items()}
    streamed = totals["streamed_tokens"]
    assert streamed > 0 and totals["summary_tokens"] == reply.summary_tokens + streamed
    stats = stack.client.offload.TokenStats(offload_pb2.TokenStatsRequest(), timeout=10)
    assert stats.streamed_tokens == streamed


def test_inspect_line_numbers_past_32_bits_are_refused_with_a_reason(stack: Stack):
    node = structured(stack.tool("offload_log", text="x\n" * 80))["node_id"]
    with pytest.raises(ToolError, match=r"(?s)start_line.*less than or equal to 4294967295"):
        stack.tool("inspect_log_node", node_id=node, start_line=2**32 + 1)


def test_the_loadout_takes_only_vault_paths_as_superseded_and_goes_on_without_a_retriever(stack: Stack):
    """The gateway passes the retriever's superseded notes; a path out of the vault would be listed
    and said to exist or not. Where no retriever answers (here: none), the loadout is as found."""
    from k0maru.v1 import common_pb2, offload_pb2
    from k0maru_common import InvalidInput

    bad = offload_pb2.LoadoutRequest(
        superseded=[common_pb2.Supersession(path="a.md", superseded_by=["../../etc/passwd"])]
    )
    with pytest.raises(InvalidInput, match="escapes the vault"):
        stack.client.call(stack.client.offload.GetProjectLoadout, bad)
    assert "L0 project" in structured(stack.tool("get_project_loadout"))["markdown"]


def test_catastrophic_grep_through_mcp_is_invalid_argument(stack: Stack):
    node = structured(stack.tool("offload_log", text="\n".join(["a" * 3000 + "!"] * 60)))["node_id"]
    with pytest.raises(ToolError, match="simpler pattern"):
        stack.tool("inspect_log_node", node_id=node, grep="(a+)+$")


def test_tool_descriptions_say_when_to_call_each_tool(stack: Stack):
    async def tools() -> Any:
        return await stack.mcp.list_tools()

    described = {t.name: t.description or "" for t in anyio.run(tools)}
    intents = {
        "get_project_loadout": "taking over",
        "recall_memory": "fix this error",
        "read_note": "snippet is not enough",
        "offload_log": "more than ~50 lines",
        "inspect_log_node": "stack",
        "flush_session": "agreed on",
        "distill_session_skill": "playbook",
    }
    for name, phrase in intents.items():
        assert described[name].startswith("Call"), name
        assert phrase in described[name] or phrase in (stack.mcp.instructions or ""), name
        assert f"→ {name}" in (stack.mcp.instructions or "")


def test_distill_through_mcp_from_a_plain_trace_and_export(stack: Stack, vault: Path):
    trace = "$ pytest tests/test_db.py\nsqlite3.OperationalError: database is locked\nFix: use WAL\n$ pytest tests/test_db.py\n"
    answer = structured(stack.tool("distill_session_skill", trace=trace, export_hermes=True))
    assert answer["path"].startswith("skills/") and "database is locked" in answer["skill_markdown"]
    assert answer["searchable"] is False  # no scanner or retriever here: said so, the card written all the same
    exported = list((vault.parent / "hermes").glob("*.md"))
    assert len(exported) == 1 and answer["exported_path"] == str(exported[0])
    structured(stack.tool("distill_session_skill", trace=trace, export_hermes=True))  # again: nothing overwritten
    assert sorted(p.name for p in (vault.parent / "hermes").glob("*.md")) == [exported[0].name]


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def test_answers_are_one_line_of_json_for_the_model_and_whole_for_the_host(stack: Stack):
    """The text an agent's model reads is the answer as compact JSON without null fields (what the
    ledger counts); the structured content is the whole answer, as each tool's output schema says."""

    async def tools() -> Any:
        return await stack.mcp.list_tools()

    assert all(t.output_schema for t in anyio.run(tools))
    log = "\n".join(f"step {i}: ok" for i in range(120)) + "\nError: the disk is full\n"
    for text in (log, "two\nlines\n"):
        result = stack.tool("offload_log", text=text)
        (block,) = result.content
        assert "\n" not in block.text and json.loads(block.text) == _without_nulls(result.structured_content)
    assert result.structured_content["next_call"] is None and "next_call" not in json.loads(block.text)
