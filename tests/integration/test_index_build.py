"""An index build (first start, re-sync, reindex) is searchable while under way, says how far it
has come, and a retriever killed in the middle resumes after its last commit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest

from k0maru.v1 import retriever_pb2, retriever_pb2_grpc
from k0maru_cli import Launcher, free_port
from k0maru_retriever._bm25 import Scope
from k0maru_retriever._follower import EventFollower
from tests.integration.test_events import open_index, running_scanner

pytestmark = pytest.mark.integration


def write_notes(vault: Path, n: int) -> None:
    """Notes fetched in path order, each with one word no other note has."""
    for i in range(n):
        (vault / f"n{i:04d}.md").write_text(f"# Note {i}\n\nshared words and uniq{i:04d}\n")


def test_a_build_is_searchable_along_the_way_and_says_how_far_it_has_come(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    write_notes(vault, 1000)
    with running_scanner(vault, tmp_path / "scanner", watch=False) as (scanner, events):
        index = open_index(tmp_path / "retriever")
        # 0: a commit after every batch of 200 notes
        follower = EventFollower(index, scanner.service.address, events, lambda _jobs: None, 0.2, first_commit_s=0.0)
        seen: list[tuple[object, ...]] = []  # what a search saw just before each commit
        commit = index.commit

        def observed_commit(last_applied_seq: int | None = None, journal_id: str | None = None) -> None:
            first, last = (bool(index.bm25.search(f"uniq{i:04d}", 5, Scope())) for i in (0, 999))
            seen.append((last_applied_seq, follower.progress, follower.searchable.is_set(), first, last))
            commit(last_applied_seq, journal_id)

        monkeypatch.setattr(index, "commit", observed_commit)
        follower.start()
        try:
            assert follower.ready.wait(120)
        finally:
            follower.stop()
        builds = [s for s in seen if s[0] is None]  # the commits along the way
        assert builds[0] == (None, (0, 1000), False, False, False)  # nothing committed: not searchable
        assert builds[1] == (None, (200, 1000), True, True, False)  # the first 200 notes are
        assert [s[1] for s in builds] == [(i, 1000) for i in range(0, 1000, 200)]
        assert seen[-1][0] is not None and seen[-1][1:] == ((1000, 1000), True, True, True)  # the last commit
        assert follower.progress is None and follower.ready.is_set()
        assert index.state.parser_version  # recorded by the first commit, so a restart resumes
        index.close()


# the channels are opened before the retriever listens: gRPC's default reconnect backoff (1 s and
# growing) could skip past a short build, so that the first answer would come after it
QUICK_RECONNECT = [
    ("grpc.initial_reconnect_backoff_ms", 10),
    ("grpc.min_reconnect_backoff_ms", 10),
    ("grpc.max_reconnect_backoff_ms", 50),
]


def _search(stub: retriever_pb2_grpc.RetrieverStub, query: str) -> retriever_pb2.SearchResponse | None:
    """The answer, or None while the retriever is not up or has nothing searchable yet."""
    try:
        return stub.Search(
            retriever_pb2.SearchRequest(query=query, mode=retriever_pb2.SEARCH_MODE_BM25, limit=3), timeout=5
        )
    except grpc.RpcError as exc:
        if exc.code() != grpc.StatusCode.UNAVAILABLE:
            raise
        return None


@contextmanager
def retriever_processes(vault: Path, tmp_path: Path) -> Iterator[tuple[Callable[[], subprocess.Popen[bytes]], str]]:
    """A real scanner (in-process) and a way to start real retriever processes following it,
    committing their builds after every batch of 200 notes; their stderr goes to retriever.log."""
    with running_scanner(vault, tmp_path / "scanner", watch=False) as (scanner, events):
        address = f"127.0.0.1:{free_port()}"
        env = {
            **os.environ,
            "K0_VAULT": str(vault),
            "K0_DATA_DIR": str(tmp_path / "retriever"),
            "K0_SCANNER_ADDR": scanner.service.address,
            "K0_EVENTS_ADDR": events,
            "K0_GRPC_ADDR": address,
            "K0_EMBEDDER_TARGET": "",
            "K0_BUILD_COMMIT_S": "0",
        }
        started: list[subprocess.Popen[bytes]] = []

        def start() -> subprocess.Popen[bytes]:
            with open(tmp_path / "retriever.log", "ab") as out:
                started.append(subprocess.Popen([sys.executable, "-m", "k0maru_retriever"], env=env, stderr=out))
            return started[-1]

        try:
            yield start, address
        finally:
            for proc in started:
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait(30)


def first_answer_mid_build(stub: retriever_pb2_grpc.RetrieverStub) -> retriever_pb2.SearchResponse:
    deadline = time.monotonic() + 120
    while (reply := _search(stub, "uniq0000")) is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert reply is not None, "the build never answered"
    assert reply.HasField("index_progress"), "the build had finished before the first answer"
    return reply


def test_a_retriever_killed_mid_build_resumes_after_its_last_commit(vault: Path, tmp_path: Path):
    notes = 4000
    write_notes(vault, notes)
    with (
        retriever_processes(vault, tmp_path) as (start, address),
        grpc.insecure_channel(address, QUICK_RECONNECT) as channel,
    ):
        stub = retriever_pb2_grpc.RetrieverStub(channel)
        first = start()
        reply = first_answer_mid_build(stub)
        status = stub.IndexStatus(retriever_pb2.IndexStatusRequest(), timeout=10)
        first.kill()  # SIGKILL: no shutdown, no final commit
        first.wait()
        # answered mid-build, from the notes committed so far, saying how far it had come
        indexed = reply.index_progress.notes_indexed
        assert 0 < indexed < notes and reply.index_progress.notes_total == notes
        assert [h.path for h in reply.hits] == ["n0000.md"]
        assert status.HasField("build") and status.build.notes_total == notes  # as the launcher sees it
        assert status.consistent, status.problem  # mid-build BM25 lags the bookkeeping: not a problem

        start()
        deadline = time.monotonic() + 120
        while (last := _search(stub, "uniq3999")) is None or last.HasField("index_progress"):
            assert time.monotonic() < deadline, "the second run never finished its build"
            time.sleep(0.05)
        assert [h.path for h in last.hits] == ["n3999.md"]
        status = stub.IndexStatus(retriever_pb2.IndexStatusRequest(), timeout=10)
        assert status.documents == notes and status.consistent and not status.HasField("build"), status.problem
    fetched = [int(n) for n in re.findall(r"reconciled: (\d+) fetched", (tmp_path / "retriever.log").read_text())]
    assert len(fetched) == 1, "only the second run finished a reconcile"
    assert fetched[0] <= notes - indexed  # what the first run had committed was not fetched again


def test_a_launcher_waits_for_a_build_that_keeps_moving_and_reports_each_step(vault: Path, tmp_path: Path):
    notes = 4000
    write_notes(vault, notes)
    steps: list[str] = []
    launcher = Launcher(vault, tmp_path / "stack", embedders=0, startup_timeout_s=10, on_progress=steps.append)
    with (
        retriever_processes(vault, tmp_path) as (start, address),
        grpc.insecure_channel(address, QUICK_RECONNECT) as channel,
    ):
        stub = retriever_pb2_grpc.RetrieverStub(channel)
        start()
        first_answer_mid_build(stub)
        # a start-up begun an hour ago: without the build's steps its timeout would be long past
        launcher._wait("retriever", address, time.monotonic() - 3600, "")
        reply = _search(stub, "uniq3999")
        assert reply is not None and not reply.HasField("index_progress")  # waited for SERVING: all in
        assert [h.path for h in reply.hits] == ["n3999.md"]
    assert steps, "no step of the build was reported"
    step = re.compile(r"retriever: ([\d,]+) of 4,000 notes indexed so far \(searches answer from these meanwhile\)")
    matches = [step.fullmatch(text) for text in steps]
    counts = [int(m.group(1).replace(",", "")) for m in matches if m]
    assert len(counts) == len(steps) and counts == sorted(set(counts)), steps  # each step once, moving forward
