"""The console's live changes: the scanner's journal, then its ZeroMQ events, as server-sent events.

A page that opens is sent the journal's last `RECENT` changes at once, so an idle vault shows
what changed last rather than a blank panel, then each change as the scanner publishes it.
PUB/SUB drops what is published before the subscription is in place or while a reader lags;
every event's seq says where it belongs, so a gap is filled from the journal (`Scanner.Changes`)
and the page never sees a change twice or out of order. A gap the journal cannot fill (the
scanner unreachable, a bulk import of more than `GAP_MAX` changes, a journal trimmed past it) is
sent as a `skipped` event that says how many changes the page does not list.

The stream (see /api/openapi.json):
- `event: journal`, first and after every reconnect: `{"last_seq", "oldest_seq", "error"}`, the
  journal as this stream began (`error`: why it could not be read; changes then arrive live only);
  sent again, with the new journal's last changes, when the scanner's journal began again while
  the page was open (its data folder wiped: a change arrives whose seq was already listed, and the
  journal ends before the last one listed); the page's list starts again on it;
- unnamed events, one per change, oldest first: `{"seq", "kind", "path", "old_path", "at_unix_ms"}`;
- `event: skipped`: `{"after_seq", "before_seq", "count"}`, changes between the two not listed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import zmq
import zmq.asyncio
from starlette.concurrency import run_in_threadpool

from k0maru.v1 import common_pb2, scanner_pb2
from k0maru_common import TOPIC, K0Error, StackClient

RECENT = 30  # changes a page opens with (it lists that many)
GAP_MAX = 500  # a larger gap (a bulk import) is not replayed: the page says how many it skipped
KEEP_ALIVE_MS = 15_000
JOURNAL_TIMEOUT_S = 5.0

KINDS = {
    common_pb2.CHANGE_KIND_ADDED: "added",
    common_pb2.CHANGE_KIND_MODIFIED: "modified",
    common_pb2.CHANGE_KIND_DELETED: "deleted",
    common_pb2.CHANGE_KIND_RENAMED: "renamed",
}


def change_json(event: common_pb2.ChangeEvent) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "kind": KINDS.get(event.kind, "unknown"),
        "path": event.path,
        "old_path": event.old_path,
        "at_unix_ms": event.at_unix_ms,
    }


def _sse(data: dict[str, Any], name: str = "") -> str:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n"


class _Journal:
    """The scanner's journal, read through gRPC off the event loop."""

    def __init__(self, client: StackClient) -> None:
        self._client = client

    async def status(self) -> scanner_pb2.ScannerStatus:
        return await run_in_threadpool(
            self._client.call, self._client.scanner.Status, scanner_pb2.ScannerStatusRequest(), JOURNAL_TIMEOUT_S
        )

    async def since(self, seq: int, limit: int) -> list[common_pb2.ChangeEvent]:
        def read(request: scanner_pb2.ChangesRequest, timeout: float) -> list[common_pb2.ChangeEvent]:
            return list(self._client.scanner.Changes(request, timeout=timeout))

        request = scanner_pb2.ChangesRequest(since_seq=seq, limit=limit)
        return await run_in_threadpool(self._client.call, read, request, JOURNAL_TIMEOUT_S)


async def change_events(events_addr: str, client: StackClient) -> AsyncGenerator[str, None]:
    """The stream described above, for one page, until it goes away."""
    journal = _Journal(client)
    context = zmq.asyncio.Context()
    socket = context.socket(zmq.SUB)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.SUBSCRIBE, TOPIC)
    socket.connect(events_addr)  # before the journal is read: what is published meanwhile is kept
    try:
        yield ": connected\n\n"
        opening, seen = await _opening(journal)  # seen: the last seq sent; 0 = none (the journal unread)
        for line in opening:
            yield line
        while True:
            if not await socket.poll(KEEP_ALIVE_MS):
                yield ": keep-alive\n\n"
                continue
            _topic, payload = await socket.recv_multipart()
            event = common_pb2.ChangeEvent()
            event.ParseFromString(payload)
            if seen and event.seq <= seen:
                if not await _began_again(journal, seen):
                    continue  # already sent from the journal
                opening, seen = await _opening(journal)  # the page lists the new journal instead
                for line in opening:
                    yield line
                if event.seq <= seen:
                    continue
            if seen and event.seq > seen + 1:
                async for line in _fill(journal, seen, event.seq):
                    yield line
            yield _sse(change_json(event))
            seen = event.seq
    finally:
        socket.close()
        context.term()


async def _opening(journal: _Journal) -> tuple[list[str], int]:
    """The `journal` event and the journal's last `RECENT` changes, with the last seq they cover
    (0 when the journal could not be read)."""
    try:
        status = await journal.status()
        recent = await journal.since(max(status.oldest_seq - 1, status.last_seq - RECENT, 0), RECENT)
    except K0Error as exc:
        return [_sse({"last_seq": 0, "oldest_seq": 0, "error": str(exc)}, "journal")], 0
    head = _sse({"last_seq": status.last_seq, "oldest_seq": status.oldest_seq, "error": ""}, "journal")
    return [head, *(_sse(change_json(e)) for e in recent)], max([status.last_seq, *(e.seq for e in recent)])


async def _began_again(journal: _Journal, seen: int) -> bool:
    """Whether the scanner's journal now ends before `seen`, the last seq this page listed: it
    began again from 1 (seqs survive restarts, not a wiped data folder). A change re-published
    from the same journal is not that; neither is a scanner that cannot be asked."""
    try:
        return (await journal.status()).last_seq < seen
    except K0Error:
        return False


async def _fill(journal: _Journal, seen: int, arrived: int) -> AsyncGenerator[str, None]:
    """The changes after `seen` and before `arrived` that PUB/SUB dropped, from the journal (the
    record: what it lists between the two is all there was), else one `skipped` event."""
    missing = arrived - seen - 1
    if missing <= GAP_MAX:
        try:
            found = await journal.since(seen, missing)
        except K0Error:  # the scanner restarting, or the journal trimmed past `seen`
            pass
        else:
            for event in found:
                if event.seq < arrived:
                    yield _sse(change_json(event))
            return
    yield _sse({"after_seq": seen, "before_seq": arrived, "count": missing}, "skipped")
