"""The HTTP console: /healthz, /api/search (the search debugger), /api/status, and the page.

Every request's Host header must name the console (its bind address, loopback names when it
binds loopback, and `K0_HTTP_ALLOWED_HOSTS`), or it gets 403: a page on another site that
rebinds its DNS name to 127.0.0.1 (DNS rebinding) cannot read the vault through a browser.
With a token, `/healthz` tells anonymous callers only ok/degraded, not which vault.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any

import zmq
import zmq.asyncio
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from k0maru.v1 import common_pb2, offload_pb2, retriever_pb2
from k0maru_common import (
    HEALTH_NAMES,
    SEARCH_MODES,
    TOPIC,
    InvalidInput,
    K0Error,
    NotFound,
    NotReady,
    StackClient,
    TooLarge,
    health_state,
    mode_name,
)

MAX_QUERY_CHARS = 10_000
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"", "0.0.0.0", "::"})


def allowed_hosts(bind_host: str, extra: list[str]) -> frozenset[str] | None:
    """Host names the console answers to; None = any (a wildcard bind without an allow-list,
    where the token, mandatory off loopback, is the protection)."""
    extra_names = {h.strip().strip("[]").lower() for h in extra if h.strip()}
    host = bind_host.strip("[]").lower()
    if host in WILDCARDS:
        return frozenset(extra_names) if extra_names else None
    names = {host, *extra_names}
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        names |= LOOPBACK_NAMES
    return frozenset(names)


def host_of(header: str) -> str:
    """`example.com:7878` → `example.com`; `[::1]:7878` → `::1`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _status_for(exc: K0Error) -> int:
    if isinstance(exc, InvalidInput):
        return 400
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, TooLarge):
        return 413
    return 503 if isinstance(exc, NotReady) else 502


def hit_json(h: retriever_pb2.SearchHit, explain: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": h.path,
        "title": h.title,
        "snippet": h.snippet,
        "score": h.score,
        "diary": h.diary,
        "tags": list(h.tags),
        "lines": [h.start_line, h.end_line],
    }
    if explain:
        e = h.explain
        out["explain"] = {
            "bm25": {"rank": e.bm25.rank, "score": e.bm25.score} if e.bm25.present else None,
            "vector": {"rank": e.vector.rank, "score": e.vector.score} if e.vector.present else None,
            "graph_boost": e.graph_boost,
            "fused_score": e.fused_score,
            "heading_path": list(e.heading_path),
        }
    return out


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


KINDS = {
    common_pb2.CHANGE_KIND_ADDED: "added",
    common_pb2.CHANGE_KIND_MODIFIED: "modified",
    common_pb2.CHANGE_KIND_DELETED: "deleted",
    common_pb2.CHANGE_KIND_RENAMED: "renamed",
}


async def change_events(events_addr: str) -> AsyncIterator[str]:
    """Server-sent events, one per scanner ChangeEvent (best effort: PUB/SUB may drop; seq shows gaps)."""
    context = zmq.asyncio.Context()
    socket = context.socket(zmq.SUB)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.SUBSCRIBE, TOPIC)
    socket.connect(events_addr)
    try:
        yield ": connected\n\n"
        while True:
            if not await socket.poll(15_000):
                yield ": keep-alive\n\n"
                continue
            _topic, payload = await socket.recv_multipart()
            event = common_pb2.ChangeEvent()
            event.ParseFromString(payload)
            data = {
                "seq": event.seq,
                "kind": KINDS.get(event.kind, "unknown"),
                "path": event.path,
                "old_path": event.old_path,
                "at_unix_ms": event.at_unix_ms,
            }
            yield f"data: {json.dumps(data, ensure_ascii=False)}\n\n"
    finally:
        socket.close()
        context.term()


def build_console(
    client: StackClient, token: str = "", events_addr: str = "", hosts: frozenset[str] | None = LOOPBACK_NAMES
) -> Starlette:
    """`hosts`: the Host names to answer (see `allowed_hosts`); None answers any."""
    page = resources.files("k0maru_gateway").joinpath("static/index.html").read_text(encoding="utf-8")

    def authorized(request: Request) -> bool:
        if not token:
            return True
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip() or request.query_params.get(
            "token", ""
        )
        return hmac.compare_digest(given, token)

    async def guarded(request: Request, handler: Callable[[Request], Awaitable[Response]]) -> Response:
        if not authorized(request):
            return JSONResponse({"error": "missing or wrong token"}, status_code=401)
        try:
            return await handler(request)
        except K0Error as exc:
            return JSONResponse({"error": str(exc)}, status_code=_status_for(exc))

    async def healthz(request: Request) -> Response:
        state = await run_in_threadpool(health_state, client.addresses["retriever"], HEALTH_NAMES["retriever"])
        ok = state == "SERVING"
        body = {"status": "ok" if ok else "degraded", "retriever": state}
        if authorized(request):  # the vault's path is for those holding the token
            body["vault"] = client.vault
        return JSONResponse(body, status_code=200 if ok else 503)

    async def search(request: Request) -> Response:
        async def handle(req: Request) -> Response:
            q = req.query_params.get("q", "")
            if not q.strip():
                raise InvalidInput("parameter q is required")
            if len(q) > MAX_QUERY_CHARS:
                raise TooLarge(f"q is longer than {MAX_QUERY_CHARS} characters")
            mode = req.query_params.get("mode", "hybrid")
            if mode not in SEARCH_MODES:
                raise InvalidInput(f"mode must be one of {', '.join(SEARCH_MODES)}")
            try:
                limit = int(req.query_params.get("limit", "10"))
            except ValueError as exc:
                raise InvalidInput("limit must be an integer") from exc
            if not 1 <= limit <= 100:
                raise InvalidInput("limit must be between 1 and 100")
            explain = req.query_params.get("explain", "1") not in ("0", "false", "")
            tagmemo = req.query_params.get("tagmemo", "0") not in ("0", "false", "")
            try:
                tag_weight = float(req.query_params.get("tag_weight", "0"))
            except ValueError as exc:
                raise InvalidInput("tag_weight must be a number") from exc
            if not 0.0 <= tag_weight <= 1.0:
                raise InvalidInput("tag_weight must be between 0 and 1 (0 = configured)")
            core_tags = [t.strip() for t in req.query_params.get("core_tags", "").split(",") if t.strip()]
            request_pb = retriever_pb2.SearchRequest(
                query=q,
                limit=limit,
                mode=SEARCH_MODES[mode],
                explain=explain,
                tagmemo=retriever_pb2.TagMemoOptions(enabled=tagmemo, beta=tag_weight, core_tags=core_tags),
                dedup=req.query_params.get("dedup", "0") not in ("0", "false", ""),
            )
            reply = await run_in_threadpool(client.call, client.retriever.Search, request_pb, 10.0)
            body: dict[str, Any] = {
                "vault": reply.vault,
                "query": q,
                "mode_used": mode_name(reply.mode_used),
                "vector_coverage": reply.vector_coverage,
                "channels": [{"channel": c.channel, "ran": c.ran, "reason": c.reason} for c in reply.channels],
                "took_ms": reply.took_ms,
                "hits": [hit_json(h, explain) for h in reply.hits],
            }
            if explain and reply.HasField("tagmemo"):
                body["tagmemo"] = MessageToDict(reply.tagmemo, preserving_proto_field_name=True)
            return JSONResponse(body)

        return await guarded(request, handle)

    async def status(request: Request) -> Response:
        async def handle(_req: Request) -> Response:
            index = await run_in_threadpool(
                client.call, client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 5.0
            )
            tokens = await run_in_threadpool(
                client.call, client.offload.TokenStats, offload_pb2.TokenStatsRequest(), 5.0
            )
            return JSONResponse(
                {
                    "vault": client.vault,
                    "index": {
                        "documents": index.documents,
                        "chunks": index.chunks,
                        "chunks_with_vectors": index.chunks_with_vectors,
                        "last_applied_seq": index.last_applied_seq,
                    },
                    "tokens": {
                        "offloads": tokens.offloads,
                        "original": tokens.original_tokens,
                        "summary": tokens.summary_tokens,
                        "saved_ratio": tokens.saved_ratio,
                    },
                }
            )

        return await guarded(request, handle)

    async def events(request: Request) -> Response:
        async def handle(_req: Request) -> Response:
            if not events_addr:
                raise NotFound("this gateway has no event source (K0_EVENTS_ADDR)")
            return StreamingResponse(
                change_events(events_addr), media_type="text/event-stream", headers={"cache-control": "no-cache"}
            )

        return await guarded(request, handle)

    async def index(request: Request) -> Response:
        return HTMLResponse(page, media_type="text/html; charset=utf-8")

    return Starlette(
        middleware=[Middleware(HostCheck, hosts=hosts)],
        routes=[
            Route("/", index),
            Route("/healthz", healthz),
            Route("/api/search", search),
            Route("/api/status", status),
            Route("/api/events", events),
        ],
    )
