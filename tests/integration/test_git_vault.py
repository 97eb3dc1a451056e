"""A team's vault, cloned from git: a clone stamps every file with the day it ran, so its notes are
dated by the commits that wrote them (the date scope, a listing, MCP's hits and read_note); a note
edited or written since goes by its file; a pull dates what it brings by its commits."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from k0maru.v1 import retriever_pb2
from k0maru_cli import Launcher
from k0maru_common import StackClient
from k0maru_gateway._mcp import build_mcp
from tests.conftest import git, git_commit, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.skipif(shutil.which("git") is None, reason="needs git")]
BM25 = retriever_pb2.SEARCH_MODE_BM25
K0MARU = str(Path(sys.executable).parent / "k0maru")


def listing(client: StackClient, **scope: str) -> list[tuple[str, str]]:
    reply = client.call(
        client.retriever.Search,
        retriever_pb2.SearchRequest(query="", limit=20, mode=BM25, scope=retriever_pb2.Scope(**scope)),
    )
    return [(h.path, h.committed) for h in reply.hits]


def k0maru_status(vault: Path, data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [K0MARU, "status", "--vault", str(vault), "--data-dir", str(data)], capture_output=True, text=True, timeout=60
    )


def test_a_cloned_vault_is_dated_by_its_commits(tmp_path: Path):
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    git_commit(
        origin, "2025-03-01", {"adr/cache.md": "# Cache\n\nwrite-through otter cache\n", "ops/deploy.md": "# Deploy\n"}
    )
    git_commit(origin, "2025-09-01", {"ops/deploy.md": "# Deploy\n\nblue-green otter deploy\n"})
    git_commit(origin, "2025-05-05", {"adr/dated.md": "---\ndate: 2024-01-10\n---\n# Dated\n\notter\n"})
    vault = tmp_path / "vault"
    git(tmp_path, "clone", "-q", str(origin), str(vault))
    (vault / "adr" / "cache.md").write_text("# Cache\n\nwrite-through otter cache, edited here\n", encoding="utf-8")
    (vault / "ops" / "draft.md").write_text("# Draft\n\nnot committed\n", encoding="utf-8")
    today = time.strftime("%Y-%m-%d", time.gmtime())

    launcher = Launcher(vault, tmp_path / "data", embedders=0, http_port=0)
    client = launcher.start().client()
    try:
        wait_for(lambda: len(listing(client, path_prefixes=["adr/", "ops/"])) == 4, 45, "the four notes")
        # the history is read in the background: a note fetched before it ended is fetched again
        wait_for(lambda: ("ops/deploy.md", "2025-09-01") in listing(client, since="2025-01-01"), 45, "the days")
        # cloned today, written before: only what was edited or written here is this week's
        assert sorted(listing(client, since="7d")) == [("adr/cache.md", ""), ("ops/draft.md", "")]
        assert listing(client, since="2025-01-01", until="2025-12-31") == [("ops/deploy.md", "2025-09-01")]
        assert listing(client, until="2024-12-31") == [("adr/dated.md", "2025-05-05")]  # its own date first
        mcp = build_mcp(client)
        found = anyio.run(mcp.call_tool, "recall_memory", {"query": "blue-green otter deploy", "mode": "bm25"})
        hit = next(h for h in found.structured_content["hits"] if h["path"] == "ops/deploy.md")
        assert (hit["date"], hit["committed"], hit["modified"]) == (None, "2025-09-01", today)
        note = anyio.run(mcp.call_tool, "read_note", {"path": "ops/deploy.md"}).structured_content
        assert note["committed"] == "2025-09-01"
        shell = subprocess.run(
            [K0MARU, "search", "--vault", str(vault), "--data-dir", str(tmp_path / "data"), "--since", "2025-09-01"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "[ops/deploy.md:1]  2025-09-01" in shell.stdout, shell.stdout + shell.stderr  # the day it goes by
        status = k0maru_status(vault, tmp_path / "data")
        assert "dates   notes that name no date go by their last commit (read at " in status.stdout, status.stdout

        # a teammate's commit, pulled: the note it changes is dated by that commit
        git_commit(origin, "2025-10-20", {"ops/deploy.md": "# Deploy\n\nblue-green otter deploy, canary first\n"})
        git(vault, "pull", "-q", "--no-rebase", "origin", "main")
        wait_for(
            lambda: listing(client, since="2025-10-20", until="2025-10-20") == [("ops/deploy.md", "2025-10-20")],
            45,
            "the pulled note dated by its commit",
        )
    finally:
        client.close()
        launcher.stop()


def test_a_project_folders_gitignored_virtual_environment_is_left_out_until_the_gitignore_lets_it_in(tmp_path: Path):
    """`k0maru up` in a project: the virtual environment .gitignore names holds .txt files that
    are nobody's notes; the private journal it names holds the user's. A change to .gitignore
    wakes the watcher (the periodic rescan is 30 s away)."""
    vault = tmp_path / "project"
    vault.mkdir()
    git(vault, "init", "-q", "-b", "main")
    site = "venv/lib/python3.11/site-packages/otter-1.0.dist-info"
    files = {"README.md": "# Otter project\n", ".gitignore": "venv/\njournal/\n", "journal/monday.md": "# Otter log\n"}
    files |= {f"{site}/{n}": "otter\n" for n in ("METADATA", "RECORD", "WHEEL", "INSTALLER", "top_level.txt")}
    git_commit(vault, "2025-03-01", {"README.md": files.pop("README.md")})
    for rel, text in files.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text, encoding="utf-8")
    launcher = Launcher(vault, tmp_path / "data", embedders=0, http_port=0)
    client = launcher.start().client()
    try:
        wait_for(lambda: len(listing(client, path_prefixes=[""])) == 2, 45, "README and the journal")
        assert sorted(p for p, _ in listing(client, path_prefixes=[""])) == ["README.md", "journal/monday.md"]
        status = k0maru_status(vault, tmp_path / "data")
        assert "exclude venv/: ignored by .gitignore and holding no notes, not indexed" in status.stdout, status.stdout
        (vault / ".gitignore").write_text("journal/\n", encoding="utf-8")
        wait_for(lambda: f"{site}/top_level.txt" in [p for p, _ in listing(client, path_prefixes=[""])], 15, "venv")
    finally:
        client.close()
        launcher.stop()
