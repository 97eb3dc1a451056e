"""A team vault on a drive or share that is unmounted while the stack runs, and across a restart:
the stack keeps serving the index it has, says why, refuses to write notes into the empty mount
point, and takes the drive back without indexing anything again. Real processes and a real
tmpfs; mounting needs root, elsewhere the test is skipped."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from k0maru.v1 import offload_pb2, retriever_pb2, scanner_pb2
from k0maru_cli import Launcher
from k0maru_common import K0Error, StackClient
from k0maru_gateway._mcp import build_mcp
from tests.unit.test_unmounted_vault import Drive, drives  # noqa: F401  (the fixture)

pytestmark = pytest.mark.integration
NOTES = {"a.md": "# Alpha\n\nthe lighthouse keeper's log\n", "team/b.md": "# Beta\n\nthe harbour pilot\n"}


def problem(client: StackClient) -> str:
    return str(client.call(client.scanner.Status, scanner_pb2.ScannerStatusRequest()).problem)


def until(what: str, check: Callable[[], bool], launcher: Launcher, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        launcher.supervise()
        time.sleep(0.2)


def found(client: StackClient, query: str) -> list[str]:
    request = retriever_pb2.SearchRequest(query=query, mode=retriever_pb2.SEARCH_MODE_BM25)
    return [hit.path for hit in client.call(client.retriever.Search, request).hits]


def test_the_stack_rides_out_an_unmounted_vault(tmp_path: Path, drives: Callable[[Path], Drive]):  # noqa: F811
    vault, data = tmp_path / "vault", tmp_path / "data"
    drive = drives(vault)
    drive.mount(NOTES)
    env = {"K0_WATCH": "true", "K0_RESCAN_INTERVAL_S": "1"}
    launcher = Launcher(vault, data, embedders=0, http_port=0, extra_env=env)
    state = launcher.start()
    client = state.client()
    note = offload_pb2.FlushRequest(title="Pilot rota", content="Two pilots on call.", category="decision")
    try:
        until("the notes found", lambda: found(client, "lighthouse") == ["a.md"], launcher)
        seq = client.call(client.scanner.Scan, scanner_pb2.ScanRequest()).last_seq
        drive.unmount()
        until("the scanner said why", lambda: "was a mount point" in problem(client), launcher)
        assert found(client, "lighthouse") == ["a.md"] and found(client, "harbour") == ["team/b.md"]
        # read_note: the note as it was indexed, and why (it was an empty note before)
        read = anyio.run(build_mcp(client).call_tool, "read_note", {"path": "team/b.md"})
        assert not read.is_error and read.structured_content is not None
        assert "the harbour pilot" in str(read.structured_content["text"])
        assert read.structured_content["unreadable"] == "its file cannot be read now (No such file or directory)"
        with pytest.raises(K0Error, match=r"the vault folder was a mount point and is not mounted now"):
            client.call(client.offload.FlushSession, note)
        assert not any(vault.iterdir())
        client.close()
        launcher.stop()

        launcher = Launcher(vault, data, embedders=0, http_port=0, extra_env=env)
        state = launcher.start()  # started while the drive is away: serves what it has
        client = state.client()
        assert set(state.health().values()) == {"SERVING"}
        assert "was a mount point" in problem(client) and found(client, "harbour") == ["team/b.md"]

        drive.mount(NOTES)  # the same notes, new file times
        until("the drive taken back", lambda: problem(client) == "", launcher)
        assert client.call(client.scanner.Scan, scanner_pb2.ScanRequest()).last_seq == seq  # nothing journaled
        written = client.call(client.offload.FlushSession, note)
        until("the new note found", lambda: found(client, "rota")[:1] == [written.path], launcher)
        back = client.call(client.retriever.GetNote, retriever_pb2.GetNoteRequest(path="team/b.md"))
        assert back.unreadable == "" and back.markdown == NOTES["team/b.md"]
        assert launcher.failing == {} and set(state.health().values()) == {"SERVING"}
    finally:
        client.close()
        launcher.stop()
