"""The MCP server (stdio): k0maru's tools for agents, each a thin gRPC call.

Tool errors an agent can act on raise ToolError with the service's message; every answer
names the vault it came from. Logs go to stderr: stdout is the wire.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from k0maru.v1 import offload_pb2, retriever_pb2
from k0maru_common import K0Error

from ._clients import SEARCH_MODES, StackClient, mode_name

T = TypeVar("T")
log = logging.getLogger(__name__)

OUTCOME_NAMES = {
    offload_pb2.FLUSH_OUTCOME_CREATED: "created",
    offload_pb2.FLUSH_OUTCOME_UP_TO_DATE: "up_to_date",
    offload_pb2.FLUSH_OUTCOME_VERSIONED: "versioned",
}


class Explain(BaseModel):
    bm25_rank: int | None
    bm25_score: float | None
    vector_rank: int | None
    vector_score: float | None
    graph_boost: float
    fused_score: float


class Hit(BaseModel):
    path: str
    title: str
    snippet: str
    score: float
    lines: str
    tags: list[str]
    explain: Explain | None = None


class RecallResult(BaseModel):
    vault: str
    query: str
    mode_used: str
    vector_coverage: float
    hits: list[Hit]


class OffloadAnswer(BaseModel):
    vault: str
    offloaded: bool
    node_id: str
    summary: str
    mermaid: str
    original_tokens: int
    summary_tokens: int


class InspectAnswer(BaseModel):
    vault: str
    node_id: str
    total_lines: int
    text: str


class FlushAnswer(BaseModel):
    vault: str
    path: str
    outcome: str


class DistillAnswer(BaseModel):
    vault: str
    path: str
    outcome: str
    skill_markdown: str


class LoadoutAnswer(BaseModel):
    vault: str
    markdown: str


def _call(fn: Callable[[Any, float], T], request: Any, timeout: float = 30.0) -> T:
    try:
        return fn(request, timeout)
    except K0Error as exc:
        raise ToolError(str(exc)) from exc


def build_mcp(client: StackClient) -> MCPServer:
    server = MCPServer("k0maru", instructions=f"Long-term memory over the Markdown vault at {client.vault}.")
    vault = client.vault

    @server.tool()
    def recall_memory(
        query: Annotated[
            str, Field(description="what to remember: an error code, a symbol, a question, a topic (any language)")
        ],
        limit: Annotated[int, Field(ge=1, le=50, description="how many notes to return")] = 5,
        mode: Annotated[str, Field(description="hybrid (default), bm25 or vector")] = "hybrid",
        folder: Annotated[
            str, Field(description="only notes under this vault folder (a diary), e.g. 'projects/'")
        ] = "",
        tags: Annotated[list[str] | None, Field(description="only notes carrying all these tags")] = None,
        explain: Annotated[bool, Field(description="include why each note ranked where it did")] = False,
    ) -> RecallResult:
        """Search the vault's notes (BM25 + vectors + wikilink graph) for past decisions, fixes, and knowledge.

        Use when asked "have we seen this before", "what did we decide about X", "find the note on Y",
        or before solving an error that might already be documented."""
        if mode not in SEARCH_MODES:
            raise ToolError(f"mode must be one of {', '.join(SEARCH_MODES)}")
        if not query.strip():
            raise ToolError("query is empty: say what to look for")
        scope = retriever_pb2.Scope(path_prefixes=[folder] if folder else [], tags=tags or [])
        reply = _call(
            lambda r, t: client.call(client.retriever.Search, r, t),
            retriever_pb2.SearchRequest(
                query=query, limit=limit, mode=SEARCH_MODES[mode], scope=scope, explain=explain
            ),
        )
        hits = []
        for h in reply.hits:
            ex = None
            if explain:
                e = h.explain
                ex = Explain(
                    bm25_rank=e.bm25.rank if e.bm25.present else None,
                    bm25_score=e.bm25.score if e.bm25.present else None,
                    vector_rank=e.vector.rank if e.vector.present else None,
                    vector_score=e.vector.score if e.vector.present else None,
                    graph_boost=e.graph_boost,
                    fused_score=e.fused_score,
                )
            hits.append(
                Hit(
                    path=h.path,
                    title=h.title,
                    snippet=h.snippet,
                    score=round(h.score, 6),
                    lines=f"{h.start_line}-{h.end_line}",
                    tags=list(h.tags),
                    explain=ex,
                )
            )
        result = RecallResult(
            vault=vault,
            query=query,
            mode_used=mode_name(reply.mode_used),
            vector_coverage=round(reply.vector_coverage, 4),
            hits=hits,
        )
        if hits:  # the ledger: what handing over the whole notes would have cost (best effort)
            record = offload_pb2.RecallRecord(paths=[h.path for h in hits], answer=result.model_dump_json())
            try:
                client.call(client.offload.RecordRecall, record, 5.0)
            except K0Error as exc:
                log.warning("recall not recorded in the token ledger: %s", exc)
        return result

    @server.tool()
    def offload_log(
        text: Annotated[str, Field(description="the full output of a command, build or test run")],
        task_id: Annotated[str, Field(description="optional short task name (letters, digits, _ and -)")] = "",
        threshold: Annotated[
            int, Field(ge=0, le=100_000, description="lines above which the log is offloaded (0 = default 50)")
        ] = 0,
    ) -> OffloadAnswer:
        """Move a long log out of the context: returns the first error, its file:line, counts and a node id.

        Use for any output longer than ~50 lines (cargo/pytest/go/tsc/gcc/javac/npm runs). Then call
        inspect_log_node for exactly the slice you need."""
        r = _call(
            lambda q, t: client.call(client.offload.OffloadLog, q, t),
            offload_pb2.OffloadLogRequest(text=text, task_id=task_id, threshold=threshold),
        )
        return OffloadAnswer(
            vault=vault,
            offloaded=r.offloaded,
            node_id=r.node_id,
            summary=r.summary,
            mermaid=r.mermaid,
            original_tokens=r.original_tokens,
            summary_tokens=r.summary_tokens,
        )

    @server.tool()
    def inspect_log_node(
        node_id: Annotated[str, Field(description="the node id offload_log returned, e.g. node_0123456789abcdef")],
        start_line: Annotated[int, Field(ge=0, description="first line (1-based); 0 = start")] = 0,
        end_line: Annotated[int, Field(ge=0, description="last line, inclusive; 0 = end")] = 0,
        grep: Annotated[str, Field(description="regular expression; returns matching lines with context")] = "",
        context: Annotated[
            int, Field(ge=0, le=200, description="lines of context around grep matches or the first error")
        ] = 0,
        around_first_error: Annotated[bool, Field(description="return the region around the first error")] = False,
    ) -> InspectAnswer:
        """Read part of an offloaded log: a line range, grep matches, or the region around the first error."""
        r = _call(
            lambda q, t: client.call(client.offload.InspectLogNode, q, t),
            offload_pb2.InspectRequest(
                node_id=node_id,
                start_line=start_line,
                end_line=end_line,
                grep=grep,
                context=context,
                around_first_error=around_first_error,
            ),
        )
        return InspectAnswer(
            vault=vault,
            node_id=r.node_id,
            total_lines=r.total_lines,
            text="\n".join(f"{ln.number:>6}  {ln.text}" for ln in r.lines),
        )

    @server.tool()
    def flush_session(
        title: Annotated[str, Field(description="title of the note to write")],
        content: Annotated[str, Field(description="Markdown body: what was decided, learned or done")],
        category: Annotated[
            str, Field(description="decision, log, concept, skill, or a folder; default: the vault's log folder")
        ] = "",
        tags: Annotated[list[str] | None, Field(description="tags without #")] = None,
        related_notes: Annotated[list[str] | None, Field(description="note names to link as [[wikilinks]]")] = None,
    ) -> FlushAnswer:
        """Save what this session decided or learned as a note in the vault, following the vault's conventions.

        Never overwrites: equal content is 'up_to_date', a different note with the same name gets -v2, -v3."""
        r = _call(
            lambda q, t: client.call(client.offload.FlushSession, q, t),
            offload_pb2.FlushRequest(
                title=title,
                content=content,
                category=category,
                tags=tags or [],
                related_notes=related_notes or [],
                source="mcp flush_session",
            ),
        )
        return FlushAnswer(vault=vault, path=r.path, outcome=OUTCOME_NAMES.get(r.outcome, "unknown"))

    @server.tool()
    def distill_session_skill(
        trace: Annotated[str, Field(description="a raw trace: commands run, the error, the fix")] = "",
        node_id: Annotated[str, Field(description="or the node id of an offloaded log")] = "",
        title: Annotated[str, Field(description="optional title of the skill card")] = "",
    ) -> DistillAnswer:
        """Turn a solved failure into a reusable skill card (signature, root cause, fix, verification) in the skills folder."""
        if not trace.strip() and not node_id.strip():
            raise ToolError("give either trace or node_id")
        r = _call(
            lambda q, t: client.call(client.offload.DistillSkill, q, t),
            offload_pb2.DistillRequest(trace=trace, node_id=node_id, title=title),
        )
        return DistillAnswer(
            vault=vault, path=r.path, outcome=OUTCOME_NAMES.get(r.outcome, "unknown"), skill_markdown=r.skill_markdown
        )

    @server.tool()
    def get_project_loadout(
        max_chars: Annotated[int, Field(ge=500, le=50_000, description="upper bound on the answer's size")] = 6000,
    ) -> LoadoutAnswer:
        """Start here on a project: its rules files, folder and naming conventions, hub notes, recent decisions and skills."""
        r = _call(
            lambda q, t: client.call(client.offload.GetProjectLoadout, q, t),
            offload_pb2.LoadoutRequest(max_chars=max_chars),
        )
        return LoadoutAnswer(vault=vault, markdown=r.markdown)

    return server
