"""The MCP server (stdio): k0maru's tools for agents, each a thin gRPC call.

Tool errors an agent can act on raise ToolError with the service's message; every answer
names the vault it came from. Logs go to stderr: stdout is the wire.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field, ValidationError

from k0maru.v1 import common_pb2, offload_pb2, retriever_pb2, scanner_pb2
from k0maru_common import OFFLOAD_THRESHOLD_LINES, SEARCH_MODES, K0Error, StackClient, as_folder, mode_name, utc_day

from ._answers import partial_channels
from ._embeds import embedded_part

T = TypeVar("T")

# When to call which tool (the seed's intent table, §3): what the user says → the tool.
INTENTS = """When to call which tool:
- "I'm taking over this service, walk me through its rules" / starting work on a project → get_project_loadout
- "How do I fix this error? Have we seen it before?" / "what did we decide about X" → recall_memory
- "what did we write this week?" / "the latest notes tagged decision" → recall_memory with query "" and since 7d / tags
- a note recall_memory found says more than its snippet, or a note's name is known → read_note
- a command, build or test run printed more than ~50 lines → offload_log (never paste the log into the context)
- "the tests printed a long error, show me the stack trace" → inspect_log_node (the next_call offload_log gave)
- "save the lock-renewal plan we just agreed on" / a decision or lesson worth keeping → flush_session
- "turn this compiler error into a troubleshooting playbook" / a failure just solved → distill_session_skill"""
MAX_LINE = 2**32 - 1  # line numbers are uint32 on the wire
MAX_EMBEDS = 8  # read_note: embedded parts shown per answer
EMBED_CHARS = 2_000  # ... each at most this long
log = logging.getLogger(__name__)

SEARCHABLE_WAIT_S = 10.0  # flush_session, distill_session_skill: how long their note is waited for
SEARCHABLE_POLL_S = 0.05
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
    name_match: float  # share (0–1) of the note's title or an alias that the query holds
    fused_score: float
    exact: str | None = (
        None  # put first: the query is its name ("name"), a line it holds ("line"), the only note with its symbol ("symbol"), it replaces a hit ("replaces")
    )


class Hit(BaseModel):
    path: str
    title: str
    snippet: str
    score: float
    lines: str
    tags: list[str]
    date: str | None = None  # the day the note says it was written (frontmatter, journal); None if it names none
    modified: str | None = None  # the day its file was last modified (UTC)
    committed: str | None = None  # a vault in git: the day of the last commit that changed it, if unedited since
    # what the index found wrong with the note: a sync tool's conflicting copy, git's conflict
    # markers in it, a guessed encoding (None for most notes)
    problems: list[str] | None = None
    # the path of an earlier hit whose passage this one's is, word for word (a copied note, a
    # section several notes share): its snippet is then "" rather than the same text again
    same_passage_as: str | None = None
    # the notes that say they replace this one (a later decision, plan or design: read that one
    # before acting on this); they come before this hit in the answer, found or brought in
    superseded_by: list[str] | None = None
    explain: Explain | None = None


class TagMemoExplain(BaseModel):
    applied: bool
    matched_tags: dict[str, float]
    core_tags: list[str]
    beta: float
    base_beta: float
    logic_depth: float
    entropy: float
    resonance: float
    coverage: float
    novelty: float
    dominant_axis: str
    pyramid_levels: list[float]
    dedup_dropped: int
    reason: str = ""  # when not applied: why (no tag vectors, no tag matched, no query vector)
    core_tags_ignored: list[str] | None = None  # the caller's core tags that took no part, "tag: why"


class RecallResult(BaseModel):
    vault: str
    query: str
    mode_used: str
    vector_coverage: float
    left_out: list[str]  # "channel: why" for each channel asked for that did not run
    # "channel: how" for each channel that ran over part of the vault (the index still being built,
    # vectors still being computed)
    partial: list[str] = []
    # explain, hybrid: each channel's share of the fused score for this query (per-query fusion weights)
    channel_weights: dict[str, float] | None = None
    hits: list[Hit]
    # no hits: each folder, diary or tag of the scope that no note is in ("no note is in the folder x/")
    empty_scope: list[str] | None = None
    # why the hits may not answer the query at all (no note holds its words); None when they match it
    caveat: str | None = None
    tagmemo: TagMemoExplain | None = None


class NextCall(BaseModel):
    tool: str
    arguments: dict[str, Any]


class EmbedAnswer(BaseModel):
    line: int  # the line of the `![[...]]` in the note
    target: str  # as written: the note's name, with its #heading or ^block
    path: str | None = None  # the embedded note (None when no note has that name)
    text: str | None = None  # the part of it shown in place of the embed (None: see missing)
    cut: bool | None = None  # text is the first EMBED_CHARS characters of that part
    missing: str | None = None  # why there is no text


class NoteAnswer(BaseModel):
    vault: str
    path: str
    title: str
    tags: list[str]
    date: str | None = None  # the day the note says it was written; None if it names none
    modified: str | None = None  # the day its file was last modified (UTC)
    committed: str | None = None  # a vault in git: the day of the last commit that changed it, if unedited since
    lines: str  # the range returned, "13-40" (1-based, inclusive)
    total_lines: int
    text: str  # those lines as the file has them now (or as indexed: `unreadable`)
    unreadable: str | None = None  # why the file cannot be read now (an unmounted drive): text is as indexed
    # what the index found wrong with it: a sync tool's conflicting copy, git's conflict markers in
    # it, a guessed encoding, a frontmatter that is no YAML (None when nothing)
    problems: list[str] | None = None
    links: list[str]  # vault paths of the notes it links to
    backlinks: list[str]  # vault paths of the notes linking to it
    superseded_by: list[str] | None = None  # the notes that say they replace this one: read them before acting on it
    cut: str | None = None  # a line longer than max_chars: which of its characters are in text
    next_call: NextCall | None = None  # the rest, when the answer stopped at max_chars
    # the `![[note#part]]` embeds in the lines shown, each with the part it shows (the first
    # MAX_EMBEDS; embeds_not_shown counts the rest)
    embeds: list[EmbedAnswer] | None = None
    embeds_not_shown: int | None = None


class OffloadAnswer(BaseModel):
    vault: str
    offloaded: bool
    node_id: str
    summary: str
    mermaid: str
    original_tokens: int
    summary_tokens: int
    first_error: str = ""
    location: str = ""
    next_call: NextCall | None = None


class InspectAnswer(BaseModel):
    vault: str
    node_id: str
    total_lines: int
    text: str


class FlushAnswer(BaseModel):
    vault: str
    path: str
    outcome: str
    searchable: bool  # recall_memory finds the note now (`until_searchable`)


class DistillAnswer(BaseModel):
    vault: str
    path: str
    outcome: str
    skill_markdown: str
    searchable: bool
    exported_path: str = ""


class LoadoutAnswer(BaseModel):
    vault: str
    project: str
    tokens: int
    markdown: str


LEDGER_TIMEOUT_S = 5.0  # a ledger record gives up after this


class RecallLedger:
    """Recall answers and note reads sent to the offload service's token ledger in the background
    (the agent does not wait for it), and waited for when the MCP session ends: an agent that
    closes the session right after its last recall still has it counted."""

    def __init__(self, client: StackClient) -> None:
        self._client = client
        self._pending: set[Any] = set()
        self._lock = threading.Lock()

    def record(self, record: offload_pb2.RecallRecord) -> None:
        future = self._client.offload.RecordRecall.future(record, timeout=LEDGER_TIMEOUT_S)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Any) -> None:
        with self._lock:
            self._pending.discard(future)
        if future.exception() is not None:
            log.warning("recall not recorded in the token ledger: %s", future.exception())

    def drain(self) -> None:
        """Wait for the records still under way (each gives up after LEDGER_TIMEOUT_S)."""
        with self._lock:
            pending = list(self._pending)
        for future in pending:
            with contextlib.suppress(Exception):  # its failure is logged by `_done`
                future.result()


def _next_step(node_id: str) -> str:
    """The tool an agent calls next to read more of an offloaded log (the offload service counts
    this line in the ledger: `k0maru_offload.next_step`)."""
    return f'next: inspect_log_node(node_id="{node_id}", around_first_error=true) (or start_line/end_line, grep)'


def _answer(model: BaseModel) -> CallToolResult:
    """A tool's answer: for the model to read, one line of JSON without the fields that say nothing
    (null); for the host, the whole answer as structured content. The SDK's own text is the JSON
    indented by two spaces: 31 % more characters on ten recalls over the dendron vault (21,167
    against 16,191), all of it whitespace and nulls, and not what the ledger counted."""
    return CallToolResult(
        content=[TextContent(type="text", text=model.model_dump_json(exclude_none=True))],
        structured_content=model.model_dump(mode="json"),
    )


def _text(answer: CallToolResult) -> str:
    return "".join(block.text for block in answer.content if isinstance(block, TextContent))


def _call(fn: Callable[[Any, float], T], request: Any, timeout: float = 30.0) -> T:
    try:
        return fn(request, timeout)
    except K0Error as exc:
        raise ToolError(str(exc)) from exc


ECHO_CHARS = 200


def _echoed(query: str) -> str:
    """The query as the answer repeats it: its start, for a long one. A pasted 14 KB stack trace
    came back whole in every answer (twice, with the structured copy), an agent's context paying
    for it again; the hits took 1.2 KB."""
    return query if len(query) <= ECHO_CHARS else f"{query[:ECHO_CHARS]}… ({len(query):,} characters)"


_LINE_RANGE = re.compile(r"(\d{1,7})(?:\s*[-–:]\s*(\d{1,7}))?")


def in_vault(path: str, vault: str) -> str:
    """A note's path as the retriever takes it: vault-relative. An absolute path inside the vault
    (every answer names the vault by its absolute path, so an agent joins them) loses the vault's
    part; any other path is passed on as it is (an absolute one outside is refused there)."""
    root = vault.rstrip("/")
    if root and path.rstrip("/") == root:
        return ""
    return path[len(root) + 1 :] if root and path.startswith(root + "/") else path


BY_MEANING_ONLY = (
    "no note holds any of the query's words: these are only the notes nearest in meaning (scores are "
    "relative: the best is 1.0 whatever its similarity), which may be about something else; treat it as not found "
    "unless a snippet says otherwise"
)


def _listed(names: list[str] | str | None) -> list[str]:
    """A list argument an agent may give as one string (`supersedes: "Auth design"`): a list of it."""
    return [names] if isinstance(names, str) else names or []


def superseded(client: StackClient) -> list[common_pb2.Supersession]:
    """The notes later ones replace, from the retriever, for the loadout to name the current ones;
    none while the retriever cannot answer (still building its first index): the loadout then lists
    notes as it finds them."""
    try:
        return list(client.call(client.retriever.Superseded, retriever_pb2.SupersededRequest(), 5.0).notes)
    except K0Error as exc:
        log.info("loadout without the retriever's superseded notes: %s", exc)
        return []


def until_searchable(client: StackClient, path: str, wait_s: float = SEARCHABLE_WAIT_S) -> bool:
    """Whether the note just written at `path` is searchable, waiting at most `wait_s` for it: the
    scanner scans now (not after its watcher's collection window, a second or more) and the retriever
    is waited for until it has committed that scan and holds the note. An agent that records a
    decision and recalls it in its next step found nothing before; a note the vault's ignore rules
    leave out, or a stack too busy to index it in time, gives False (the note is written either way)."""
    deadline = time.monotonic() + wait_s

    def left() -> float:  # each call gets what is left of the wait, not the whole of it
        return max(0.1, deadline - time.monotonic())

    try:
        seq = client.call(client.scanner.Scan, scanner_pb2.ScanRequest(), left()).last_seq
        status = retriever_pb2.IndexStatusRequest()
        while client.call(client.retriever.IndexStatus, status, left()).last_applied_seq < seq:
            if time.monotonic() >= deadline:
                return False
            time.sleep(SEARCHABLE_POLL_S)
        client.call(client.retriever.Backlinks, retriever_pb2.BacklinksRequest(path=path), left())  # holds it
    except K0Error as exc:
        log.info("%s is written; not confirmed searchable: %s", path, exc)
        return False
    return True


class _Server(MCPServer):
    """MCPServer whose refusals of an agent's arguments read like the tools' own: `limit: at most 50
    (got 100)`. They were pydantic's: the SDK's internal model name, the error's type and a
    link to pydantic's docs, 270 characters for one wrong number. An argument the tool does not
    take is refused too: it was dropped without a word (`read_note(lines=…)` before it took
    `lines` gave the whole note, the agent unaware)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        takes = (tool.parameters.get("properties") or {}) if tool is not None else {}
        if tool is not None and (unknown := [a for a in arguments if a not in takes]):
            raise ToolError(
                f"{name} takes no argument {', '.join(map(repr, unknown[:5]))}; it takes {', '.join(takes)}"
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            raise ToolError(f"{name} was called with wrong arguments: {_refused(cause)}") from cause


def _refused(error: ValidationError) -> str:
    """Each refused argument: its name, what it must be (either form of one that takes two), and
    what was given (its start)."""
    said: dict[str, list[str]] = {}  # argument → pydantic's words: "Input should be …", "String should have …"
    given: dict[str, str] = {}
    for err in error.errors(include_url=False):
        loc = err.get("loc", ())  # the argument, then an item's index or the form of a union tried
        where = "".join([str(loc[0]) if loc else "arguments", *(f"[{p}]" for p in loc[1:] if isinstance(p, int))])
        said.setdefault(where, []).append(str(err.get("msg", "Not valid")))
        shown = repr(err.get("input"))
        missing = err.get("type") == "missing"
        given[where] = "" if missing else f" (got {shown[:60]}{'…' if len(shown) > 60 else ''})"
    return "; ".join(f"{where}: {_wanted(words)}{given[where]}" for where, words in list(said.items())[:5])


def _wanted(words: list[str]) -> str:
    """What an argument must be, from pydantic's words for it (one per form a union tried)."""
    words = list(dict.fromkeys(words))
    if words == ["Field required"]:
        return "required"
    if all(w.startswith("Input should be ") for w in words):
        return "must be " + " or ".join(w.removeprefix("Input should be ") for w in words)
    return "; ".join(w[:1].lower() + w[1:] for w in words)


def build_mcp(client: StackClient, ledger: RecallLedger | None = None) -> MCPServer:
    """The MCP tools over `client`'s stack; recalls and reads are counted through `ledger`."""
    ledger = ledger or RecallLedger(client)
    server = _Server("k0maru", instructions=f"Long-term memory over the Markdown vault at {client.vault}.\n{INTENTS}")
    vault = client.vault

    @server.tool()
    def recall_memory(
        query: Annotated[
            str,
            Field(
                description="what to remember: an error code, a symbol, a question, a topic (any language). Empty "
                "with since/until, tags or folder: the notes in that scope, newest first ('what did we write this "
                "week' → query '' and since 7d)"
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=50, description="how many notes to return")] = 5,
        mode: Annotated[str, Field(description="hybrid (default), bm25 or vector")] = "hybrid",
        folder: Annotated[
            str, Field(description="only notes under this vault folder (a diary), e.g. 'projects/'")
        ] = "",
        tags: Annotated[
            list[str] | str | None,
            Field(
                description="only notes carrying all these tags (any case, with or without #; a tag also "
                "takes the tags nested under it: project takes project/alpha)"
            ),
        ] = None,
        explain: Annotated[bool, Field(description="include why each note ranked where it did")] = False,
        diary: Annotated[
            str, Field(description="only notes of this diary: a first-level folder, or 'Root' for top-level notes")
        ] = "",
        tagmemo: Annotated[
            bool, Field(description="TagMemo: steer the vector search towards the tags the query evokes")
        ] = False,
        tag_weight: Annotated[
            float, Field(ge=0, le=1, description="TagMemo base weight β₀ (0 = the configured or dynamic one)")
        ] = 0.0,
        core_tags: Annotated[
            list[str] | str | None,
            Field(description="TagMemo: tags to weigh up (any case), e.g. from the conversation"),
        ] = None,
        dedup: Annotated[bool, Field(description="drop near-duplicate notes (SVD residual selection)")] = False,
        since: Annotated[
            str,
            Field(
                description="only notes dated this day or later: YYYY-MM-DD, or counted back from today: today, "
                "yesterday, 7d, 2w ('what did we decide last week' → 7d); a note's own date, else the day it was "
                "committed (a vault in git), else its file's day"
            ),
        ] = "",
        until: Annotated[
            str, Field(description="only notes dated this day or earlier: YYYY-MM-DD, or today, yesterday, 7d, 2w")
        ] = "",
    ) -> Annotated[CallToolResult, RecallResult]:
        """Call BEFORE debugging an error or re-deciding something: searches the vault's notes (BM25 + vectors +
        wikilink graph) for past fixes, decisions and knowledge.

        Intents: "how do I fix this error? check whether we recorded it before", "have we seen E0502 /
        SQLITE_BUSY before", "what did we decide about X", "find the note on Y". Query with the error code,
        symbol or topic; returns the best notes with paths, line ranges and snippets."""
        mode = mode.strip().lower()  # `BM25` as the docs write it
        if mode not in SEARCH_MODES:
            raise ToolError(f"mode must be one of {', '.join(SEARCH_MODES)}")
        if not query.strip() and not (folder or tags or diary or since or until):
            raise ToolError("query is empty: say what to look for, or list notes by since/until, tags or folder")
        scope = retriever_pb2.Scope(
            # `code` is `code/`, not `code-review/`; the vault's absolute path joined with it is that folder too
            path_prefixes=[p for p in (as_folder(in_vault(folder.strip(), vault)),) if p],
            tags=_listed(tags),
            diaries=[diary] if diary else [],
            since=since,
            until=until,
        )
        reply = _call(
            lambda r, t: client.call(client.retriever.Search, r, t),
            retriever_pb2.SearchRequest(
                query=query,
                limit=limit,
                mode=SEARCH_MODES[mode],
                scope=scope,
                explain=explain,
                tagmemo=retriever_pb2.TagMemoOptions(enabled=tagmemo, beta=tag_weight, core_tags=_listed(core_tags)),
                dedup=dedup,
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
                    name_match=round(e.name_match, 4),
                    fused_score=e.fused_score,
                    exact=e.exact or None,
                )
            hits.append(
                Hit(
                    path=h.path,
                    title=h.title,
                    snippet="" if h.same_passage_as else h.snippet,
                    score=round(h.score, 6),
                    lines=f"{h.start_line}-{h.end_line}",
                    tags=list(h.tags),
                    date=h.date or None,
                    modified=h.modified or None,
                    committed=h.committed or None,
                    problems=list(h.problems) or None,
                    same_passage_as=h.same_passage_as or None,
                    superseded_by=list(h.superseded_by) or None,
                    explain=ex,
                )
            )
        tm = reply.tagmemo
        result = RecallResult(
            vault=vault,
            query=_echoed(query),
            mode_used=mode_name(reply.mode_used),
            vector_coverage=round(reply.vector_coverage, 4),
            left_out=[f"{c.channel}: {c.reason}" for c in reply.channels if not c.ran],
            partial=partial_channels(reply),
            channel_weights={c.channel: round(c.weight, 4) for c in reply.channels if c.weight > 0} or None
            if explain
            else None,
            hits=hits,
            empty_scope=list(reply.empty_scope) or None,
            caveat=BY_MEANING_ONLY if reply.by_meaning_only else None,
            tagmemo=TagMemoExplain(
                applied=tm.applied,
                matched_tags={t.tag: round(t.weight, 4) for t in tm.matched_tags},
                core_tags=list(tm.core_tags),
                beta=round(tm.beta, 4),
                base_beta=round(tm.base_beta, 4),
                logic_depth=round(tm.logic_depth, 4),
                entropy=round(tm.entropy, 4),
                resonance=round(tm.resonance, 4),
                coverage=round(tm.coverage, 4),
                novelty=round(tm.novelty, 4),
                dominant_axis=tm.dominant_axis,
                pyramid_levels=[round(x, 4) for x in tm.pyramid_levels],
                dedup_dropped=tm.dedup_dropped,
                reason=tm.reason,
                core_tags_ignored=list(tm.core_tags_ignored) or None,
            )
            if explain and reply.HasField("tagmemo")
            else None,
        )
        answer = _answer(result)
        if hits:  # the ledger: what handing over the whole notes would have cost (best effort, in the
            # background: the offload service reads those notes, the agent must not wait for it)
            record = offload_pb2.RecallRecord(paths=[h.path for h in hits], answer=_text(answer))
            ledger.record(record)
        return answer

    @server.tool()
    def read_note(
        path: Annotated[
            str,
            Field(
                description="the note's vault-relative path, as recall_memory returns it (or absolute, inside "
                "the vault), or its name as a wikilink writes it (`storm log`, a title, an alias, `[[decisions/x]]` "
                "as the loadout lists notes); a name several notes share is refused with their paths"
            ),
        ],
        start_line: Annotated[
            int,
            Field(ge=0, le=MAX_LINE, description="first line (1-based); 0 = the start. A hit's lines are its section"),
        ] = 0,
        end_line: Annotated[int, Field(ge=0, le=MAX_LINE, description="last line, inclusive; 0 = the end")] = 0,
        lines: Annotated[
            str,
            Field(
                max_length=40,
                description="a hit's `lines` as recall_memory gives them (`5-10`), instead of start_line and end_line",
            ),
        ] = "",
        max_chars: Annotated[
            int,
            Field(ge=200, le=100_000, description="at most this many characters; whole lines, the rest by next_call"),
        ] = 12_000,
        start_char: Annotated[
            int,
            Field(
                ge=0,
                le=MAX_LINE,
                description="characters of the first line to skip: a line longer than "
                "max_chars comes in parts (next_call sets it)",
            ),
        ] = 0,
    ) -> Annotated[CallToolResult, NoteAnswer]:
        """Call to read a note recall_memory found, when its snippet is not enough ("show me that decision",
        "what else does the runbook say"): the note's text as the vault has it now, whole or a line range
        (a hit's `lines`), with its title, tags, the notes it links to and those linking to it, and what
        each `![[note#part]]` in those lines embeds.

        Works where the vault is not on this machine (a team deployment). Long notes come in parts:
        next_call reads on."""
        if lines.strip():  # the range a hit gives: passed as `lines`, it was ignored and the whole note came
            asked = _LINE_RANGE.fullmatch(lines.strip())
            if asked is None:
                raise ToolError(f"lines must be a hit's range, like 5-10 (got {lines!r})")
            start_line, end_line = int(asked.group(1)), int(asked.group(2) or asked.group(1))
        note = _call(
            lambda q, t: client.call(client.retriever.GetNote, q, t),
            retriever_pb2.GetNoteRequest(path=in_vault(path, vault)),
        )
        text_lines = note.markdown.splitlines()
        first = max(start_line, 1)
        last = min(end_line or len(text_lines), len(text_lines))
        if first > max(last, 1) or (start_line and start_line > len(text_lines)):
            raise ToolError(
                f"{note.document.path} has {len(text_lines)} lines; asked for {start_line}-{end_line or 'end'}"
            )
        head = text_lines[first - 1] if text_lines else ""
        if start_char and start_char >= len(head):
            raise ToolError(
                f"line {first} of {note.document.path} has {len(head):,} characters; asked from {start_char:,}"
            )
        taken: list[str] = []
        size = 0
        for number in range(first, last + 1):
            line = text_lines[number - 1] if number > first else head[start_char:]
            if taken and size + len(line) + 1 > max_chars:
                break
            taken.append(line[:max_chars])  # only the first can be longer: read in parts
            size += len(line) + 1
        shown_last = first + len(taken) - 1
        rest = len(head) - start_char - max_chars if taken else 0  # of the first line, not shown
        read_on: dict[str, object] | None = None
        if rest > 0:
            read_on = {"start_line": first, "start_char": start_char + max_chars}
        elif shown_last < last:
            read_on = {"start_line": shown_last + 1}
        note_answer = NoteAnswer(
            vault=vault,
            path=note.document.path,
            title=note.document.title,
            tags=list(note.document.tags),
            date=note.document.date or None,
            modified=utc_day(note.document.mtime_ns) or None,
            committed=note.document.committed or None,
            lines=f"{first}-{shown_last}" if taken else "",
            total_lines=len(text_lines),
            text="\n".join(taken),
            unreadable=note.unreadable or None,
            problems=list(note.document.problems) or None,
            links=list(note.outgoing),
            backlinks=list(note.backlinks),
            superseded_by=list(note.superseded_by) or None,
            cut=f"line {first} has {len(head):,} characters: {start_char + 1:,}-{start_char + max_chars:,} are shown, "
            "next_call reads on"
            if rest > 0
            else None,
            next_call=NextCall(
                tool="read_note",
                arguments={"path": note.document.path, **read_on, "end_line": end_line, "max_chars": max_chars},
            )
            if read_on
            else None,
        )
        embeds = [
            (link, resolved.path)
            for link, resolved in zip(note.document.links, note.links, strict=False)
            if link.embed and first <= link.line <= shown_last
        ]
        if embeds:
            read: dict[str, retriever_pb2.Note | K0Error] = {}  # a note embedded in several places is read once
            note_answer.embeds = [_embed(link, found, read) for link, found in embeds[:MAX_EMBEDS]]
            note_answer.embeds_not_shown = len(embeds) - MAX_EMBEDS if len(embeds) > MAX_EMBEDS else None
        answer = _answer(note_answer)
        # the ledger: what was read is spent against what recall saved (best effort, in the background)
        record = offload_pb2.RecallRecord(answer=_text(answer), follow_up=True)
        ledger.record(record)
        return answer

    def _embed(link: Any, path: str, read: dict[str, retriever_pb2.Note | K0Error]) -> EmbedAnswer:
        """What one `![[...]]` of a note shows, read from the embedded note as the vault has it now
        (`read`: the notes this answer read already, or why they could not be)."""
        anchor = f"#^{link.block}" if link.block else f"#{link.heading}" if link.heading else ""
        logseq_ref = link.target.startswith("((")  # `((uuid))`: the block itself names its note
        embed = EmbedAnswer(line=link.line, target=link.target if logseq_ref else f"{link.target}{anchor}")
        if not path:
            embed.missing = "no note of the vault has that name (an attachment, or a note not written yet)"
            return embed
        embed.path = path
        if path not in read:
            try:
                read[path] = client.call(client.retriever.GetNote, retriever_pb2.GetNoteRequest(path=path), 10.0)
            except K0Error as exc:
                read[path] = exc
        embedded = read[path]
        if isinstance(embedded, K0Error):
            embed.missing = str(embedded)
            return embed
        part = embedded_part(embedded.markdown, link.heading, link.block)
        if part is None:
            what = link.target if logseq_ref else f"^{link.block}" if link.block else f"heading {link.heading!r}"
            embed.missing = f"{path} has no {'block ' if link.block else ''}{what}"
            return embed
        embed.text = part[:EMBED_CHARS]
        embed.cut = True if len(part) > EMBED_CHARS else None
        return embed

    @server.tool()
    def offload_log(
        text: Annotated[str, Field(description="the full output of a command, build or test run")],
        task_id: Annotated[str, Field(description="optional short task name (letters, digits, _ and -)")] = "",
        threshold: Annotated[
            int,
            Field(
                ge=0,
                le=100_000,
                description=f"lines above which the log is offloaded (0 = default {OFFLOAD_THRESHOLD_LINES})",
            ),
        ] = 0,
    ) -> Annotated[CallToolResult, OffloadAnswer]:
        """Call whenever a command, build or test run printed more than the offload threshold (50 lines; cargo, pytest, go test, mvn,
        npm, tsc, gcc, ctest…): keeps the log out of the context and returns the first real error, the failing
        file:line in your own sources, counts, a short Mermaid and `next_call` (inspect_log_node with its
        arguments) to read exactly the part you need. Under 50 lines the text comes back unchanged."""
        r = _call(
            lambda q, t: client.call(client.offload.OffloadLog, q, t),
            offload_pb2.OffloadLogRequest(text=text, task_id=task_id, threshold=threshold),
        )
        if not r.offloaded:
            return _answer(
                OffloadAnswer(
                    vault=vault,
                    offloaded=False,
                    node_id="",
                    summary=r.summary,
                    mermaid="",
                    original_tokens=r.original_tokens,
                    summary_tokens=r.summary_tokens,
                )
            )
        return _answer(
            OffloadAnswer(
                vault=vault,
                offloaded=True,
                node_id=r.node_id,
                summary=f"{r.summary}\n{_next_step(r.node_id)}",
                mermaid=r.mermaid,
                original_tokens=r.original_tokens,
                summary_tokens=r.summary_tokens,
                first_error=r.first_error,
                location=r.first_location,
                next_call=NextCall(
                    tool="inspect_log_node", arguments={"node_id": r.node_id, "around_first_error": True}
                ),
            )
        )

    @server.tool()
    def inspect_log_node(
        node_id: Annotated[str, Field(description="the node id offload_log returned, e.g. node_0123456789abcdef")],
        start_line: Annotated[
            int, Field(ge=0, le=MAX_LINE, description="first line (1-based); 0 = start; at most 2^32-1")
        ] = 0,
        end_line: Annotated[
            int, Field(ge=0, le=MAX_LINE, description="last line, inclusive; 0 = end; at most 2^32-1")
        ] = 0,
        grep: Annotated[str, Field(description="regular expression; returns matching lines with context")] = "",
        context: Annotated[
            int, Field(ge=0, le=200, description="lines of context around grep matches or the first error")
        ] = 0,
        around_first_error: Annotated[bool, Field(description="return the region around the first error")] = False,
    ) -> Annotated[CallToolResult, InspectAnswer]:
        """Call to look closer at a log offload_log stored: "the tests printed a long error, show me the stack
        trace", "what happened around the first error", "find every line mentioning timeout".

        Give the node id with around_first_error=true (what offload_log's next_call says), or a line range,
        or a regular expression (bounded: a pattern that backtracks for 2 s is refused)."""
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
        return _answer(
            InspectAnswer(
                vault=vault,
                node_id=r.node_id,
                total_lines=r.total_lines,
                text="\n".join(f"{ln.number:>6}  {ln.text}" for ln in r.lines),
            )
        )

    @server.tool()
    def flush_session(
        title: Annotated[str, Field(description="title of the note to write")],
        content: Annotated[str, Field(description="Markdown body: what was decided, learned or done")],
        category: Annotated[
            str, Field(description="decision, log, concept, skill, or a folder; default: the vault's log folder")
        ] = "",
        tags: Annotated[list[str] | str | None, Field(description="tags without #")] = None,
        related_notes: Annotated[
            list[str] | str | None, Field(description="note names to link as [[wikilinks]]")
        ] = None,
        supersedes: Annotated[
            list[str] | str | None,
            Field(
                description="notes this one replaces (an earlier decision or plan it revises), by name or path: "
                "recall then marks them superseded_by this note and puts this one first"
            ),
        ] = None,
    ) -> Annotated[CallToolResult, FlushAnswer]:
        """Call when the session reached a decision, design or lesson that should outlive it: "save the
        distributed-lock renewal plan we just agreed on", "record this decision", "write up what we did today".

        Writes a note where this vault keeps that kind (its folder, naming, sections, frontmatter keys, template).
        Never overwrites: the same content is 'up_to_date' (on any day); a different note of that name gets -v2 (in a folder of numbered records, the next number; 'versioned' says so: pass supersedes when it replaces the earlier one).
        When it revises a note recall found (a changed decision), name that note in supersedes.
        Answers once recall_memory finds the note (searchable: true), or after 10 s (false)."""
        r = _call(
            lambda q, t: client.call(client.offload.FlushSession, q, t),
            offload_pb2.FlushRequest(
                title=title,
                content=content,
                category=category,
                tags=_listed(tags),
                related_notes=_listed(related_notes),
                supersedes=_listed(supersedes),
                source="mcp flush_session",
            ),
        )
        outcome = OUTCOME_NAMES.get(r.outcome, "unknown")
        return _answer(
            FlushAnswer(vault=vault, path=r.path, outcome=outcome, searchable=until_searchable(client, r.path))
        )

    @server.tool()
    def distill_session_skill(
        trace: Annotated[str, Field(description="a raw trace: commands run, the error, the fix")] = "",
        node_id: Annotated[str, Field(description="or the node id of an offloaded log")] = "",
        title: Annotated[str, Field(description="optional title of the skill card")] = "",
        export_hermes: Annotated[bool, Field(description="also write it as a Hermes skill file")] = False,
    ) -> Annotated[CallToolResult, DistillAnswer]:
        """Call after a failure was solved and is worth not solving twice: "turn this compiler error into a
        troubleshooting playbook", "make a skill out of what we just fixed".

        Give the trace (a transcript with commands, errors, `Fix:`/`Solution:` lines) or the node id of an
        offloaded log; writes a skill card (signature, stack, root cause, how it was located, fix, verify) in
        the skills folder, and with export_hermes also a Hermes skill file (never overwriting one)."""
        if not trace.strip() and not node_id.strip():
            raise ToolError("give either trace or node_id")
        r = _call(
            lambda q, t: client.call(client.offload.DistillSkill, q, t),
            offload_pb2.DistillRequest(trace=trace, node_id=node_id, title=title, export=export_hermes),
        )
        return _answer(
            DistillAnswer(
                vault=vault,
                path=r.path,
                outcome=OUTCOME_NAMES.get(r.outcome, "unknown"),
                skill_markdown=r.skill_markdown,
                searchable=until_searchable(client, r.path),
                exported_path=r.exported_path,
            )
        )

    @server.tool()
    def get_project_loadout(
        project_name: Annotated[
            str,
            Field(
                description="the project to load (a note or folder name): its notes come first; empty = this vault's project"
            ),
        ] = "",
        max_tokens: Annotated[
            int, Field(ge=100, le=20_000, description="token budget of the answer; 300 by default, raise for more")
        ] = 300,
    ) -> Annotated[CallToolResult, LoadoutAnswer]:
        """Call FIRST when starting work on a project or picking up a repo you have not seen in this session
        ("take over this service", "get me up to speed", "what are the rules here").

        Returns an L0–L3 brief in ~300 tokens: L0 the project and its scope, L1 where notes go and how
        they are written, L2 the newest decisions and logs, L3 standing rules, skills and hub notes."""
        r = _call(
            lambda q, t: client.call(client.offload.GetProjectLoadout, q, t),
            offload_pb2.LoadoutRequest(max_tokens=max_tokens, project=project_name, superseded=superseded(client)),
        )
        return _answer(LoadoutAnswer(vault=vault, project=r.project, tokens=r.tokens, markdown=r.markdown))

    return server


_ID_PATTERN = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def _request_id(raw: str) -> int | str | None:
    """The id of a request the SDK could not read, when one can be told (else None, as JSON-RPC says)."""
    try:
        message = json.loads(raw)
    except RecursionError:  # too deep for Python's parser too: the id usually comes before the params
        match = _ID_PATTERN.search(raw[: raw.find('"params"')] if '"params"' in raw else raw[:2000])
        return json.loads(match.group(1)) if match else None
    except ValueError:
        return None
    value = message.get("id") if isinstance(message, dict) else None
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def _python_reads(raw: str) -> bool:
    """Python's parser accepts lone surrogates, which the SDK's (jiter) refuses."""
    try:
        json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return True


def unreadable_line_reply(exc: Exception) -> Any:
    """A JSON-RPC error answering a line the SDK could not read (it only logs those, so the host
    would wait for an answer forever): lone UTF-16 surrogates (`"\\ud800"`), nesting deeper than
    the parser allows, invalid JSON, JSON that is no JSON-RPC message. None: not such an error."""
    import mcp_types as types
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError) or not exc.errors():
        return None
    first = exc.errors()[0]
    raw = first.get("input")
    if not isinstance(raw, str):  # valid JSON, but no JSON-RPC message (an array, a number, …)
        value = raw.get("id") if isinstance(raw, dict) else None
        request_id = value if isinstance(value, int | str) and not isinstance(value, bool) else None
        return types.JSONRPCError(
            jsonrpc="2.0",
            id=request_id,
            error=types.ErrorData(code=types.INVALID_REQUEST, message="not a JSON-RPC 2.0 request object"),
        )
    if first["type"] != "json_invalid":
        code, message = types.INVALID_REQUEST, f"not a JSON-RPC message: {first['msg']} at {first['loc']}"[:300]
    elif "recursion limit" in first["msg"]:
        code, message = types.PARSE_ERROR, "JSON nested too deeply: flatten the arguments"
    elif _python_reads(raw) and re.search(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", raw):
        code, message = (
            types.PARSE_ERROR,
            "a string holds a lone UTF-16 surrogate (a \\uD800-\\uDFFF escape without its pair): "
            "not valid Unicode, send UTF-8 text",
        )
    else:
        code, message = types.PARSE_ERROR, first["msg"][:300]
    return types.JSONRPCError(jsonrpc="2.0", id=_request_id(raw), error=types.ErrorData(code=code, message=message))


class _AnsweringReader:
    """The stdio transport's read stream, answering the lines it could not read instead of passing
    them on as exceptions (which the SDK logs and drops). Everything else is the inner stream's."""

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write = write_stream

    async def receive(self) -> Any:
        from mcp.shared.message import SessionMessage

        while True:
            item = await self._inner.receive()
            reply = unreadable_line_reply(item) if isinstance(item, Exception) else None
            if reply is None:
                return item
            log.warning("answered an unreadable MCP line: %s", reply.error.message)
            await self._write.send(SessionMessage(reply))

    def __aiter__(self) -> _AnsweringReader:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _AnsweringReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._inner.aclose()

    def __getattr__(self, name: str) -> Any:  # last_context, close, aclose, clone
        return getattr(self._inner, name)


async def _run_stdio(server: MCPServer) -> None:
    """MCPServer.run_stdio_async, with unreadable lines answered (_AnsweringReader)."""
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async uses it the same way
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(
            _AnsweringReader(read_stream, write_stream), write_stream, lowlevel.create_initialization_options()
        )


def serve_mcp_stdio(client: StackClient) -> None:
    """Serve MCP over stdin/stdout until the host closes stdin (the caller owns `client`)."""
    import anyio

    ledger = RecallLedger(client)
    try:
        anyio.run(_run_stdio, build_mcp(client, ledger))
    finally:
        ledger.drain()
