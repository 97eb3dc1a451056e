"""An index build (first start, re-sync, reindex) is searchable while under way, says how far it
has come, and a retriever killed in the middle resumes after its last commit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from k0maru.v1 import retriever_pb2, retriever_pb2_grpc
from k0maru_cli import free_port
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

        def observed_commit(last_applied_seq: int | None = None) -> None:
            first, last = (bool(index.bm25.search(f"uniq{i:04d}", 5, Scope())) for i in (0, 999))
            seen.append((last_applied_seq, follower.progress, follower.searchable.is_set(), first, last))
            commit(last_applied_seq)

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


def test_a_retriever_killed_mid_build_resumes_after_its_last_commit(vault: Path, tmp_path: Path):
    notes = 4000
    write_notes(vault, notes)
    data, log = tmp_path / "retriever", tmp_path / "retriever.log"
    with running_scanner(vault, tmp_path / "scanner", watch=False) as (scanner, events):
        address = f"127.0.0.1:{free_port()}"
        env = {
            **os.environ,
            "K0_VAULT": str(vault),
            "K0_DATA_DIR": str(data),
            "K0_SCANNER_ADDR": scanner.service.address,
            "K0_EVENTS_ADDR": events,
            "K0_GRPC_ADDR": address,
            "K0_EMBEDDER_TARGET": "",
            "K0_BUILD_COMMIT_S": "0",
        }

        def start() -> subprocess.Popen[bytes]:
            with open(log, "ab") as out:
                return subprocess.Popen([sys.executable, "-m", "k0maru_retriever"], env=env, stderr=out)

        channel = grpc.insecure_channel(address)
        stub = retriever_pb2_grpc.RetrieverStub(channel)
        first = start()
        try:
            deadline = time.monotonic() + 120
            while (reply := _search(stub, "uniq0000")) is None and time.monotonic() < deadline:
                time.sleep(0.005)
            assert reply is not None, "the first build never answered"
            first.kill()  # SIGKILL: no shutdown, no final commit
            first.wait()
            # answered mid-build, from the notes committed so far, saying how far it had come
            assert reply.HasField("index_progress"), "the build had finished before the kill"
            indexed = reply.index_progress.notes_indexed
            assert 0 < indexed < notes and reply.index_progress.notes_total == notes
            assert [h.path for h in reply.hits] == ["n0000.md"]

            second = start()
            try:
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    last = _search(stub, "uniq3999")
                    if last is not None and not last.HasField("index_progress"):
                        break
                    time.sleep(0.05)
                else:
                    pytest.fail("the second run never finished its build")
                assert [h.path for h in last.hits] == ["n3999.md"]
                status = stub.IndexStatus(retriever_pb2.IndexStatusRequest(), timeout=10)
                assert status.documents == notes and status.consistent, status.problem
            finally:
                second.terminate()
                second.wait(30)
        finally:
            if first.poll() is None:
                first.kill()
            channel.close()
    fetched = [int(n) for n in re.findall(r"reconciled: (\d+) fetched", log.read_text())]
    assert len(fetched) == 1, "only the second run finished a reconcile"
    assert fetched[0] <= notes - indexed  # what the first run had committed was not fetched again
