"""The console's live changes (`/api/events`): the journal's last changes when a page opens, then
each change once and in order, with what PUB/SUB dropped filled from the journal."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
import zmq

from k0maru.v1 import common_pb2
from k0maru_cli import free_port
from k0maru_common import TOPIC, StackClient
from k0maru_gateway import _changes
from k0maru_gateway._changes import GAP_MAX, RECENT, change_events

from .test_events import running_scanner

pytestmark = pytest.mark.integration


def parsed(chunk: str) -> tuple[str, Any] | None:
    """One server-sent event as (name, data); None for a comment."""
    name, data = "message", None
    for line in chunk.strip("\n").split("\n"):
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            data = json.loads(line.removeprefix("data: "))
    return None if data is None else (name, data)


class Feed:
    """The stream read in the background into a queue: a wait for an event that times out does not
    cancel the stream itself (cancelling a generator mid-await would end it)."""

    def __init__(self, stream: AsyncGenerator[str, None]) -> None:
        self._stream = stream
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._task = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        async for chunk in self._stream:
            if (event := parsed(chunk)) is not None:
                await self._queue.put(event)

    async def take(self, count: int, timeout_s: float = 20) -> list[tuple[str, Any]]:
        return [await asyncio.wait_for(self._queue.get(), timeout_s) for _ in range(count)]

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        await self._stream.aclose()


def client_of(scanner_address: str) -> StackClient:
    return StackClient("", {n: scanner_address for n in ("scanner", "retriever", "offload")}, token="")


def test_a_page_opens_on_the_journals_last_changes_then_follows_new_ones(vault: Path, tmp_path: Path):
    for i in range(40):
        (vault / f"n{i:02}.md").write_text(f"note {i}")
    with running_scanner(vault, tmp_path / "scanner", watch=False) as (scanner, events):
        last = scanner.scanner.manifest.last_seq()
        client = client_of(scanner.service.address)

        async def scenario() -> None:
            feed = Feed(change_events(events, client))
            try:
                (name, journal), *recent = await feed.take(1 + RECENT)
                assert name == "journal" and journal == {"last_seq": last, "oldest_seq": 1, "error": ""}
                assert [e["seq"] for _n, e in recent] == list(range(last - RECENT + 1, last + 1))
                assert {e["kind"] for _n, e in recent} == {"added"} and recent[-1][1]["at_unix_ms"] > 0
                await asyncio.sleep(0.3)  # the subscription reaches the publisher
                (vault / "n05.md").unlink()
                (vault / "fresh.md").write_text("fresh")
                await asyncio.to_thread(scanner.scanner.scan)
                live = await feed.take(2)
                assert [(e["seq"], e["kind"], e["path"]) for _n, e in live] == [
                    (last + 1, "deleted", "n05.md"),
                    (last + 2, "added", "fresh.md"),
                ]
            finally:
                await feed.close()

        try:
            asyncio.run(scenario())
        finally:
            client.close()


def test_changes_the_publisher_dropped_come_from_the_journal_once_and_in_order(vault: Path, tmp_path: Path):
    """A publisher that dropped two of three changes (a real PUB socket, publishing only the last
    one the scanner recorded): the page still gets all three, in order, none twice."""
    (vault / "a.md").write_text("a")
    with running_scanner(vault, tmp_path / "scanner", watch=False) as (scanner, _events):
        client = client_of(scanner.service.address)
        context = zmq.Context()
        publisher = context.socket(zmq.PUB)
        publisher.setsockopt(zmq.LINGER, 0)
        dropping = f"tcp://127.0.0.1:{free_port()}"
        publisher.bind(dropping)

        async def scenario() -> None:
            feed = Feed(change_events(dropping, client))
            try:
                (name, journal), opened = await feed.take(2)
                assert name == "journal" and journal["last_seq"] == 1 and opened[1]["path"] == "a.md"
                for name in ("b.md", "c.md", "d.md"):
                    (vault / name).write_text(name)
                    await asyncio.to_thread(scanner.scanner.scan)
                recorded = list(scanner.scanner.manifest.changes(1, 0))
                assert [e.seq for e in recorded] == [2, 3, 4]
                last = common_pb2.ChangeEvent(seq=4, kind=common_pb2.CHANGE_KIND_ADDED, path="d.md")
                followed: list[tuple[str, Any]] = []
                while not followed:  # until the subscription is in place (PUB drops before it)
                    publisher.send_multipart([TOPIC, last.SerializeToString()])
                    with contextlib.suppress(TimeoutError):
                        followed = await feed.take(1, timeout_s=0.5)
                followed += await feed.take(2)
                assert [(e["seq"], e["path"]) for _n, e in followed] == [(2, "b.md"), (3, "c.md"), (4, "d.md")]
                publisher.send_multipart([TOPIC, last.SerializeToString()])  # again: already listed
                publisher.send_multipart([TOPIC, common_pb2.ChangeEvent(seq=5, path="e.md").SerializeToString()])
                (_n, after), *_ = await feed.take(1)
                assert after["seq"] == 5
            finally:
                await feed.close()

        try:
            asyncio.run(scenario())
        finally:
            publisher.close()
            context.term()
            client.close()


def test_a_journal_that_began_again_while_the_page_is_open_is_listed_afresh(vault: Path, tmp_path: Path):
    """The scanner's data folder wiped while a page is open: its new journal starts again from 1,
    below what the page listed. The page is told (`journal` again) and lists the new journal's
    changes instead of dropping each as already seen."""
    for i in range(10):
        (vault / f"n{i}.md").write_text(f"note {i}")
    grpc_addr, events = f"127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    client = client_of(grpc_addr)

    async def scenario() -> tuple[list[tuple[str, Any]], str]:
        with running_scanner(vault, tmp_path / "first", False, grpc_addr, events):
            feed = Feed(change_events(events, client))
            (name, journal), *_ = await feed.take(1 + 10)
            assert name == "journal" and journal["last_seq"] == 10
        try:
            for i in range(2, 10):
                (vault / f"n{i}.md").unlink()
            with running_scanner(vault, tmp_path / "wiped", False, grpc_addr, events) as (scanner, _events):
                got: list[tuple[str, Any]] = []
                for attempt in range(30):  # until the subscription reaches the new publisher (PUB drops before)
                    fresh = f"fresh{attempt:02}.md"
                    (vault / fresh).write_text("fresh")
                    await asyncio.to_thread(scanner.scanner.scan)
                    with contextlib.suppress(TimeoutError):
                        got += await feed.take(1, timeout_s=1)
                        break
                while not any(e.get("path") == fresh for _n, e in got):
                    got += await feed.take(1)
                return got, fresh
        finally:
            await feed.close()

    try:
        got, fresh = asyncio.run(scenario())
    finally:
        client.close()
    last = 2 + int(fresh[5:7]) + 1  # n0.md and n1.md, then each fresh note
    restart = max(i for i, (name, _e) in enumerate(got) if name == "journal")
    assert got[restart][1]["last_seq"] <= last and got[restart][1]["oldest_seq"] == 1
    listed = [(e["seq"], e["path"]) for _n, e in got[restart + 1 :]]
    assert listed[-1] == (last, fresh) and [seq for seq, _p in listed] == list(range(listed[0][0], last + 1))


def test_a_gap_the_journal_cannot_fill_is_said_not_hidden(vault: Path, tmp_path: Path):
    (vault / "a.md").write_text("a")
    with running_scanner(vault, tmp_path / "scanner", watch=False) as (scanner, _events):
        client = client_of(scanner.service.address)

        async def gaps() -> list[tuple[str, Any]]:
            journal = _changes._Journal(client)
            beyond = [parsed(x) async for x in _changes._fill(journal, 1, 1 + GAP_MAX + 2)]  # a bulk import
            filled = [parsed(x) async for x in _changes._fill(journal, 0, 2)]  # the journal holds seq 1
            return [e for e in (*beyond, *filled) if e]

        try:
            beyond, *filled = asyncio.run(gaps())
        finally:
            client.close()
    assert beyond == ("skipped", {"after_seq": 1, "before_seq": GAP_MAX + 3, "count": GAP_MAX + 1})
    assert [(name, e["seq"], e["path"], e["kind"]) for name, e in filled] == [("message", 1, "a.md", "added")]
    unreachable = client_of(f"127.0.0.1:{free_port()}")  # the scanner gone: said, and the stream goes on

    async def gone() -> list[str]:
        return [x async for x in _changes._fill(_changes._Journal(unreachable), 3, 6)]

    try:
        assert [parsed(x) for x in asyncio.run(gone())] == [("skipped", {"after_seq": 3, "before_seq": 6, "count": 2})]
    finally:
        unreachable.close()
