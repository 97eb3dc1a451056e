"""HNSW built in a child process and swapped into a live Qdrant Edge store (real Edge, real processes).

Small shards and a low build threshold keep these quick; nothing here is timed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from k0maru_retriever import _hnsw
from k0maru_retriever._bm25 import Scope
from k0maru_retriever._vectors import EdgeVectorStore
from tests.conftest import wait_for
from tests.integration.hnsw_writer import DIM, MIN_POINTS, point, vector_of

WRITER = Path(__file__).with_name("hnsw_writer.py")
ROOT = Path(__file__).resolve().parents[2]


def chunk(pid: int) -> str:
    return f"n{pid}.md#0"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EdgeVectorStore]:
    s = EdgeVectorStore(tmp_path / "vectors", DIM, hnsw_min_points=MIN_POINTS)
    yield s
    s.close()


def child_of(store: EdgeVectorStore) -> subprocess.Popen[bytes]:
    proc: subprocess.Popen[bytes] | None = wait_for(lambda: store._hnsw._proc, 60, "the build process")
    assert proc is not None
    return proc


def assert_holds(store: EdgeVectorStore, expected: dict[int, int]) -> None:
    """Every point of `expected` (id -> version) stored with its vector, and nothing else."""
    got = store.vectors_of([chunk(p) for p in expected])
    assert set(got) == {chunk(p) for p in expected}
    for pid, version in expected.items():
        np.testing.assert_allclose(got[chunk(pid)], unit(vector_of(pid, version)), atol=1e-5)
    assert store.count() == len(expected)


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)  # Edge stores cosine vectors normalised


def test_queries_answered_during_build_and_writes_meanwhile_kept(store: EdgeVectorStore, tmp_path: Path):
    store.upsert([point(p, 0) for p in range(MIN_POINTS)])
    proc = child_of(store)
    os.kill(proc.pid, signal.SIGSTOP)  # hold the build: everything below happens while it runs
    try:
        assert store.hnsw_building
        assert store.indexed_points() == (0, MIN_POINTS)
        assert store.search(vector_of(7, 0), 1, Scope())[0][0] == chunk(7)  # brute force, answered
        store.upsert([point(p, 0) for p in range(MIN_POINTS, MIN_POINTS + 30)])  # new
        store.upsert([point(p, 1) for p in range(10)])  # changed
        store.delete([chunk(p) for p in range(10, 20)])  # gone
        assert store.search(vector_of(3, 1), 1, Scope())[0][0] == chunk(3)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    wait_for(lambda: store.hnsw_builds == 1, 120, "the index swapped in")
    expected = {p: 1 if p < 10 else 0 for p in range(MIN_POINTS + 30) if not 10 <= p < 20}
    assert_holds(store, expected)
    indexed, total = store.indexed_points()
    assert indexed > 0 and total == len(expected)  # the snapshot's segment has its HNSW
    assert store.search(vector_of(MIN_POINTS + 5, 0), 1, Scope())[0][0] == chunk(MIN_POINTS + 5)
    assert not _hnsw.build_dir(tmp_path / "vectors").exists() and not _hnsw.old_dir(tmp_path / "vectors").exists()
    store.close()
    again = EdgeVectorStore(tmp_path / "vectors", DIM)  # what was swapped in survives a reopen
    assert_holds(again, expected)
    assert again.indexed_points()[0] == indexed
    again.close()


def test_a_later_build_waits_for_as_many_new_points_as_the_index_holds(store: EdgeVectorStore):
    """Doubling: a vault's first embedding builds at 5k, 10k, 20k… points, not every 5k."""
    store.upsert([point(p, 0) for p in range(3 * MIN_POINTS)])
    wait_for(lambda: store.hnsw_builds == 1, 120, "the first index swapped in")
    indexed, total = store.indexed_points()
    assert indexed == total == 3 * MIN_POINTS
    store.upsert([point(p, 0) for p in range(3 * MIN_POINTS, 4 * MIN_POINTS)])
    assert not store.hnsw_building  # MIN_POINTS new points: a build per MIN_POINTS would start here
    store.upsert([point(p, 0) for p in range(4 * MIN_POINTS, 6 * MIN_POINTS)])
    assert store.hnsw_building  # as many as the index holds
    wait_for(lambda: store.hnsw_builds == 2, 120, "the second index swapped in")
    assert store.indexed_points()[0] > indexed
    assert_holds(store, dict.fromkeys(range(6 * MIN_POINTS), 0))
    store.delete([chunk(p) for p in range(5 * MIN_POINTS)])  # most notes deleted
    assert store.index_state()[0] <= store.count() == MIN_POINTS  # status said more indexed than there were


def test_past_its_cap_a_build_starts_every_so_many_new_points(store: EdgeVectorStore, monkeypatch: pytest.MonkeyPatch):
    """A big vault under edits is rebuilt every REBUILD_AFTER_MAX new points, not only once it has
    written as many as its whole index: no more than that many are ever searched brute force."""
    monkeypatch.setattr(_hnsw, "REBUILD_AFTER_MAX", 2 * MIN_POINTS)
    store.upsert([point(p, 0) for p in range(3 * MIN_POINTS)])
    wait_for(lambda: store.hnsw_builds == 1, 120, "the first index swapped in")
    store.upsert([point(p, 1) for p in range(MIN_POINTS)])  # edits: new vectors of indexed points
    assert not store.hnsw_building
    store.upsert([point(p, 1) for p in range(MIN_POINTS, 2 * MIN_POINTS)])
    assert store.hnsw_building  # 2 x MIN_POINTS, fewer than the 3 x MIN_POINTS indexed
    wait_for(lambda: store.hnsw_builds == 2, 120, "the second index swapped in")
    assert_holds(store, {p: 1 if p < 2 * MIN_POINTS else 0 for p in range(3 * MIN_POINTS)})


def test_killed_build_keeps_the_live_shard_and_a_later_build_succeeds(
    store: EdgeVectorStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(_hnsw, "RETRY_AFTER_S", 0.0)
    store.upsert([point(p, 0) for p in range(MIN_POINTS)])
    proc = child_of(store)
    proc.kill()
    wait_for(lambda: not store.hnsw_building, 60, "the failed build noticed")
    assert store.hnsw_builds == 0
    assert not _hnsw.build_dir(tmp_path / "vectors").exists()
    assert_holds(store, dict.fromkeys(range(MIN_POINTS), 0))
    store.upsert([point(MIN_POINTS, 0)])  # the next write starts another build
    wait_for(lambda: store.hnsw_builds == 1, 120, "the second build swapped in")
    assert_holds(store, dict.fromkeys(range(MIN_POINTS + 1), 0))
    assert store.indexed_points()[0] > 0


def test_swap_cut_between_its_renames_goes_back_to_the_old_shard(tmp_path: Path):
    live = tmp_path / "vectors"
    s = EdgeVectorStore(live, DIM)
    s.upsert([point(p, 0) for p in range(50)])
    s.close()
    shutil.copytree(live, _hnsw.build_dir(live))  # a copy that never got the journal replayed
    live.rename(_hnsw.old_dir(live))  # the first rename done, the second not: the crash
    again = EdgeVectorStore(live, DIM)
    assert_holds(again, dict.fromkeys(range(50), 0))
    assert not _hnsw.build_dir(live).exists() and not _hnsw.old_dir(live).exists()
    again.close()


def test_swap_cut_before_the_replay_was_flushed_goes_back_to_the_old_shard(tmp_path: Path):
    live = tmp_path / "vectors"
    s = EdgeVectorStore(live, DIM)
    s.upsert([point(p, 0) for p in range(50)])
    s.close()
    shutil.copytree(live, tmp_path / "snapshot")
    s = EdgeVectorStore(live, DIM)
    s.upsert([point(p, 1) for p in range(5)])  # written during the "build": only in the old shard
    s.close()
    live.rename(_hnsw.old_dir(live))  # both renames done, the mark still in the new shard: the crash
    (tmp_path / "snapshot").rename(live)
    (live / _hnsw.PENDING_MARK).touch()
    again = EdgeVectorStore(live, DIM)
    assert_holds(again, {p: 1 if p < 5 else 0 for p in range(50)})
    assert not _hnsw.old_dir(live).exists() and not (live / _hnsw.PENDING_MARK).exists()
    again.close()


def expected_from(log: Path) -> tuple[dict[int, int], dict[int, set[int | None]]]:
    """From the writer's log: id -> version surely stored, and ids whose last write may or may
    not have landed when the writer was killed (-> the versions allowed, None for absent)."""
    sure: dict[int, int | None] = {}
    either: dict[int, set[int | None]] = {}
    pending: list[tuple[str, int, int]] = []

    def killed() -> None:
        for op, pid, version in pending:
            either[pid] = either.get(pid, {sure.get(pid)}) | {version if op == "u" else None}
            sure.pop(pid, None)
        pending.clear()

    for line in log.read_text().splitlines():
        word, *rest = line.split()
        if word == "begin":
            pending.append((rest[0], int(rest[1]), int(rest[2])))
        elif word == "end":
            for op, pid, version in pending:
                sure[pid] = version if op == "u" else None
                either.pop(pid, None)
            pending.clear()
        elif word == "start":
            killed()
    killed()
    return {p: v for p, v in sure.items() if v is not None}, either


def test_writer_killed_at_any_moment_loses_no_acknowledged_write(tmp_path: Path):
    live, log = tmp_path / "vectors", tmp_path / "writes.log"
    log.touch()
    # (wait for a swap in this run first, then delay): kills during a first build, then at
    # different moments of later builds and swaps
    for after_swap, delay in ((False, 0.5), (True, 0.0), (True, 0.4), (True, 1.1), (False, 2.5)):
        writer = subprocess.Popen([sys.executable, str(WRITER), str(live), str(log)], cwd=ROOT)
        written = log.read_text().count("end")
        wait_for(
            lambda w=writer, n=written: log.read_text().count("end") >= n + 10 or w.poll() is not None, 60, "writes"
        )  # type: ignore[misc]
        if after_swap:
            swaps = log.read_text().count("built")
            wait_for(
                lambda w=writer, n=swaps: log.read_text().count("built") > n or w.poll() is not None, 300, "a swap"
            )  # type: ignore[misc]
        assert writer.poll() is None
        time.sleep(delay)  # not a synchronisation: only where in its cycle the kill lands
        writer.kill()
        writer.wait()
        store = EdgeVectorStore(live, DIM)
        sure, either = expected_from(log)
        got = store.vectors_of([chunk(p) for p in [*sure, *either]])
        for pid, version in sure.items():
            np.testing.assert_allclose(got[chunk(pid)], unit(vector_of(pid, version)), atol=1e-5)
        for pid, allowed in either.items():
            v = got.get(chunk(pid))
            assert any(
                (v is None) if a is None else (v is not None and np.allclose(v, unit(vector_of(pid, a)), atol=1e-5))
                for a in allowed
            ), pid
        assert len(sure) <= store.count() <= len(sure) + len(either)
        assert not _hnsw.build_dir(live).exists() and not _hnsw.old_dir(live).exists()
        store.close()


def test_a_stack_reports_its_hnsw_index_in_index_status_and_k0maru_status(tmp_path: Path):
    """A real stack with a low threshold: the background build is reported by IndexStatus
    (`vectors_indexed`, `index_building`) and by `k0maru status`."""
    from k0maru.v1 import retriever_pb2
    from k0maru_cli import Launcher
    from tests.conftest import write_notes

    notes = {
        f"n{i}.md": f"# Note {i}\n\n" + "\n\n".join(f"## Part {j}\n\ntopic {i} part {j}" for j in range(3))
        for i in range(8)
    }
    vault = write_notes(tmp_path / "vault", notes)
    launcher = Launcher(vault, tmp_path / "data", embedders=1, http_port=0, extra_env={"K0_HNSW_MIN_POINTS": "10"})
    state = launcher.start()
    client = state.client()
    try:

        def status() -> retriever_pb2.IndexStatusResponse:
            reply: retriever_pb2.IndexStatusResponse = client.call(
                client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest()
            )
            return reply

        wait_for(lambda: status().vectors_indexed > 0 and not status().index_building, 120, "the HNSW swapped in")
        assert status().chunks_with_vectors >= status().vectors_indexed
        shown = subprocess.run(
            [str(Path(sys.executable).with_name("k0maru")), "status", "--data-dir", str(tmp_path / "data"),
             "--vault", str(vault)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert "in an HNSW index" in shown.stdout, shown.stdout + shown.stderr
    finally:
        client.close()
        launcher.stop()
