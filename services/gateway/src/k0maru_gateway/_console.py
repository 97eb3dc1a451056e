"""The HTTP console: the page and its static files, and the JSON API it reads (see /api/openapi.json).

Everything the page loads comes from this origin (scripts, styles, fonts, diagrams rendered to
SVG here); a Content-Security-Policy on every response makes the browser refuse anything else,
so a note's Markdown can neither run a script nor fetch from elsewhere.

Every request's Host header must name the console (its bind address, loopback names when it
binds loopback, and `K0_HTTP_ALLOWED_HOSTS`), or it gets 403: a page on another site that
rebinds its DNS name to 127.0.0.1 (DNS rebinding) cannot read the vault through a browser.
With a token, `/healthz` tells anonymous callers only ok/degraded, not which vault.
"""

from __future__ import annotations

import asyncio
import gzip
import hmac
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from k0maru.v1 import common_pb2, offload_pb2, retriever_pb2, scanner_pb2
from k0maru_common import (
    HEALTH_NAMES,
    SEARCH_MODES,
    InvalidInput,
    K0Error,
    NotFound,
    NotReady,
    StackClient,
    TooLarge,
    health_name,
    health_state,
    is_loopback_host,
    mode_name,
)

from ._answers import partial_channels
from ._changes import change_events
from ._mermaid import render_svg
from ._openapi import openapi_spec

MAX_QUERY_CHARS = 10_000
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"", "0.0.0.0", "::"})

log = logging.getLogger(__name__)


def allowed_hosts(bind_host: str, extra: list[str]) -> frozenset[str] | None:
    """Host names the console answers to; None = any (a wildcard bind without an allow-list,
    where the token, mandatory off loopback, is the protection)."""
    extra_names = {h.strip().strip("[]").lower() for h in extra if h.strip()}
    host = bind_host.strip("[]").lower()
    if host in WILDCARDS:
        return frozenset(extra_names) if extra_names else None
    names = {host, *extra_names}
    if is_loopback_host(host):
        names |= LOOPBACK_NAMES
    return frozenset(names)


def host_of(header: str) -> str:
    """`example.com:7878` → `example.com`; `[::1]:7878` → `::1`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class HostCheck:
    """ASGI middleware: 403 for a Host header the console does not answer to."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None) -> None:
        self._app = app
        self._hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._hosts is not None and scope["type"] in ("http", "websocket"):
            header = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if host_of(header) not in self._hosts:
                refusal = JSONResponse(
                    {"error": "this console does not answer to that Host; add it to K0_HTTP_ALLOWED_HOSTS"},
                    status_code=403,
                )
                await refusal(scope, receive, send)
                return
        await self._app(scope, receive, send)


MAX_SCOPE_ITEMS = 32
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
STATIC_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".woff2": "font/woff2",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
    ".json": "application/json",
}


def _status_for(exc: K0Error) -> int:
    if isinstance(exc, InvalidInput):
        return 400
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, TooLarge):
        return 413
    return 503 if isinstance(exc, NotReady) else 502


_INT64 = {FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT64}


def _extra(message: Any, known: set[str]) -> dict[str, Any]:
    """Fields of a reply this console does not know by name (added by newer services), as JSON;
    64-bit integers as numbers (protobuf's JSON writes them as strings: the console showed `"500"`)."""
    data = json_format.MessageToDict(message, preserving_proto_field_name=True)
    fields = message.DESCRIPTOR.fields_by_name
    return {
        k: int(v) if k in fields and fields[k].type in _INT64 and isinstance(v, str) else v
        for k, v in data.items()
        if k not in known
    }


TOKENS_KNOWN = {
    "offloads",
    "streamed_tokens",
    "repeats",
    "original_tokens",
    "summary_tokens",
    "saved_ratio",
    "recalls",
    "recall_note_tokens",
    "recall_answer_tokens",
    "reads",
}
EXPLAIN_KNOWN = {
    "bm25",
    "vector",
    "graph_boost",
    "fused_score",
    "heading_path",
    "tagmemo_tags",
    "name_match",
    "not_embedded",
    "exact",
}


def hit_json(h: retriever_pb2.SearchHit, explain: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": h.path,
        "title": h.title,
        "snippet": h.snippet,
        "score": h.score,
        "diary": h.diary,
        "tags": list(h.tags),
        "lines": [h.start_line, h.end_line],
        "date": h.date or None,  # the note's own date; None when it names none
        "modified": h.modified or None,  # its file's modification day (UTC)
        "committed": h.committed or None,  # a vault in git: the day of the last commit that changed it
        "problems": list(h.problems),  # what the index found wrong with the note (a conflicting copy, ...)
        "same_passage_as": h.same_passage_as or None,  # an earlier hit whose passage is this one's, word for word
        "superseded_by": list(h.superseded_by),  # the notes that say they replace this one
    }
    if explain:
        e = h.explain
        out["explain"] = {
            "bm25": {"rank": e.bm25.rank, "score": e.bm25.score} if e.bm25.present else None,
            "vector": {"rank": e.vector.rank, "score": e.vector.score} if e.vector.present else None,
            "graph_boost": e.graph_boost,
            "name_match": e.name_match,  # share of the note's best-matching name the query holds
            "not_embedded": e.not_embedded,  # no vector yet: hybrid counted it as BM25 scored it
            "exact": e.exact
            or None,  # put first: the query is its name ("name"), a line it holds ("line"), the only note with its symbol ("symbol"), it replaces a hit ("replaces")
            "fused_score": e.fused_score,
            "heading_path": list(e.heading_path),
            "tagmemo_tags": [{"tag": t.tag, "weight": t.weight} for t in e.tagmemo_tags],
            "extra": _extra(e, EXPLAIN_KNOWN),
        }
    return out


def channels(requested: str, reports: Iterable[retriever_pb2.ChannelReport]) -> list[dict[str, Any]]:
    """Which channels ran for a search, and why one was left out (as the retriever says; `asked`
    is false for a channel the mode did not ask for); in hybrid, each one's per-query fusion weight
    and the confidence it was weighed by (0 otherwise); each one's own time in the retriever."""
    said = {r.channel: r for r in reports}
    out = []
    for name in ("bm25", "vector"):
        r = said.get(name)
        if r is None:
            why = f"not asked for (mode {requested})"
            out.append(
                {
                    "name": name,
                    "ran": False,
                    "why": why,
                    "asked": False,
                    "weight": 0.0,
                    "confidence": 0.0,
                    "took_ms": 0.0,
                }
            )
        else:
            out.append(
                {
                    "name": name,
                    "ran": r.ran,
                    "why": r.reason,
                    "asked": True,
                    "weight": round(r.weight, 4),
                    "confidence": round(r.confidence, 4),
                    "took_ms": round(r.took_ms, 3),  # this channel's own time in the retriever
                }
            )
    return out


@dataclass
class Prices:
    per_million: float = 3.0
    currency: str = "USD"


@dataclass
class StatusSampler:
    """One status snapshot at most every `period_s`, shared by every open page; keeps the vector rate."""

    client: StackClient
    prices: Prices
    period_s: float = 1.0
    window_s: float = 30.0
    _samples: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=120))
    _last: dict[str, Any] | None = None
    _at: float = 0.0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def snapshot(self) -> dict[str, Any]:
        async with self._lock:
            now = time.monotonic()
            if self._last is None or now - self._at >= self.period_s:
                self._last = await run_in_threadpool(self._collect, now)
                self._at = now
            return self._last

    def _try(self, method: Callable[..., Any], request: Any) -> Any:
        try:
            return self.client.call(method, request, 3.0)
        except K0Error:
            return None

    def _collect(self, now: float) -> dict[str, Any]:
        c = self.client
        services = {name: health_state(addr, health_name(name)) for name, addr in sorted(c.addresses.items())}
        index = self._try(c.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
        scan = self._try(c.scanner.Status, scanner_pb2.ScannerStatusRequest())
        tokens = self._try(c.offload.TokenStats, offload_pb2.TokenStatsRequest())
        out: dict[str, Any] = {
            "vault": c.vault,
            "at_unix_ms": int(time.time() * 1000),
            "services": services,
            "index": None,
            "scanner": None,
            "queue": None,
            "workers": [],  # embedder workers on the job stream (XINFO CONSUMERS, via the retriever)
            "tokens": None,
            "prices": {"per_million": self.prices.per_million, "currency": self.prices.currency},
        }
        if scan is not None:
            out["scanner"] = {
                "last_seq": scan.last_seq,
                "documents": scan.documents,
                "skipped": scan.skipped,
                # the first 50 by path, and why
                "skipped_files": [{"path": f.path, "reason": f.reason} for f in scan.skipped_files],
                "watching": scan.watching,
                "watch_note": scan.watch_note,  # why changes are found by polling ("" when the OS tells)
                "problem": scan.problem,  # why changes are not recorded (a full disk); "" while they are
                "excluded": list(scan.excluded),  # what the vault's tool settings leave out of the index
                "out_of_sight": list(scan.out_of_sight),  # folders whose notes are kept as they were, and why
                "commit_days": scan.commit_days,  # a vault in git: the commit notes' days come from, or why none
            }
        if index is not None:
            out["index"] = {
                "documents": index.documents,
                "chunks": index.chunks,
                "chunks_with_vectors": index.chunks_with_vectors,
                "last_applied_seq": index.last_applied_seq,
                "vectors_indexed": index.vectors_indexed,  # in an HNSW index (the rest: brute force)
                "index_building": index.index_building,  # an HNSW build runs in the background
                # replaced chunks BM25 still counts (edited notes rank a little lower) until the
                # background compaction
                "bm25_deleted": index.bm25_deleted,
                "params_error": index.params_error,  # why rag_params.json was rejected (the previous values hold)
                # notes indexed with problems (`Document.problems`): how many, the first 50 by path
                "notes_with_problems": index.notes_with_problems,
                "problem_notes": [{"path": n.path, "problems": list(n.problems)} for n in index.problem_notes],
                # the retriever's index build (first start, re-sync, reindex): searches answer from
                # the notes indexed so far
                "build": (
                    {"notes_indexed": index.build.notes_indexed, "notes_total": index.build.notes_total}
                    if index.HasField("build")
                    else None
                ),
            }
            out["workers"] = [
                {"name": w.name, "pending": w.pending, "idle_ms": w.idle_ms, "gone": w.gone} for w in index.embedders
            ]
            self._samples.append((now, index.chunks_with_vectors))
            while self._samples and now - self._samples[0][0] > self.window_s:
                self._samples.popleft()
            first_t, first_v = self._samples[0]
            rate = (index.chunks_with_vectors - first_v) / (now - first_t) if now > first_t else 0.0
            vectors = any(name.startswith("embedder") for name in c.addresses)  # a stack may run without
            pending = max(0, index.chunks - index.chunks_with_vectors) if vectors else 0
            lag = max(0, scan.last_seq - index.last_applied_seq) if scan is not None else 0
            out["queue"] = {
                "vectors_enabled": vectors,
                "pending_chunks": pending,
                "rate_per_s": round(max(rate, 0.0), 2),
                "eta_s": round(pending / rate, 1) if pending and rate > 0 else None,
                # the index build first (vectors are computed once BM25 holds the whole vault), then vectors
                "progress": (
                    index.build.notes_indexed / max(index.build.notes_total, 1)
                    if index.HasField("build")
                    else 1.0
                    if not (index.chunks and vectors)
                    else index.chunks_with_vectors / index.chunks
                ),
                "events_behind": lag,
                "indexing": bool(pending or lag or index.HasField("build")),
            }
        if tokens is not None:
            saved = max(0, tokens.original_tokens - tokens.summary_tokens)
            recall_saved = max(0, tokens.recall_note_tokens - tokens.recall_answer_tokens)
            out["tokens"] = {
                "offloads": tokens.offloads,
                "original": tokens.original_tokens,
                "summary": tokens.summary_tokens,
                "saved": saved,
                "saved_ratio": tokens.saved_ratio,
                "streamed": tokens.streamed_tokens,  # of summary: lines shown while the command ran
                "repeats": tokens.repeats,  # offloads of a log already counted
                "saved_money": round(saved * self.prices.per_million / 1_000_000, 6),
                "recall": {
                    "answers": tokens.recalls,
                    "note_tokens": tokens.recall_note_tokens,
                    "answer_tokens": tokens.recall_answer_tokens,  # reads included
                    "reads": tokens.reads,  # notes read after a recall (MCP read_note)
                    "saved": recall_saved,
                    "saved_money": round(recall_saved * self.prices.per_million / 1_000_000, 6),
                },
                "extra": _extra(tokens, TOKENS_KNOWN),
            }
        return out


def _int_param(params: QueryParams, name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise InvalidInput(f"{name} must be an integer") from exc
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be between {low} and {high}")
    return value


def _flag(params: QueryParams, name: str, default: bool) -> bool:
    raw = params.get(name)
    if raw is None:
        return default
    if raw not in ("0", "1", "true", "false"):
        raise InvalidInput(f"{name} must be 0 or 1")
    return raw in ("1", "true")


def canvas_markdown(text: str) -> str:
    """An Obsidian canvas shown as a note: its groups' labels as headings, its text cards, its file
    cards as links, its link cards as URLs (in the canvas's order); the file as it is when it is no
    canvas."""
    try:
        nodes = json.loads(text).get("nodes")
    except (ValueError, AttributeError, RecursionError):
        return text
    parts = []
    for node in nodes if isinstance(nodes, list) else ():
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        value = node.get({"text": "text", "file": "file", "link": "url", "group": "label"}.get(str(kind), ""))
        if isinstance(value, str) and value.strip():
            parts.append({"file": f"[[{value}]]", "group": f"## {value}"}.get(str(kind), value.strip()))
    return "\n\n".join(parts)


def note_links(doc: common_pb2.Document, resolutions: Sequence[retriever_pb2.LinkResolution]) -> list[dict[str, Any]]:
    """A note's links as the console lists them, with where each leads. A label-first link
    (`[[label|note]]`, Dendron) is shown with its sides turned. A retriever older than
    `GetNoteReply.links` (during a rolling upgrade) sends none: its links are listed unresolved."""
    if len(resolutions) != len(doc.links):
        resolutions = [retriever_pb2.LinkResolution(target=link.target) for link in doc.links]
    return [
        {
            "target": where.target,
            "alias": link.alias if where.target == link.target else link.target,
            "heading": link.heading,
            "block": link.block,  # `[[note#^id]]` leads to that block of it
            "line": link.line,
            "embed": link.embed,
            "path": where.path or None,
        }
        for link, where in zip(doc.links, resolutions, strict=True)
    ]


def _list_param(params: QueryParams, name: str) -> list[str]:
    values = [v.strip() for v in params.getlist(name) if v.strip()]
    if len(values) > MAX_SCOPE_ITEMS:
        raise InvalidInput(f"at most {MAX_SCOPE_ITEMS} values for {name}")
    return values


def _path_param(params: QueryParams) -> str:
    path = params.get("path", "")
    if not path:
        raise InvalidInput("parameter path is required")
    if len(path) > 4096 or "\x00" in path:
        raise InvalidInput("path is not a valid vault path")
    return path


def _static_files() -> dict[str, tuple[bytes, str]]:
    root = resources.files("k0maru_gateway").joinpath("static")
    files: dict[str, tuple[bytes, str]] = {}

    def walk(folder: Traversable, prefix: str) -> None:
        for entry in folder.iterdir():
            name = prefix + entry.name
            if entry.is_dir():
                walk(entry, name + "/")
                continue
            suffix = "." + entry.name.rsplit(".", 1)[-1]
            if suffix in STATIC_TYPES:
                files[name] = (entry.read_bytes(), STATIC_TYPES[suffix])

    walk(root, "")
    return files


def search_answer(client: StackClient, params: QueryParams) -> dict[str, Any]:
    """The console's `/api/search` answer for `params` (also `k0maru search`'s against a team
    deployment, which has no local console to call)."""
    q = params.get("q", "")
    scoped = any(params.get(k, "").strip() for k in ("diary", "prefix", "tag", "since", "until"))
    if not q.strip() and not scoped:  # no query, a scope: the notes in it, newest first
        raise InvalidInput("parameter q is required (or a scope: diary, prefix, tag, since, until)")
    if len(q) > MAX_QUERY_CHARS:
        raise TooLarge(f"q is longer than {MAX_QUERY_CHARS} characters")
    mode = params.get("mode", "hybrid")
    if mode not in SEARCH_MODES:
        raise InvalidInput(f"mode must be one of {', '.join(SEARCH_MODES)}")
    limit = _int_param(params, "limit", 10, 1, 100)
    explain = _flag(params, "explain", True)
    scope = retriever_pb2.Scope(
        diaries=_list_param(params, "diary"),
        path_prefixes=_list_param(params, "prefix"),
        tags=_list_param(params, "tag"),
        since=params.get("since", ""),
        until=params.get("until", ""),
    )
    request_pb = retriever_pb2.SearchRequest(
        query=q, limit=limit, mode=SEARCH_MODES[mode], explain=explain, scope=scope
    )
    # TagMemo's base boost β₀: `tag_weight` as in recall_memory (`beta` accepted as an alias);
    # checked even when TagMemo is off, so a bad value is never silently ignored
    name = "tag_weight" if "tag_weight" in params else "beta"
    try:
        beta = float(params.get(name, "") or "0")
    except ValueError as exc:
        raise InvalidInput(f"{name} must be a number") from exc
    if not 0 <= beta <= 1:
        raise InvalidInput(f"{name} must be between 0 and 1 (0 = configured or dynamic)")
    if _flag(params, "tagmemo", False):
        core_tags = [t.strip() for t in params.get("core_tags", "").split(",") if t.strip()]
        request_pb.tagmemo.CopyFrom(retriever_pb2.TagMemoOptions(enabled=True, beta=beta, core_tags=core_tags))
    request_pb.dedup = _flag(params, "dedup", False)
    reply = client.call(client.retriever.Search, request_pb, 10.0)
    used = mode_name(reply.mode_used)
    return {
        "vault": reply.vault,
        "query": q,
        "mode": mode,
        "mode_used": used,
        "vector_coverage": reply.vector_coverage,
        "took_ms": reply.took_ms,
        "query_embedding_ms": reply.query_embedding_ms,  # overlaps BM25; 0: cached or not needed
        "channels": channels(mode, reply.channels),
        "partial": partial_channels(reply),  # channels that ran over part of the vault
        "hits": [hit_json(h, explain) for h in reply.hits],
        "highlights": [  # what the snippets were placed by
            {"text": x.text, "word_start": x.word_start, "whole_word": x.whole_word} for x in reply.highlights
        ],
        "empty_scope": list(reply.empty_scope),  # no hits: the scope's parts no note is in
        "by_meaning_only": reply.by_meaning_only,  # no note holds the query's words
        "tagmemo": json_format.MessageToDict(reply.tagmemo, preserving_proto_field_name=True)
        if reply.HasField("tagmemo")
        else None,
        "extra": _extra(  # index_progress: in `partial`
            reply,
            {
                "hits",
                "vault",
                "mode_used",
                "vector_coverage",
                "took_ms",
                "query_embedding_ms",
                "channels",
                "tagmemo",
                "index_progress",
                "highlights",
                "empty_scope",
                "by_meaning_only",
            },
        ),
    }


def build_console(
    client: StackClient,
    token: str = "",
    events_addr: str = "",
    hosts: frozenset[str] | None = LOOPBACK_NAMES,
    prices: Prices | None = None,
) -> Starlette:
    """`hosts`: the Host names to answer (see `allowed_hosts`); None answers any."""
    page = resources.files("k0maru_gateway").joinpath("static/index.html").read_text(encoding="utf-8")
    static = _static_files()
    sampler = StatusSampler(client, prices or Prices())
    spec = openapi_spec()

    def given_token(request: Request) -> str:
        return request.headers.get("authorization", "").removeprefix("Bearer ").strip() or request.query_params.get(
            "token", ""
        )

    def authorized(request: Request) -> bool:
        if not token:
            return True
        return hmac.compare_digest(given_token(request).encode(), token.encode())

    def may_change(request: Request) -> bool:
        """Changing the index (a scan) takes the console token, or on a console without one (a
        local stack's, on loopback) the stack's gRPC token: another local user who can read that
        console still cannot make it reindex the vault."""
        if token or not client.token:
            return authorized(request)
        return hmac.compare_digest(given_token(request).encode(), client.token.encode())

    async def guarded(request: Request, handler: Callable[[Request], Awaitable[Response]]) -> Response:
        if not authorized(request):
            return JSONResponse({"error": "missing or wrong token"}, status_code=401)
        try:
            return await handler(request)
        except K0Error as exc:
            return JSONResponse({"error": str(exc)}, status_code=_status_for(exc))
        except Exception as exc:  # the API answers JSON, a failure too (it answered a bare "Internal Server Error")
            log.exception("console %s failed", request.url.path)
            return JSONResponse({"error": f"the console failed: {type(exc).__name__}: {exc}"}, status_code=500)

    def api(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            response = await guarded(request, handler)
            response.headers["content-security-policy"] = CSP
            response.headers["x-content-type-options"] = "nosniff"
            return response

        return endpoint

    async def call(method: Callable[..., Any], request: Any, timeout: float = 10.0) -> Any:
        return await run_in_threadpool(client.call, method, request, timeout)

    async def healthz(request: Request) -> Response:
        state = await run_in_threadpool(health_state, client.addresses["retriever"], HEALTH_NAMES["retriever"])
        ok = state == "SERVING"
        body = {"status": "ok" if ok else "degraded", "retriever": state}
        if authorized(request):  # the vault's path is for those holding the token
            body["vault"] = client.vault
        return JSONResponse(body, status_code=200 if ok else 503)

    async def search(req: Request) -> Response:
        return JSONResponse(await run_in_threadpool(search_answer, client, req.query_params))

    async def scan(req: Request) -> Response:
        if not may_change(req):
            return JSONResponse({"error": "missing or wrong token"}, status_code=401)
        # a JSON body only: a cross-site form cannot send one, and a cross-site script's JSON
        # POST needs a CORS preflight this console never grants (no request forgery)
        if req.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            raise InvalidInput("send a JSON body (content-type application/json)")
        try:
            body = json.loads(await req.body() or b"{}")
        except ValueError as exc:
            raise InvalidInput("the body is not JSON") from exc
        full = body.get("full", False) if isinstance(body, dict) else None
        if not isinstance(full, bool):
            raise InvalidInput("the body must be a JSON object with an optional boolean full")
        stats = await call(client.scanner.Scan, scanner_pb2.ScanRequest(force_full=full), 600.0)
        fields = ("added", "modified", "deleted", "renamed", "unchanged", "skipped", "last_seq")
        return JSONResponse({**{f: getattr(stats, f) for f in fields}, "ms": stats.ms})

    async def note(req: Request) -> Response:
        path = _path_param(req.query_params)
        reply = await call(client.retriever.GetNote, retriever_pb2.GetNoteRequest(path=path))
        doc = reply.document
        try:
            frontmatter = json.loads(doc.frontmatter_json or "{}")
        except ValueError:
            frontmatter = {}
        return JSONResponse(
            {
                "path": doc.path,
                "title": doc.title,
                "diary": doc.diary,
                "frontmatter": frontmatter if isinstance(frontmatter, dict) else {},
                "tags": list(doc.tags),
                "aliases": list(doc.aliases),
                "links": note_links(doc, reply.links),
                "outgoing": list(reply.outgoing),
                "backlinks": list(reply.backlinks),
                "superseded_by": list(reply.superseded_by),  # the notes that say they replace this one
                "markdown": canvas_markdown(reply.markdown) if doc.path.lower().endswith(".canvas") else reply.markdown,
                "chunks": [
                    {"index": c.index, "heading_path": list(c.heading_path), "lines": [c.start_line, c.end_line]}
                    for c in doc.chunks
                ],
                "problems": list(doc.problems),
                "size": doc.size,
                "mtime_ns": doc.mtime_ns,
                "date": doc.date or None,  # the note's own date (frontmatter, journal); None if it names none
                "committed": doc.committed or None,  # a vault in git: the day of the last commit that changed it
                "unreadable": reply.unreadable or None,  # why the file cannot be read now: markdown as indexed
            }
        )

    overview_cache: dict[tuple[int, int], tuple[bytes, bytes]] = {}  # (seq, max_nodes) → (JSON, gzipped JSON)

    def cached(req: Request, entry: tuple[bytes, bytes]) -> Response:
        if "gzip" in req.headers.get("accept-encoding", ""):
            headers = {"content-encoding": "gzip", "vary": "Accept-Encoding"}
            return Response(entry[1], media_type="application/json", headers=headers)
        return Response(entry[0], media_type="application/json")

    async def graph(req: Request) -> Response:
        path = req.query_params.get("path", "")
        hops = _int_param(req.query_params, "hops", 1, 1, 2)
        max_nodes = _int_param(req.query_params, "max_nodes", 0, 0, 1_000_000)
        key = (-1, max_nodes)
        if not path:  # the whole vault changes only when the index applies an event
            index = await call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 5.0)
            key = (index.last_applied_seq, max_nodes)
            if key in overview_cache:
                return cached(req, overview_cache[key])
        reply = await call(
            client.retriever.Graph, retriever_pb2.GraphRequest(path=path, hops=hops, max_nodes=max_nodes), 30.0
        )
        response = JSONResponse(
            {
                "path": path,
                "hops": hops if path else 0,
                "nodes": [[n.path, n.title, n.diary, n.degree, n.hop] for n in reply.nodes],
                "edges": list(reply.edges),
                "truncated": reply.truncated,
                "total_notes": reply.total_notes,
            }
        )
        if not path:  # 6,000 notes: 0.7 MB of JSON, compressed once here rather than on every answer
            raw = bytes(response.body)
            overview_cache.clear()
            overview_cache[key] = (raw, await run_in_threadpool(gzip.compress, raw, 6))
            return cached(req, overview_cache[key])
        return response

    async def logs(req: Request) -> Response:
        limit = _int_param(req.query_params, "limit", 200, 1, 1000)
        reply = await call(client.offload.ListLogs, offload_pb2.ListLogsRequest(limit=limit))
        items = []
        for entry in reply.logs:
            item = json_format.MessageToDict(
                entry, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
            )
            item["exit_code"] = entry.exit_code if entry.HasField("exit_code") else None
            item["svg"] = render_svg(entry.mermaid)
            items.append(item)
        return JSONResponse({"total": reply.total, "logs": items})

    async def log_slice(req: Request) -> Response:
        node_id = req.path_params["node_id"]
        grep = req.query_params.get("grep", "")
        if len(grep) > 500:
            raise InvalidInput("grep is longer than 500 characters")
        request_pb = offload_pb2.InspectRequest(
            node_id=node_id,
            start_line=_int_param(req.query_params, "start", 0, 0, 10_000_000),
            end_line=_int_param(req.query_params, "end", 0, 0, 10_000_000),
            grep=grep,
            context=_int_param(req.query_params, "context", 0, 0, 50),
            around_first_error=_flag(req.query_params, "around_error", False),
        )
        reply = await call(client.offload.InspectLogNode, request_pb)
        return JSONResponse(
            {
                "node_id": reply.node_id,
                "total_lines": reply.total_lines,
                "lines": [[line.number, line.text] for line in reply.lines],
            }
        )

    async def status(_req: Request) -> Response:
        return JSONResponse(await sampler.snapshot())

    async def live(_req: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            yield "retry: 2000\n\n"
            last = ""
            quiet = 0
            while True:
                snap = await sampler.snapshot()
                data = json.dumps(snap, ensure_ascii=False)
                body = json.dumps({k: v for k, v in snap.items() if k != "at_unix_ms"})
                if body != last or quiet >= 15:  # changed, or a heartbeat every ~15 s
                    yield f"event: status\ndata: {data}\n\n"
                    last, quiet = body, 0
                else:
                    quiet += 1
                await asyncio.sleep(sampler.period_s)

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"cache-control": "no-cache"})

    async def events(_req: Request) -> Response:
        if not events_addr:
            raise NotFound("this gateway has no event source (K0_EVENTS_ADDR)")
        return StreamingResponse(
            change_events(events_addr, client), media_type="text/event-stream", headers={"cache-control": "no-cache"}
        )

    async def openapi(_req: Request) -> Response:
        return JSONResponse(spec)

    async def index(request: Request) -> Response:
        return HTMLResponse(
            page,
            media_type="text/html; charset=utf-8",
            headers={"content-security-policy": CSP, "x-content-type-options": "nosniff", "cache-control": "no-cache"},
        )

    async def static_file(request: Request) -> Response:
        found = static.get(request.path_params["name"])
        if found is None:
            return JSONResponse({"error": "no such file"}, status_code=404)
        body, media_type = found
        cache = "public, max-age=86400" if media_type.startswith("font/") else "no-cache"
        return Response(
            body, media_type=media_type, headers={"cache-control": cache, "x-content-type-options": "nosniff"}
        )

    return Starlette(
        middleware=[
            Middleware(HostCheck, hosts=hosts),
            Middleware(GZipMiddleware, minimum_size=1024, compresslevel=6),  # event streams are never compressed
        ],
        routes=[
            Route("/", index),
            Route("/static/{name:path}", static_file),
            Route("/healthz", healthz),
            Route("/api/openapi.json", openapi),
            Route("/api/search", api(search)),
            Route("/api/scan", api(scan), methods=["POST"]),
            Route("/api/note", api(note)),
            Route("/api/graph", api(graph)),
            Route("/api/logs", api(logs)),
            Route("/api/logs/{node_id}", api(log_slice)),
            Route("/api/status", api(status)),
            Route("/api/live", api(live)),
            Route("/api/events", api(events)),
        ],
    )
