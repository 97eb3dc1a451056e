"""Supervision: crashed services are restarted, failing background loops restart or give up, health tells the truth."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from k0maru.v1 import retriever_pb2
from k0maru_cli import Launcher
from k0maru_common import K0Error, StackClient
from tests.conftest import wait_for, write_notes

pytestmark = pytest.mark.integration


def test_crashed_service_is_restarted(vault: Path, tmp_path: Path):
    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n"})
    launcher = Launcher(vault, tmp_path / "data", embedders=1, http_port=0, extra_env={"K0_WATCH": "true"})
    state = launcher.start()
    client = state.client()
    try:
        old = state.pids["retriever"]
        os.kill(old, signal.SIGKILL)
        deadline = time.monotonic() + 60
        restarted: list[str] = []
        while "retriever" not in restarted and time.monotonic() < deadline:
            restarted += launcher.supervise()
            time.sleep(0.1)
        assert restarted == ["retriever"] and launcher.state is not None and launcher.state.pids["retriever"] != old
        reply = client.call(
            client.retriever.Search,
            retriever_pb2.SearchRequest(query="lighthouses", mode=retriever_pb2.SEARCH_MODE_BM25),
        )
        assert [h.path for h in reply.hits] == ["a.md"]
    finally:
        client.close()
        launcher.stop()


def test_worker_that_gives_up_turns_its_service_not_serving():
    import threading

    from k0maru_common import BackgroundWorker, GrpcService, health_state

    service = GrpcService("k0maru.v1.Test", "127.0.0.1:0")
    service.start()
    try:
        service.set_serving(True)
        assert health_state(service.address, "k0maru.v1.Test") == "SERVING"

        def body(stop: threading.Event) -> None:
            raise RuntimeError("the index is gone")

        worker = BackgroundWorker("loop", body, service.fail, max_failures=2, first_backoff_s=0.01)
        worker.start()
        assert service.sleep(30), "the service was not asked to stop"
        assert health_state(service.address, "k0maru.v1.Test") == "NOT_SERVING"
        service.set_serving(True)  # nothing may claim SERVING again
        assert health_state(service.address, "k0maru.v1.Test") == "NOT_SERVING"
        with pytest.raises(SystemExit, match="the index is gone"):
            service.exit_if_failed()
    finally:
        service.server.stop(0).wait()


def test_follower_survives_an_unexpected_error(vault: Path, tmp_path: Path):
    from tests.integration.test_events import open_index, running_scanner

    write_notes(vault, {"a.md": "# Alpha\n\nlighthouses\n"})
    with running_scanner(vault, tmp_path / "scanner", watch=False) as (scanner, events):
        from k0maru_retriever._follower import EventFollower

        index = open_index(tmp_path / "retriever")
        original = index.apply
        failures = ["the first apply fails"]

        def flaky_apply(doc, **options):  # a bug or a store error outside gRPC: the loop used to die silently
            if failures:
                raise RuntimeError(failures.pop())
            return original(doc, **options)

        index.apply = flaky_apply  # type: ignore[method-assign]
        follower = EventFollower(index, scanner.service.address, events, lambda jobs: None, 0.2)
        follower.start()
        try:
            assert follower.ready.wait(60)
            health = follower.health()
            assert (health.state, health.restarts) == ("running", 1)
            assert health.last_error == "RuntimeError: the first apply fails"
            assert "a.md" in index.state.docs
            write_notes(vault, {"b.md": "# Beta\n\nharbours\n"})
            scanner.scanner.scan()
            deadline = time.monotonic() + 30
            while "b.md" not in index.state.docs and time.monotonic() < deadline:
                time.sleep(0.05)
            assert "b.md" in index.state.docs
        finally:
            follower.stop()
            index.close()


def test_embedder_whose_stream_worker_keeps_failing_says_so_and_exits(valkey_url: str, tmp_path: Path):
    import grpc
    import redis

    from k0maru.v1 import embedder_pb2, embedder_pb2_grpc
    from k0maru_common import JOBS_STREAM
    from tests.integration.test_embedder import Worker

    redis.Redis.from_url(valkey_url).set(JOBS_STREAM, "not a stream")  # every XREADGROUP fails: WRONGTYPE
    worker = Worker(valkey_url, tmp_path / "embedder.log")
    try:
        with grpc.insecure_channel(worker.address) as channel:
            stub = embedder_pb2_grpc.EmbedderStub(channel)
            deadline = time.monotonic() + 60
            states: list[str] = []
            while worker.proc.poll() is None and time.monotonic() < deadline:
                with contextlib.suppress(grpc.RpcError):
                    states.append(stub.Info(embedder_pb2.EmbedderInfoRequest(), timeout=2).state)
                time.sleep(0.2)
        assert worker.proc.wait(timeout=60) == 1
        assert any(
            s.startswith(("DEGRADED: stream worker", "NOT_SERVING: stream worker")) and "WRONGTYPE" in s for s in states
        ), states
        assert "stream worker failed 5 times in a row" in worker.log.read_text()
    finally:
        worker.stop()


def test_undecodable_file_name_neither_stops_indexing_nor_start_up(vault: Path, tmp_path: Path):
    """The issue's repro: printf 'x\\n' > "$V/$(printf 'bad-\\xff.md')", then k0maru up."""
    from k0maru.v1 import scanner_pb2

    def bad(name: bytes) -> None:
        with open(os.fsencode(vault) + b"/" + name, "wb") as f:
            f.write(b"x\n")

    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n"})
    bad(b"bad-\xff.md")
    launcher = Launcher(vault, tmp_path / "data", embedders=0, http_port=0, extra_env={"K0_WATCH": "true"})
    state = launcher.start()  # the scanner used to exit during start-up
    client = state.client()
    try:
        status = client.call(client.scanner.Status, scanner_pb2.ScannerStatusRequest())
        assert status.watching and status.skipped == 1
        bad(b"worse-\xfe.md")  # while watching: watchfiles raises on this path
        write_notes(vault, {"b.md": "# Beta\n\nthe beta note about harbours\n"})
        deadline = time.monotonic() + 60
        hits: list[str] = []
        while hits != ["b.md"] and time.monotonic() < deadline:
            reply = client.call(
                client.retriever.Search,
                retriever_pb2.SearchRequest(query="harbours", mode=retriever_pb2.SEARCH_MODE_BM25),
            )
            hits = [h.path for h in reply.hits]
            time.sleep(0.2)
        assert hits == ["b.md"]
        client.call(client.scanner.Scan, scanner_pb2.ScanRequest())  # used to fail: surrogates not allowed
        status = client.call(client.scanner.Status, scanner_pb2.ScannerStatusRequest())
        assert status.watching and status.skipped == 2
        entries = client.scanner.ListDocuments(scanner_pb2.ListDocumentsRequest(include_skipped=True), timeout=10)
        assert {e.path: e.skipped_reason.split(" (")[0] for e in entries if e.skipped_reason} == {
            "bad-\\xff.md": "file name is not valid UTF-8",
            "worse-\\xfe.md": "file name is not valid UTF-8",
        }
        launcher.restart("scanner")  # and it starts again over the same vault and manifest
        assert launcher.state is not None and launcher.state.health()["scanner"] == "SERVING"
    finally:
        client.close()
        launcher.stop()


def _vector_ran(reply: retriever_pb2.SearchResponse) -> bool:
    return any(c.channel == "vector" and c.ran for c in reply.channels)


def _search_or_none(client: StackClient, request: retriever_pb2.SearchRequest) -> retriever_pb2.SearchResponse | None:
    try:
        return client.call(client.retriever.Search, request, 5)
    except K0Error:
        return None


def test_a_retriever_restarted_while_the_embedders_are_down_still_searches(vault: Path, tmp_path: Path):
    """The retriever learns the embedding model from the embedders when it starts. With none
    answering it used to wait `embedder_wait_s` and exit, so search was down as long as they
    were (a data dir that filled up took both down). Now it opens the model they served last,
    answers from BM25, and uses vectors again once an embedder is back."""
    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n", "b.md": "# Beta\n\nabout ships\n"})
    launcher = Launcher(vault, tmp_path / "data", embedders=1, http_port=0, extra_env={"K0_EMBEDDER_WAIT_S": "30"})
    state = launcher.start()
    client = state.client()
    hybrid = retriever_pb2.SearchRequest(query="lighthouses", mode=retriever_pb2.SEARCH_MODE_HYBRID)
    try:  # `start` returns once every service is healthy, not once the notes are embedded
        wait_for(lambda: _vector_ran(client.call(client.retriever.Search, hybrid)), 60, "the first vectors")
        embedder = next(proc for name, proc in launcher.procs if name == "embedder-1")
        embedder.kill()
        embedder.wait()
        launcher.restart("retriever")  # waits until it is SERVING
        # the client's channel reconnects within its backoff (at most 1 s, CHANNEL_OPTIONS)
        reply = wait_for(lambda: _search_or_none(client, hybrid), 10, "the restarted retriever")
        assert reply.hits[0].path == "a.md" and not _vector_ran(reply)
        launcher.restart("embedder-1")
        deadline = time.monotonic() + 60
        while not _vector_ran(client.call(client.retriever.Search, hybrid)):
            assert time.monotonic() < deadline, "vectors never came back"
            time.sleep(0.2)
        assert client.call(client.retriever.Search, hybrid).hits[0].path == "a.md"
    finally:
        client.close()
        launcher.stop()


def _corrupt_valkey_data(data: Path) -> None:
    """What a crash of the machine can leave: an append-only file holding bytes that are no command."""
    aofs = sorted((data / "valkey" / "appendonlydir").glob("*.incr.aof"))
    assert aofs, list((data / "valkey").rglob("*"))
    with open(aofs[-1], "ab") as f:
        f.write(b"*2\r\n$3\r\nGET\r\n\x00\xffnot a command at all\r\n")


def test_valkey_data_a_crash_corrupted_is_set_aside_and_the_stack_comes_up(vault: Path, tmp_path: Path):
    """Valkey exits at every start when it cannot load the data it saved (an append-only file
    corrupted by a crash of the machine): `k0maru up` failed, and a Valkey restarted by the
    supervisor never came back, with the embedding queue and query vectors gone with it. That
    data is a cache, a queue and a ledger that the stack rebuilds: it is now set aside, for a
    look, and Valkey starts empty; vectors already stored stay, new notes are embedded."""
    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n", "b.md": "# Beta\n\nabout ships\n"})
    data = tmp_path / "data"
    env = {"K0_WATCH": "true"}

    def embedded(client: StackClient, query: str, path: str) -> bool:
        reply = client.call(
            client.retriever.Search, retriever_pb2.SearchRequest(query=query, mode=retriever_pb2.SEARCH_MODE_VECTOR)
        )
        return bool(reply.hits) and reply.hits[0].path == path

    launcher = Launcher(vault, data, embedders=1, http_port=0, extra_env=env)
    client = launcher.start().client()
    try:
        wait_for(lambda: embedded(client, "lighthouses", "a.md"), 60, "the first vectors")
    finally:
        client.close()
        launcher.stop()
    _corrupt_valkey_data(data)

    launcher = Launcher(vault, data, embedders=1, http_port=0, extra_env=env)
    client = launcher.start().client()  # failed: "valkey exited with code 1 during start-up"
    try:
        assert [p.name.startswith("valkey.unreadable-") for p in data.iterdir() if p.name.startswith("valkey.")] == [
            True
        ]
        status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
        assert status.chunks_with_vectors == status.chunks == 2  # the vectors were never Valkey's
        (vault / "c.md").write_text("# Gamma\n\na note about submarines\n")
        wait_for(lambda: embedded(client, "submarines", "c.md"), 60, "a new note embedded through the new queue")

        valkey = next(proc for name, proc in launcher.procs if name == "valkey")
        valkey.kill()  # and a crash while the stack runs
        valkey.wait()
        _corrupt_valkey_data(data)
        deadline = time.monotonic() + 60
        restarted: list[str] = []
        while "valkey" not in restarted:
            assert time.monotonic() < deadline and "valkey" not in launcher.failing, launcher.failing
            restarted += launcher.supervise()
            time.sleep(0.1)
        assert len([p for p in data.iterdir() if p.name.startswith("valkey.unreadable-")]) == 2
        (vault / "d.md").write_text("# Delta\n\na note about volcanoes\n")
        wait_for(lambda: embedded(client, "volcanoes", "d.md"), 60, "a note embedded after the restart")
    finally:
        client.close()
        launcher.stop()


def test_embedders_back_with_another_model_make_the_retriever_restart_onto_it(vault: Path, tmp_path: Path):
    """Started with the model the embedders served last, the retriever meets them back with
    another one: it takes no vector of the other model and restarts (its supervisor starts it
    again), then asks them which model they serve."""
    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n", "b.md": "# Beta\n\nabout ships\n"})
    launcher = Launcher(vault, tmp_path / "data", embedders=1, http_port=0, model="minilm-l6-int8")
    state = launcher.start()
    client = state.client()
    hybrid = retriever_pb2.SearchRequest(query="lighthouses", mode=retriever_pb2.SEARCH_MODE_HYBRID)
    status = retriever_pb2.IndexStatusRequest()
    try:
        assert client.call(client.retriever.IndexStatus, status).embedding_model.startswith("minilm-l6-int8")
        embedder = next(proc for name, proc in launcher.procs if name == "embedder-1")
        embedder.kill()
        embedder.wait()
        launcher.restart("retriever")  # no embedder: the model they served last
        launcher._commands["embedder-1"][1]["K0_MODEL"] = "minilm-l6-q8"  # the user switched models
        launcher.restart("embedder-1")
        deadline = time.monotonic() + 120
        while True:
            launcher.supervise()  # restarts the retriever once it exits for the other model
            with contextlib.suppress(Exception):  # the retriever may be restarting
                ran = _vector_ran(client.call(client.retriever.Search, hybrid, 5))  # meets the other model
                if ran and client.call(client.retriever.IndexStatus, status, 5).embedding_model.startswith(
                    "minilm-l6-q8"
                ):
                    break
            assert time.monotonic() < deadline, "the retriever never moved to the embedders' model"
            time.sleep(0.2)
    finally:
        client.close()
        launcher.stop()
