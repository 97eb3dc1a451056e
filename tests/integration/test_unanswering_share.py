"""A vault on a network share or FUSE file system that stops answering: every call that touches
it waits in the kernel until it answers again. A real FUSE mount (bindfs) whose daemon is
stopped (SIGSTOP) stands for the share. Searches must go on from the index, `read_note` must
answer (the note as indexed, and why), `k0maru status` must answer and the scanner must say
why no scan ends. Needs bindfs and /dev/fuse; elsewhere the tests are skipped."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest

from k0maru.v1 import retriever_pb2
from k0maru_cli import Launcher, StackState, StartupError
from k0maru_gateway._mcp import build_mcp
from k0maru_scanner import _scanner as scanner_module
from tests.conftest import write_notes
from tests.unit.test_scanner import make

pytestmark = pytest.mark.integration
NOTES = {f"n{i}.md": f"# Ferry {i}\n\nthe ferry timetable for pier {i}\n" for i in range(20)}


class Share:
    """`vault`, a bindfs mount of `behind` run in the foreground: `pause` stops its daemon."""

    def __init__(self, behind: Path, vault: Path) -> None:
        bindfs = shutil.which("bindfs")
        if bindfs is None or not os.path.exists("/dev/fuse"):
            pytest.skip("bindfs or /dev/fuse is not available here")
        vault.mkdir()
        self.vault = vault
        self.daemon = subprocess.Popen([bindfs, "-f", str(behind), str(vault)], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while subprocess.run(["mountpoint", "-q", str(vault)]).returncode != 0:
            if self.daemon.poll() is not None or time.monotonic() > deadline:
                pytest.skip(
                    f"cannot mount with bindfs here: {self.daemon.stderr.read().decode() if self.daemon.stderr else ''}"
                )
            time.sleep(0.05)

    def pause(self) -> None:
        self.daemon.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.daemon.send_signal(signal.SIGCONT)

    def close(self) -> None:
        self.resume()
        subprocess.run(["fusermount", "-u", str(self.vault)], check=False)
        self.daemon.wait(timeout=20)
        if self.daemon.stderr:
            self.daemon.stderr.close()


@pytest.fixture
def share(tmp_path: Path) -> Iterator[Share]:
    write_notes(tmp_path / "behind", NOTES)
    mounted = Share(tmp_path / "behind", tmp_path / "vault")
    try:
        yield mounted
    finally:
        mounted.close()


def until(what: str, check: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


async def recall_through_mcp(vault: Path, data: Path, query: str) -> str:
    """`recall_memory` through a `k0maru mcp` process and the MCP SDK's stdio client."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    command = [sys.executable, "-m", "k0maru_cli", "mcp", "--vault", str(vault), "--data-dir", str(data)]
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("recall_memory", {"query": query, "mode": "bm25"})
            return "".join(getattr(c, "text", "") for c in result.content)


def test_a_share_that_stops_answering_stops_no_search(share: Share, tmp_path: Path):
    data = tmp_path / "data"
    launcher = Launcher(share.vault, data, embedders=0, http_port=0, extra_env={"K0_WATCH": "true"})
    state = launcher.start()
    client = state.client()
    bm25 = retriever_pb2.SearchRequest(query="ferry timetable pier 7", mode=retriever_pb2.SEARCH_MODE_BM25)
    try:
        until(
            "the notes found",
            lambda: [h.path for h in client.call(client.retriever.Search, bm25).hits][:1] == ["n7.md"],
        )
        share.pause()
        mcp = build_mcp(client)

        def read(path: str) -> dict[str, object]:
            result = anyio.run(mcp.call_tool, "read_note", {"path": path})
            assert not result.is_error, result.content
            return dict(result.structured_content or {})

        # more read_note calls at once than the retriever has request threads (16): each held one
        with ThreadPoolExecutor(24) as pool:
            answers = list(pool.map(read, [f"n{i % 20}.md" for i in range(24)]))
        for answer in answers:
            assert str(answer["unreadable"]).startswith("its file did not answer in 5 s"), answer
            assert "the ferry timetable for pier" in str(answer["text"])  # as indexed
        assert [h.path for h in client.call(client.retriever.Search, bm25, 10.0).hits][:1] == ["n7.md"]
        # the CLI finds the running stack without asking the share (resolving its path waited)
        done = subprocess.run(
            [sys.executable, "-m", "k0maru_cli", "status", "--vault", str(share.vault), "--data-dir", str(data)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert "retriever    SERVING" in done.stdout, done.stdout + done.stderr
        searched = subprocess.run(
            [sys.executable, "-m", "k0maru_cli", "search", "ferry timetable pier 3", "--vault", str(share.vault),
             "--data-dir", str(data)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert "[n3.md:1]" in searched.stdout, searched.stdout + searched.stderr
        # an agent's `k0maru mcp` started now attaches to the running stack (it resolved the path)
        assert "n3.md" in anyio.run(recall_through_mcp, share.vault, data, "ferry timetable pier 3")
        share.resume()
        assert read("n5.md")["unreadable"] is None  # the share answers again: the file as it is
    finally:
        share.resume()
        client.close()
        launcher.stop()


def test_the_scanner_says_why_no_scan_ends(share: Share, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(scanner_module, "STUCK_SCAN_S", 1.0)
    (tmp_path / "data").mkdir()
    scanner = make(share.vault, tmp_path / "data")
    scanner.scan()
    assert scanner.stuck() == ""
    share.pause()
    scan = threading.Thread(target=scanner.scan, daemon=True)
    scan.start()
    until("the stuck scan said", lambda: "for the vault's file system" in scanner.stuck(), 30)
    assert scanner.stuck().startswith("a scan has waited ")
    share.resume()
    scan.join(timeout=30)
    assert not scan.is_alive() and scanner.stuck() == ""


def test_up_on_a_share_that_does_not_answer_says_so(share: Share, tmp_path: Path):
    """`k0maru up` on a share that hangs waited two minutes in silence (the scanner waits in the
    kernel before it serves), then blamed the scanner, whose log was empty. It says why now, at
    once, and fails with that reason; once the share answers, the stack starts."""
    said: list[str] = []
    share.pause()
    launcher = Launcher(share.vault, tmp_path / "data", embedders=0, http_port=0, startup_timeout_s=8)
    launcher.on_progress = said.append
    started = time.monotonic()
    with pytest.raises(StartupError, match="did not answer within 8 s"):
        launcher.start()
    assert time.monotonic() - started < 60
    assert said == [
        f"the vault folder {share.vault} has not answered for 5 s (a network share or a FUSE mount whose "
        "server stopped answering?); waiting for it"
    ]
    assert StackState.load(tmp_path / "data") is None  # nothing left running
    share.resume()
    launcher = Launcher(share.vault, tmp_path / "data", embedders=0, http_port=0)
    launcher.on_progress = said.append
    state = launcher.start()
    try:
        client = state.client()
        bm25 = retriever_pb2.SearchRequest(query="ferry timetable pier 7", mode=retriever_pb2.SEARCH_MODE_BM25)
        until(
            "the notes found",
            lambda: [h.path for h in client.call(client.retriever.Search, bm25).hits][:1] == ["n7.md"],
        )
        client.close()
        assert len(said) == 1  # the share answered: nothing more said
    finally:
        launcher.stop()
