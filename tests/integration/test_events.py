"""Change events: nothing missed while the subscriber is down, watch mode's fixed window, re-parsing."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import zmq

from k0maru.v1 import common_pb2
from k0maru_cli import free_port
from k0maru_common import ChangePublisher, ChangeSubscriber
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index, Scope
from k0maru_retriever._follower import EventFollower
from k0maru_retriever._index import NoteIndex
from k0maru_retriever._state import IndexState
from k0maru_retriever._vectors import EdgeVectorStore
from k0maru_scanner.config import ScannerSettings
from k0maru_scanner.server import ScannerApp, build_server
from tests.conftest import wait_for

pytestmark = pytest.mark.integration


@contextmanager
def running_scanner(
    vault: Path, data: Path, watch: bool, grpc_addr: str = "127.0.0.1:0", events: str = ""
) -> Iterator[tuple[ScannerApp, str]]:
    """A real scanner service (gRPC on a free port unless given, ZeroMQ PUB) and its events address."""
    events = events or f"tcp://127.0.0.1:{free_port()}"
    app = build_server(
        ScannerSettings(
            vault=vault, data_dir=data, grpc_addr=grpc_addr, events_addr=events, watch=watch, rescan_interval_s=3600
        )
    )
    app.service.start()
    try:
        app.scanner.scan()
        if app.watcher:
            app.watcher.start()
        app.service.set_serving(True)
        yield app, events
    finally:
        app.service.request_stop()
        app.service.wait_for_termination(0)
        app.close()


def open_index(data: Path) -> NoteIndex:
    return NoteIndex(
        Bm25Index(data / "bm25", BM25Analyzer()),
        EdgeVectorStore(data / "vec", 384),
        IndexState(data / "state.sqlite"),
        384,
    )


def follow_until_ready(index: NoteIndex, scanner: ScannerApp, events: str, timeout_s: float = 120) -> None:
    """Start a follower (catch-up + reconcile), wait until it is ready, stop it."""
    follower = EventFollower(index, scanner.service.address, events, lambda jobs: None, 0.2)
    follower.start()
    try:
        assert follower.ready.wait(timeout_s)
    finally:
        follower.stop()


def test_subscriber_down_during_10k_changes_catches_up_exactly_once_in_order(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    for i in range(50):
        (vault / f"seed{i}.md").write_text(f"seed note {i}")
    with running_scanner(vault, tmp_path / "scanner", watch=False) as (scanner, events):
        index = open_index(tmp_path / "retriever")
        follow_until_ready(index, scanner, events)
        seen_before = index.state.last_applied_seq
        index.close()

        for i in range(10_000):  # with the subscriber stopped
            (vault / f"n{i % 2500}.md").write_text(f"note {i % 2500} version {i // 2500} keyword{i}")
            if i % 2500 == 2499:
                scanner.scanner.scan()
        last = scanner.scanner.manifest.last_seq()
        assert last - seen_before == 10_000

        applied: list[int] = []
        original = EventFollower.apply

        def recording(self: EventFollower, batch: list[common_pb2.ChangeEvent]) -> None:
            applied.extend(e.seq for e in batch)
            original(self, batch)

        monkeypatch.setattr(EventFollower, "apply", recording)
        index = open_index(tmp_path / "retriever")
        follow_until_ready(index, scanner, events)
        assert applied == list(range(seen_before + 1, last + 1))
        assert index.state.last_applied_seq == last
        assert [c.split("#")[0] for c, _ in index.bm25.search("keyword9999", 5, Scope())] == ["n2499.md"]
        assert len(index.state.docs) == 2550
        index.close()


def test_watch_window_is_fixed_not_sliding(vault: Path, tmp_path: Path):
    with running_scanner(vault, tmp_path / "scanner", watch=True) as (_scanner, events):
        context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        sub = ChangeSubscriber(context, events)
        try:
            time.sleep(0.3)  # let the subscription reach the publisher (slow joiner)
            stop = threading.Event()

            def keep_writing() -> None:  # a change every 150 ms for 6 s: a sliding debounce would never fire
                i = 0
                while not stop.is_set() and i < 40:
                    (vault / f"w{i}.md").write_text(f"write {i}")
                    i += 1
                    time.sleep(0.15)

            writer = threading.Thread(target=keep_writing)
            started = time.monotonic()
            writer.start()
            event = None
            while event is None and time.monotonic() - started < 20:
                event = sub.receive(100)
            first_event_after = time.monotonic() - started
            stop.set()
            writer.join()
            assert event is not None and event.kind == common_pb2.CHANGE_KIND_ADDED
            assert first_event_after < 4.0, f"first event after {first_event_after:.1f} s: the window slid"
        finally:
            sub.close()
            context.term()


def test_new_parser_version_refetches_every_note(vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for i in range(5):
        (vault / f"p{i}.md").write_text(f"# Parsed {i}\n\nbody {i}\n")
    with running_scanner(vault, tmp_path / "scanner", watch=False) as (scanner, events):
        index = open_index(tmp_path / "retriever")
        follow_until_ready(index, scanner, events, 30)
        index.state.parser_version = "an older parser"
        index.close()
        refreshed: list[str] = []
        original = EventFollower._sync_paths

        def recording(self: EventFollower, refresh, remove, **options):  # type: ignore[no-untyped-def]
            refresh = list(refresh)
            refreshed.extend(refresh)
            original(self, refresh, remove, **options)

        monkeypatch.setattr(EventFollower, "_sync_paths", recording)
        index = open_index(tmp_path / "retriever")
        assert index.state.parser_version == "an older parser"
        follow_until_ready(index, scanner, events, 30)
        assert sorted(refreshed) == [f"p{i}.md" for i in range(5)]
        assert index.state.parser_version not in ("", "an older parser")
        index.close()


def test_interrupt_ends_a_subscribers_wait_and_every_later_one(tmp_path: Path):
    """A stopping follower's wait for events ends when asked, not when its poll times out."""
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    sub = ChangeSubscriber(context, f"tcp://127.0.0.1:{free_port()}")  # no publisher: nothing comes
    try:
        answers: list[common_pb2.ChangeEvent | None] = []
        waiting = threading.Thread(target=lambda: answers.append(sub.receive(-1)))  # -1: no timeout
        waiting.start()
        time.sleep(0.2)
        assert waiting.is_alive()
        sub.interrupt()
        waiting.join(timeout=30)
        assert not waiting.is_alive() and answers == [None]
        assert sub.receive(-1) is None  # later waits end at once too
    finally:
        sub.close()
        context.term()


def test_an_event_from_another_publisher_changes_nothing_the_scanner_did_not_journal(vault: Path, tmp_path: Path):
    """ZeroMQ carries no token: whatever publishes on the events address (a stray scanner of
    another folder, a squatted port) only wakes the follower. Its paths and seqs are not
    applied: the journal, read through Scanner.Changes, says what changed. A stray event with
    the next seq removed the note it named, and the change the scanner journaled under that seq
    was then never applied."""
    (vault / "kept.md").write_text("# Kept\n\nthe note a forged event names\n")
    with running_scanner(vault, tmp_path / "scanner", watch=False) as (scanner, _events):
        index = open_index(tmp_path / "retriever")
        follow_until_ready(index, scanner, _events)
        seq = index.state.last_applied_seq
        context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        stray_addr = f"tcp://127.0.0.1:{free_port()}"
        stray = ChangePublisher(context, stray_addr)
        follower = EventFollower(index, scanner.service.address, stray_addr, lambda jobs: None, 3600)
        follower.start()
        try:
            assert follower.ready.wait(60)
            forged = common_pb2.ChangeEvent(seq=seq + 1, kind=common_pb2.CHANGE_KIND_DELETED, path="kept.md")
            for _ in range(30):  # past the slow joiner's first messages
                stray.publish(forged)
                time.sleep(0.05)
            time.sleep(0.5)
            assert "kept.md" in index.state.docs
            assert index.state.last_applied_seq == seq

            (vault / "later.md").write_text("# Later\n\nwritten after the forged event\n")
            scanner.scanner.scan()  # journaled, published on the real address this follower does not hear
            wake = common_pb2.ChangeEvent(seq=seq + 1, kind=common_pb2.CHANGE_KIND_ADDED, path="invented.md")
            deadline = time.monotonic() + 30
            last = scanner.scanner.manifest.last_seq()
            while index.state.last_applied_seq != last and time.monotonic() < deadline:  # applied, then committed
                stray.publish(wake)
                time.sleep(0.05)
            assert "later.md" in index.state.docs and "invented.md" not in index.state.docs
            assert index.state.last_applied_seq == last
        finally:
            follower.stop()
            stray.close()
            context.term()
            index.close()


def followed_again(
    vault: Path, scanner: ScannerApp, index: NoteIndex, caught_up: Callable[[], bool], what: str
) -> None:
    """The follower caught up with the scanner's new journal (`caught_up`), and a later edit reaches
    the index: it goes on following that journal."""
    wait_for(caught_up, 30, what)
    (vault / "n2.md").write_text("note 2 zqlaterstill")
    scanner.scanner.scan()
    wait_for(lambda: "zqlaterstill" in index.state.docs["n2.md"].chunks[0].text, 30, "a later edit")


def test_a_scanner_whose_manifest_was_lost_is_followed_again(vault: Path, tmp_path: Path):
    """The scanner's manifest lost (deleted to reset the index, its folder gone, then a restart):
    the new journal began at seq 1 while the retriever had applied the old one up to N, so it took
    every new change for one it had seen, and `Changes(since N)` answered nothing: no later edit,
    note or deletion reached the index, with every service SERVING. Now a `since_seq` past a
    journal's end is refused, and the reconcile that follows records the new journal's seq."""
    for i in range(30):
        (vault / f"n{i}.md").write_text(f"note {i} first")
    grpc_addr, events = f"127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    index = open_index(tmp_path / "retriever")
    with running_scanner(vault, tmp_path / "scanner-a", False, grpc_addr, events) as (scanner, _):
        for round_ in range(3):  # the old journal goes well past what a new one starts with
            for i in range(30):
                (vault / f"n{i}.md").write_text(f"note {i} round {round_}")
            scanner.scanner.scan()
        follower = EventFollower(index, grpc_addr, events, lambda jobs: None, 0.2)
        follower.start()
        assert follower.ready.wait(60)
        old_seq = index.state.last_applied_seq
        assert old_seq >= 120
    try:
        with running_scanner(vault, tmp_path / "scanner-b", False, grpc_addr, events) as (scanner, _):
            assert scanner.scanner.manifest.last_seq() < old_seq  # a new journal, begun again at 1
            (vault / "n0.md").write_text("note 0 zqafterloss")
            (vault / "n1.md").unlink()
            (vault / "new.md").write_text("a new note zqnewafterloss")
            scanner.scanner.scan()

            def followed() -> bool:
                docs, last = index.state.docs, scanner.scanner.manifest.last_seq()
                changed = "n1.md" not in docs and "new.md" in docs and "zqafterloss" in docs["n0.md"].chunks[0].text
                return changed and index.state.last_applied_seq == last

            followed_again(
                vault,
                scanner,
                index,
                followed,
                "the changes made after the manifest was lost, and the new journal's seq",
            )
    finally:
        follower.stop()
        index.close()


def test_a_lost_manifest_whose_new_journal_passes_the_old_seq_is_followed(vault: Path, tmp_path: Path):
    """The same loss in a vault with more notes than the seq the retriever had applied: the new
    journal's first scan numbers past it, so `Changes(since N)` was answered with the entries
    after N, and the changes made while the manifest was gone, numbered below N, were taken as
    seen (an edit and a deletion kept out of the index until a restart). Now the follower gives
    the name of the journal its seq counts in, the new journal refuses it, and it reconciles."""
    for i in range(30):
        (vault / f"n{i}.md").write_text(f"note {i} first")
    grpc_addr, events = f"127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    index = open_index(tmp_path / "retriever")
    follower = EventFollower(index, grpc_addr, events, lambda jobs: None, 0.2)
    try:
        with running_scanner(vault, tmp_path / "scanner-a", False, grpc_addr, events) as (scanner, _):
            follower.start()
            assert follower.ready.wait(60)
            old_seq, old_journal = index.state.last_applied_seq, index.state.journal_id
            assert old_seq == 30 and old_journal == scanner.scanner.manifest.journal_id
        (vault / "n0.md").write_text("note 0 zqwhilelost")  # while the scanner is down, its manifest lost
        (vault / "n1.md").unlink()
        for i in range(30, 40):
            (vault / f"n{i}.md").write_text(f"note {i} added while lost")
        with running_scanner(vault, tmp_path / "scanner-b", False, grpc_addr, events) as (scanner, _):
            assert scanner.scanner.manifest.last_seq() > old_seq  # the new journal's first scan passed N

            def followed() -> bool:
                docs, journal = index.state.docs, scanner.scanner.manifest.journal_id
                changed = "n1.md" not in docs and "zqwhilelost" in docs["n0.md"].chunks[0].text and len(docs) == 39
                return changed and index.state.journal_id == journal != old_journal

            followed_again(
                vault,
                scanner,
                index,
                followed,
                "the changes made while the manifest was lost, and the new journal's name",
            )
    finally:
        follower.stop()
        index.close()


def test_an_edit_that_keeps_size_and_mtime_is_found_by_the_watch(vault: Path, tmp_path: Path):
    """`cp -p` or `rsync -a` of another copy into a running vault: same size, mtime kept. The OS
    reports the path; the scan skipped it by size and mtime, and the old text stayed searchable."""
    note = vault / "same.md"
    note.write_text("version zqaaaaaaaaaa")
    hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(note, ns=(hour_ago, hour_ago))
    with running_scanner(vault, tmp_path / "scanner", watch=True) as (scanner, events):
        context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        sub = ChangeSubscriber(context, events)
        try:
            time.sleep(0.3)  # the subscription reaches the publisher (slow joiner)
            note.write_text("version zqbbbbbbbbbb")
            os.utime(note, ns=(hour_ago, hour_ago))
            deadline, event = time.monotonic() + 20, None
            while time.monotonic() < deadline and (event is None or event.path != "same.md"):
                event = sub.receive(200)
            assert event is not None and event.kind == common_pb2.CHANGE_KIND_MODIFIED
            assert scanner.scanner.manifest.files["same.md"].hash != ""
        finally:
            sub.close()
            context.term()
