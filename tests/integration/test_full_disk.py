"""A vault on a full disk (a real 1 MB tmpfs, filled): what k0maru writes into the vault for the
user fails with a clear error, leaves no partial or temp file, and loses nothing the user or the
agent had: `k0maru offload` prints the output it could not keep. Mounting needs root; elsewhere
the test is skipped."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from k0maru.v1 import offload_pb2, retriever_pb2
from k0maru_cli import Launcher, StackState
from k0maru_common import K0Error, StackClient
from tests.conftest import write_notes

pytestmark = pytest.mark.integration
LOG = "".join(f"line {i}: compiling crate_{i}\n" for i in range(400)) + "error[E0502]: cannot borrow `v`\n"


@pytest.fixture
def disk(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A tmpfs of `@pytest.mark.disk_size(...)` (default 1m), unmounted afterwards."""
    marker = request.node.get_closest_marker("disk_size")
    size = marker.args[0] if marker else "1m"
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError, match="No space left"):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)
    return filler


@contextlib.contextmanager
def alpha_stack(vault: Path, data: Path, embedders: int) -> Iterator[tuple[Launcher, StackState, StackClient]]:
    """A stack watching a vault of one note, "a.md" (about lighthouses), stopped afterwards."""
    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n"})
    launcher = Launcher(vault, data, embedders=embedders, http_port=0, extra_env={"K0_WATCH": "true"})
    state = launcher.start()
    client = state.client()
    try:
        yield launcher, state, client
    finally:
        client.close()
        launcher.stop()


def leftovers(vault: Path) -> list[str]:
    return sorted(p.name for p in vault.rglob("*") if p.name.startswith((".tmp-", ".k0-flush-")))


def test_a_full_disk_fails_writes_clearly_and_loses_no_output(disk: Path, tmp_path: Path):
    vault = write_notes(disk / "vault", {"a.md": "# Alpha\n\nthe alpha note\n"})
    launcher = Launcher(vault, tmp_path / "data", embedders=0, http_port=0)  # the data dir has room
    state = launcher.start()
    client = state.client()
    try:
        filler = fill(disk)
        with pytest.raises(K0Error, match=r"cannot write the log \.k0maru/refs/.*: the disk is full"):
            client.call(client.offload.OffloadLog, offload_pb2.OffloadLogRequest(text=LOG, task_id="t1"))
        note = offload_pb2.FlushRequest(title="Decided: retry budget", content="We retry 3 times.", category="decision")
        with pytest.raises(K0Error, match=r"cannot write the (note|folder) .*: the disk is full"):
            client.call(client.offload.FlushSession, note)
        assert leftovers(vault) == []

        # the agent's command: its whole output still reaches it, and its own exit code
        command = [sys.executable, "-c", "import sys; [print(f'out {i}') for i in range(300)]; sys.exit(3)"]
        done = subprocess.run(
            [sys.executable, "-m", "k0maru_cli", "offload", "--vault", str(vault), "--data-dir", str(tmp_path / "data"),
             "--", *command],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 3, done.stderr
        printed = [line for line in done.stdout.splitlines() if line.startswith("out ")]
        assert printed == [f"out {i}" for i in range(300)]
        assert "not offloaded" in done.stderr and "the disk is full" in done.stderr
        assert leftovers(vault) == []

        filler.unlink()  # room again: the same calls work, nothing was left stuck
        reply = client.call(client.offload.OffloadLog, offload_pb2.OffloadLogRequest(text=LOG, task_id="t1"))
        assert reply.offloaded and (vault / ".k0maru" / "refs" / f"t1_{reply.node_id}.log").read_text() == LOG
        written = client.call(client.offload.FlushSession, note)
        assert (vault / written.path).read_text().count("We retry 3 times.") == 1
    finally:
        client.close()
        launcher.stop()


@pytest.mark.disk_size("48m")
def test_a_full_data_dir_stops_no_service_and_loses_no_change(disk: Path, vault: Path):
    """The data dir's disk fills up while notes are being written. The scanner could not record
    them and exited, and could not start again (the session before: the launcher kept the rest
    serving and retried it with growing waits). Now nothing stops: the scanner keeps its
    manifest and journal as they were, says why (its status, `k0maru status`, a Scan call), the
    rest serves on, and once there is room the notes written meanwhile are recorded and found."""
    from k0maru.v1 import scanner_pb2

    with alpha_stack(vault, disk / "data", embedders=0) as (launcher, state, client):
        filler = fill(disk)
        write_notes(vault, {f"inbox/zebra-{i}.md": f"# Zebra {i}\n\nthe zebra quokka note {i}\n" for i in range(5)})
        deadline = time.monotonic() + 120
        status = scanner_pb2.ScannerStatusRequest()
        while "disk is full" not in client.call(client.scanner.Status, status).problem:
            assert time.monotonic() < deadline, "the scanner never said it cannot record the changes"
            launcher.supervise()
            time.sleep(0.2)
        assert "changes are recorded once there is room" in client.call(client.scanner.Status, status).problem
        with pytest.raises(K0Error, match=r"cannot write the scanner's manifest .*: the disk is full") as raised:
            client.call(client.scanner.Scan, scanner_pb2.ScanRequest())
        assert raised.value.code == "RESOURCE_EXHAUSTED"
        launcher.supervise()
        assert launcher.failing == {} and set(state.health().values()) == {"SERVING"}
        bm25 = retriever_pb2.SearchRequest(query="lighthouses", mode=retriever_pb2.SEARCH_MODE_BM25)
        assert [h.path for h in client.call(client.retriever.Search, bm25).hits] == ["a.md"]

        filler.unlink()
        zebra = retriever_pb2.SearchRequest(query="zebra quokka", mode=retriever_pb2.SEARCH_MODE_BM25)
        while len(client.call(client.retriever.Search, zebra).hits) < 5:
            assert time.monotonic() < deadline, "the notes written meanwhile were never found"
            launcher.supervise()
            time.sleep(0.2)
        assert sorted(h.path for h in client.call(client.retriever.Search, zebra).hits) == [
            f"inbox/zebra-{i}.md" for i in range(5)
        ]
        assert client.call(client.scanner.Status, status).problem == "" and launcher.failing == {}


@pytest.mark.disk_size("48m")
def test_an_agent_is_told_why_a_service_is_down(disk: Path, vault: Path):
    """`k0maru mcp`'s stack thread: a call to a service that cannot come back says why, not just
    "unavailable". The retriever, killed while the data dir's disk is full, cannot open its
    vector store again."""
    from k0maru_cli._mcp_stack import DeferredStackClient, StackThread
    from k0maru_common import DependencyFailed

    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note\n"})
    data = disk / "data"
    stack = StackThread(lambda: None, lambda: Launcher(vault, data, embedders=0, http_port=0))
    stack.start()
    client = DeferredStackClient(str(vault), stack, wait_s=120)
    search = retriever_pb2.SearchRequest(query="alpha", mode=retriever_pb2.SEARCH_MODE_BM25)
    try:
        client.call(client.retriever.Search, search)  # up
        filler = fill(disk)
        state = StackState.load(data)
        assert state is not None
        os.kill(state.pids["retriever"], signal.SIGKILL)
        deadline = time.monotonic() + 120
        while "retriever" not in stack.failing() and time.monotonic() < deadline:
            time.sleep(0.2)
        with pytest.raises(DependencyFailed, match=r"retriever is down: the disk holding .* is full"):
            client.call(client.retriever.Search, search, timeout=5)
        filler.unlink()
    finally:
        stack.stop()


def leave_free(disk: Path, free_bytes: int) -> Path:
    """Fill the disk, then give back `free_bytes`."""
    filler = fill(disk)
    os.truncate(filler, max(0, filler.stat().st_size - free_bytes))
    return filler


FULL_STORE_SCRIPT = """
import sys
from pathlib import Path
import numpy as np
from k0maru_common import CannotWrite
from k0maru_retriever._bm25 import Scope
from k0maru_retriever._vectors import EdgeVectorStore, VectorPoint
from tests.integration.test_full_disk import leave_free
disk = Path(sys.argv[1])
rng = np.random.default_rng(7)
def points(start, n):
    return [VectorPoint(f"n{i}.md#0", "h", f"n{i}.md", "", [], rng.standard_normal(384).astype(np.float32))
            for i in range(start, start + n)]
store = EdgeVectorStore(disk / "store", 384)
store.upsert(points(0, 200))
filler = leave_free(disk, 1 << 20)  # room for ~250 points: 1,000 would need ~3.7 MB
try:
    store.upsert(points(200, 1000))
    raise SystemExit("the upsert went ahead on a full disk")
except CannotWrite as exc:
    assert exc.code == "RESOURCE_EXHAUSTED" and "disk is full" in str(exc), exc
assert store.count() == 200
assert len(store.search(rng.standard_normal(384).astype(np.float32), 5, Scope((), (), ()))) == 5
filler.unlink()
store.upsert(points(200, 1000))
assert store.count() == 1200
store.close()
print("ok")
"""


@pytest.mark.disk_size("64m")
def test_vectors_meeting_a_full_disk_are_refused_not_a_crash(disk: Path):
    """Qdrant Edge writes through memory maps: on a full disk its write was a SIGBUS that killed
    the retriever (exit -7). Now a write that the disk has no room for is refused with
    RESOURCE_EXHAUSTED, the store keeps serving, and the same write works once there is room.
    In a child process, so that the old crash fails this test instead of ending pytest."""
    done = subprocess.run(
        [sys.executable, "-c", FULL_STORE_SCRIPT, str(disk)],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-3000:])


HNSW_ROOM_SCRIPT = """
import os, signal, sys, time
from pathlib import Path
import numpy as np
from k0maru_retriever import _hnsw
from k0maru_retriever._bm25 import Scope
from k0maru_retriever._vectors import EdgeVectorStore, VectorPoint
from tests.integration.test_full_disk import leave_free
_hnsw.RETRY_AFTER_S = 0.0
disk = Path(sys.argv[1])
rng = np.random.default_rng(7)
def points(start, n):
    return [VectorPoint(f"n{i}.md#0", "h", f"n{i}.md", "", [], rng.standard_normal(384).astype(np.float32))
            for i in range(start, start + n)]
def until(what, check):
    deadline = time.monotonic() + 120
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)
def search_works():
    return len(store.search(rng.standard_normal(384).astype(np.float32), 5, Scope((), (), ()))) == 5
store = EdgeVectorStore(disk / "store", 384, hnsw_min_points=300)
builder = store._hnsw
store.upsert(points(0, 299))

# 1. no room for the copy and the new index: the build is put off, not started
filler = leave_free(disk, 64 << 20)
store.upsert(points(299, 1))
until("the build tried", lambda: builder._retry_at > 0)
until("and put off", lambda: not store.hnsw_building)
assert builder._proc is None and store.hnsw_builds == 0 and store.count() == 300 and search_works()
assert not _hnsw.build_dir(disk / "store").exists()
filler.unlink()

# 2. the disk fills up while the child builds: the swap (which replays through memory maps) is put off
store.upsert(points(300, 10))  # room again: this write starts a build
until("the build process", lambda: builder._proc is not None)
child = builder._proc
child.send_signal(signal.SIGSTOP)
store.upsert(points(310, 300))  # written meanwhile: the swap would replay them into the new shard
with store._lock:  # the swap waits for the lock: the child finishes, then the disk fills up
    child.send_signal(signal.SIGCONT)
    until("the child's build", lambda: child.poll() is not None)
    assert child.returncode == 0, child.returncode
    filler = leave_free(disk, 64 << 10)
until("the swap put off", lambda: not store.hnsw_building)
assert store.hnsw_builds == 0 and store.count() == 610 and search_works()
assert not _hnsw.build_dir(disk / "store").exists()  # its room is given back
filler.unlink()

# 3. room again: the next write starts a build, and it swaps in
store.upsert(points(610, 10))
until("a build swapped in", lambda: store.hnsw_builds == 1)
assert store.count() == 620 and store.indexed_points()[0] > 0 and search_works()
store.close()
again = EdgeVectorStore(disk / "store", 384)
assert again.count() == 620
again.close()
print("ok")
"""


@pytest.mark.disk_size("256m")
def test_hnsw_builds_wait_for_room_and_never_crash_the_store(disk: Path):
    """An HNSW build copies the vector store and the child writes a new index; the swap then
    replays the points written meanwhile into it through memory maps, which on a full disk is a
    SIGBUS. The build starts only with room for the copy and the new index (the copy keeps the
    files' holes: a plain copy wrote Edge's preallocated files out in full, 159 MB for 11 MB),
    and the swap only with room for its replay; otherwise it is put off, the live shard keeps
    every point and answers, and the next write once there is room builds and swaps it in.
    In a child process, so that a crash fails this test instead of ending pytest."""
    done = subprocess.run(
        [sys.executable, "-c", HNSW_ROOM_SCRIPT, str(disk)],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-3000:])


@pytest.mark.disk_size("128m")
def test_vectors_wait_for_room_while_search_goes_on(disk: Path, vault: Path):
    """The data dir's disk fills up while notes are being embedded: the retriever used to die by
    SIGBUS in its vector store. Now the vectors wait in the queue, the retriever says why,
    searches go on (BM25 finds the new notes), and once there is room every vector is stored."""
    from k0maru_cli._eval import wait_indexed

    status = retriever_pb2.IndexStatusRequest()
    with alpha_stack(vault, disk / "data", embedders=1) as (launcher, state, client):
        wait_indexed(client, need_vectors=True)
        retriever, embedder = state.pids["retriever"], state.pids["embedder-1"]
        os.kill(embedder, signal.SIGSTOP)  # the notes are indexed while there is room, not embedded
        try:
            write_notes(vault, {f"inbox/zebra-{i}.md": f"# Zebra {i}\n\nthe zebra quokka note {i}\n" for i in range(5)})
            deadline = time.monotonic() + 180
            while client.call(client.retriever.IndexStatus, status).documents < 6:
                assert time.monotonic() < deadline, "the notes were not indexed"
                time.sleep(0.2)
            filler = leave_free(disk, 8 << 20)  # below the vector store's reserve
        finally:
            os.kill(embedder, signal.SIGCONT)
        while "disk is full" not in client.call(client.retriever.IndexStatus, status).problem:
            assert time.monotonic() < deadline, "the retriever never said the vectors wait for room"
            launcher.supervise()
            time.sleep(0.2)
        problem = client.call(client.retriever.IndexStatus, status).problem
        assert "cannot write vectors" in problem and "wait in the queue until there is room" in problem
        zebra = retriever_pb2.SearchRequest(query="zebra quokka", mode=retriever_pb2.SEARCH_MODE_BM25)
        assert len(client.call(client.retriever.Search, zebra).hits) == 5
        launcher.supervise()
        assert launcher.failing == {} and Path(f"/proc/{retriever}").exists()

        filler.unlink()
        while True:
            index = client.call(client.retriever.IndexStatus, status)
            if index.chunks_with_vectors == index.chunks and not index.problem:
                break
            assert time.monotonic() < deadline, f"vectors not stored after room was made: {index.problem}"
            time.sleep(0.2)
        hybrid = client.call(client.retriever.Search, retriever_pb2.SearchRequest(query="zebra quokka"))
        assert {c.channel: c.ran for c in hybrid.channels} == {"bm25": True, "vector": True}
        assert state.pids["retriever"] == retriever and Path(f"/proc/{retriever}").exists()


@pytest.mark.disk_size("128m")
def test_an_embedder_outlasts_a_valkey_that_cannot_persist(disk: Path, vault: Path):
    """The data dir's disk is full: Valkey cannot append to its log and refuses every write with
    MISCONF, XREADGROUP included, until it can. The embedder took that for a bug, gave up after
    5 tries and exited, query vectors with it. Now it waits: queries keep their vectors, and
    once there is room the notes written since are embedded."""
    import redis

    from k0maru_cli._eval import wait_indexed

    with (
        alpha_stack(vault, disk / "data", embedders=1) as (launcher, state, client),
        redis.Redis.from_url(state.addresses["redis"]) as valkey,
    ):
        wait_indexed(client, need_vectors=True)
        embedder = state.pids["embedder-1"]
        filler = fill(disk)
        deadline = time.monotonic() + 60
        while True:  # any write makes Valkey try its log, and fail
            try:
                valkey.set("k0:test:probe", "1")
            except redis.ResponseError as exc:
                assert str(exc).startswith("MISCONF"), exc
                break
            assert time.monotonic() < deadline, "Valkey kept taking writes on a full disk"
            time.sleep(0.2)
        end = time.monotonic() + 20  # the old embedder gave up within ~8 s (5 tries, backoff 0.5 … 4 s)
        while time.monotonic() < end:
            launcher.supervise()
            time.sleep(0.5)
        assert Path(f"/proc/{embedder}").exists() and "embedder-1" not in launcher.failing
        fresh = client.call(client.retriever.Search, retriever_pb2.SearchRequest(query="a lighthouse keeper's log"))
        assert {c.channel: c.ran for c in fresh.channels} == {"bm25": True, "vector": True}

        filler.unlink()
        write_notes(vault, {f"inbox/zebra-{i}.md": f"# Zebra {i}\n\nthe zebra quokka note {i}\n" for i in range(3)})
        deadline = time.monotonic() + 180
        while True:
            launcher.supervise()
            index = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
            if index.documents == 4 and index.chunks_with_vectors == index.chunks:
                break
            assert time.monotonic() < deadline, f"not embedded after room was made: {index}"
            time.sleep(0.5)
        assert state.pids["embedder-1"] == embedder and Path(f"/proc/{embedder}").exists()


@pytest.mark.disk_size("64m")
def test_changes_wait_for_room_while_the_retriever_serves_what_it_has(disk: Path, vault: Path):
    """The scanner had room to record a big note, the retriever none to index it: its writes
    failed half-way (SQLite "database or disk is full", then tantivy's writer killed), and after
    five failures it exited, search with it, and could not start again on the full disk (SIGBUS
    opening its vector store). Now it checks for room before it writes: the change waits, the
    retriever keeps serving the index it has and says why, and indexes the note once there is
    room. Restarted on the full disk, it says so in one line instead of a SIGBUS."""
    status = retriever_pb2.IndexStatusRequest()
    with alpha_stack(vault, disk / "data", embedders=0) as (launcher, state, client):
        retriever = state.pids["retriever"]
        filler = leave_free(disk, 400_000)  # room for the scanner's bookkeeping only
        words = " ".join(f"word{i} lighthouse keeper" for i in range(60_000))  # 1.6 MB
        write_notes(vault, {"big.md": "# Big\n\n" + words})
        deadline = time.monotonic() + 120
        while "changes wait until there is room" not in client.call(client.retriever.IndexStatus, status).problem:
            assert time.monotonic() < deadline, "the retriever never said the changes wait for room"
            launcher.supervise()
            time.sleep(0.2)
        end = time.monotonic() + 10  # the old retriever failed 5 times and exited within ~8 s
        while time.monotonic() < end:
            launcher.supervise()
            time.sleep(0.5)
        assert launcher.failing == {} and Path(f"/proc/{retriever}").exists()
        assert state.health()["retriever"] == "SERVING"
        bm25 = retriever_pb2.SearchRequest(query="lighthouses", mode=retriever_pb2.SEARCH_MODE_BM25)
        assert [h.path for h in client.call(client.retriever.Search, bm25).hits] == ["a.md"]

        os.kill(retriever, 9)  # restarted on the full disk: one line, no SIGBUS
        while "retriever" not in launcher.failing:
            assert time.monotonic() < deadline, "the retriever came back on a full disk?"
            launcher.supervise()
            time.sleep(0.2)
        log = (disk / "data" / "logs" / "retriever.log").read_text()
        assert "retriever: cannot write the vector store" in log and "Bus error" not in log

        filler.unlink()
        big = retriever_pb2.SearchRequest(query="word59999", mode=retriever_pb2.SEARCH_MODE_BM25)
        deadline = time.monotonic() + 180  # the launcher's next try may be a minute away
        while True:
            launcher.supervise()
            with contextlib.suppress(K0Error):
                if "big.md" in [h.path for h in client.call(client.retriever.Search, big, timeout=5).hits]:
                    break
            assert time.monotonic() < deadline, "the big note was never indexed after room was made"
            time.sleep(0.5)
        assert client.call(client.retriever.IndexStatus, status).problem == ""
