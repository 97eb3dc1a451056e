"""A crashed service is restarted by the launcher and the stack keeps answering."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from k0maru.v1 import retriever_pb2
from k0maru_cli import Launcher
from k0maru_common import StackClient
from tests.conftest import write_notes

pytestmark = pytest.mark.integration


def test_crashed_service_is_restarted(vault: Path, tmp_path: Path):
    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n"})
    launcher = Launcher(vault, tmp_path / "data", embedders=1, http_port=0, extra_env={"K0_WATCH": "true"})
    state = launcher.start()
    client = StackClient(state.vault, state.addresses)
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
