"""The whole stack as an agent host uses it: `k0maru mcp` over stdio, driven by the MCP SDK's client."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from k0maru.v1 import offload_pb2
from tests.conftest import MCP_TOOLS, write_notes

pytestmark = pytest.mark.e2e
K0MARU = str(Path(sys.executable).parent / "k0maru")
NOTES = {
    "db/sqlite busy.md": "---\ntags: [sqlite]\n---\n# SQLite busy\n\n`SQLITE_BUSY` means the database is locked; set busy_timeout and use WAL.\n",
    "rust/borrows.md": "# Borrow checker\n\nerror[E0502] happens when a mutable borrow overlaps a shared one. See [[sqlite busy]].\n",
    "cooking.md": "# Pancakes\n\nFlour, eggs, milk. Rest the batter for twenty minutes.\n",
}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def wait_until_dead(pids: list[int], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def structured(result) -> dict:  # type: ignore[no-untyped-def]
    assert not result.is_error, result.content
    return result.structured_content


async def recall(session: ClientSession, query: str) -> list[str]:
    data = structured(await session.call_tool("recall_memory", {"query": query, "limit": 3}))
    return [h["path"] for h in data["hits"]]


LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "rust_panic.log"


async def offload_tools(session: ClientSession, vault: Path) -> None:
    """offload_log → inspect_log_node → distill_session_skill → flush_session → recall, and the loadout."""
    off = structured(await session.call_tool("offload_log", {"text": LOG.read_text(), "task_id": "ci-run"}))
    assert off["offloaded"] and "src/lib.rs:602:67" in off["summary"] and off["mermaid"].startswith("flowchart")
    assert off["summary_tokens"] <= 0.03 * off["original_tokens"]
    assert (vault / ".k0maru" / "refs" / f"ci-run_{off['node_id']}.log").exists()
    part = structured(
        await session.call_tool("inspect_log_node", {"node_id": off["node_id"], "grep": "panicked", "context": 1})
    )
    assert "index out of bounds" in part["text"] and part["total_lines"] > 600
    skill = structured(await session.call_tool("distill_session_skill", {"node_id": off["node_id"]}))
    assert skill["path"].startswith("skills/") and "src/lib.rs:602:67" in skill["skill_markdown"]
    assert skill["searchable"]
    args = {
        "title": "Decided: quarantine flaky suites",
        "content": "We quarantine flaky suites behind a nightly job.",
        "category": "decision",
        "tags": ["ci"],
        "related_notes": ["sqlite busy"],
    }
    first = structured(await session.call_tool("flush_session", args))
    assert first["outcome"] == "created" and (vault / first["path"]).exists()
    # answered once searchable: the next step's recall finds it, with no wait for the watcher
    assert first["searchable"] and first["path"] in await recall(session, "quarantine flaky suites nightly")
    assert structured(await session.call_tool("flush_session", args))["outcome"] == "up_to_date"
    args["content"] = "A different decision body."
    assert structured(await session.call_tool("flush_session", args))["outcome"] == "versioned"
    # a revised decision names the one it replaces: a recall that finds the old one says so, new one first
    revision = {"title": "Decided: retry flaky suites", "content": "We retry flaky suites twice, no nightly job."}
    # one name as a string, as agents often pass a list of one (it was a raw validation error)
    revised = structured(await session.call_tool("flush_session", revision | {"supersedes": first["path"]}))
    assert revised["searchable"]
    found = structured(await session.call_tool("recall_memory", {"query": "quarantine flaky suites nightly"}))
    paths = [h["path"] for h in found["hits"]]
    assert found["hits"][paths.index(first["path"])]["superseded_by"] == [revised["path"]]
    assert paths.index(revised["path"]) < paths.index(first["path"])
    read = structured(await session.call_tool("read_note", {"path": first["path"]}))
    assert read["superseded_by"] == [revised["path"]]  # reading the old decision says it too
    escape = await session.call_tool("flush_session", {"title": "../../../etc/x", "content": "no"})
    assert escape.is_error
    loadout = structured(await session.call_tool("get_project_loadout", {}))
    assert loadout["vault"] == str(vault.resolve()) and "L0 project" in loadout["markdown"]
    assert loadout["tokens"] <= 300
    whole = structured(await session.call_tool("get_project_loadout", {"max_tokens": 2000}))["markdown"]
    assert f"[[{revised['path'].removesuffix('.md')}]]" in whole  # the current decision, not the one it revised
    assert f"[[{first['path'].removesuffix('.md')}]]" not in whole


def test_recall_add_and_clean_exit(vault: Path, tmp_path: Path):
    write_notes(vault, NOTES)
    data_dir = tmp_path / "data"
    params = StdioServerParameters(
        command=K0MARU,
        args=["mcp", "--vault", str(vault), "--data-dir", str(data_dir), "--tool-wait", "150"],
        env={**os.environ, "K0_LOG_LEVEL": "WARNING"},
    )
    pids: list[int] = []

    async def scenario() -> None:
        with anyio.fail_after(180):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                tools = {t.name for t in (await session.list_tools()).tools}
                assert set(MCP_TOOLS) <= tools
                data = structured(await session.call_tool("recall_memory", {"query": "SQLITE_BUSY locked"}))
                state = json.loads((data_dir / "stack.json").read_text())  # the first tool waited for it
                pids.extend(state["pids"].values())
                assert data["vault"] == str(vault.resolve())
                assert data["hits"][0]["path"] == "db/sqlite busy.md"
                assert (await recall(session, "mutable borrow E0502"))[0] == "rust/borrows.md"
                lost = structured(await session.call_tool("recall_memory", {"query": "SQLITE_BUSY", "folder": "dbs/"}))
                assert lost["hits"] == [] and lost["empty_scope"] == ["no note is in the folder dbs/"]
                # a folder as agents write it: `./db`, or joined with the vault every answer names
                for folder in ("./db", f"{vault.resolve()}/db/", "db\\"):
                    scoped = structured(await session.call_tool("recall_memory", {"query": "", "folder": folder}))
                    assert [h["path"] for h in scoped["hits"]] == ["db/sqlite busy.md"], folder
                # TagMemo reshapes the query's vector: wait until the notes have vectors (the first
                # answers may come from BM25 alone, `left_out` saying why)
                with anyio.fail_after(120):
                    while structured(await session.call_tool("recall_memory", {"query": "SQLITE_BUSY"}))["left_out"]:
                        await anyio.sleep(0.5)
                nothing = structured(await session.call_tool("recall_memory", {"query": "zebra giraffe savannah"}))
                assert nothing["hits"] and nothing["caveat"].startswith("no note holds any of the query's words")
                assert data["caveat"] is None  # SQLITE_BUSY is in a note
                shaped = structured(
                    await session.call_tool(
                        "recall_memory",
                        {"query": "SQLITE_BUSY locked", "tagmemo": True, "tag_weight": 0.3, "explain": True},
                    )
                )
                assert shaped["tagmemo"] is not None and shaped["hits"][0]["path"] == "db/sqlite busy.md"
                assert shaped["tagmemo"]["applied"] or shaped["tagmemo"]["reason"]  # applied, or says why not
                weights = shaped["channel_weights"]  # hybrid with explain: each channel's share for this query
                assert "bm25" in weights and sum(weights.values()) == pytest.approx(1.0, abs=1e-3)
                assert data["channel_weights"] is None  # only with explain
                assert (await session.call_tool("recall_memory", {"query": "x", "tag_weight": 3})).is_error

                write_notes(
                    vault,
                    {"new/kafka.md": "# Kafka lag\n\nConsumer lag grows when the partition rebalance storm hits.\n"},
                )
                found: list[str] = []
                with anyio.fail_after(30):
                    while "new/kafka.md" not in found:
                        found = await recall(session, "partition rebalance storm")
                        await anyio.sleep(0.2)

                await offload_tools(session, vault)

                bad = await session.call_tool("recall_memory", {"query": "   "})
                assert bad.is_error
                bad = await session.call_tool("inspect_log_node", {"node_id": "../../etc/passwd"})
                assert bad.is_error and "invalid node id" in bad.content[0].text

    anyio.run(scenario)
    assert pids, "the stack never started"
    assert wait_until_dead(pids, 30) == [], "processes of the stack outlived the MCP client"
    assert not (data_dir / "stack.json").exists()


def test_sigkill_of_launcher_leaves_nothing(vault: Path, tmp_path: Path):
    write_notes(vault, NOTES)
    data_dir = tmp_path / "data"
    launcher = subprocess.Popen(
        [K0MARU, "up", "--vault", str(vault), "--data-dir", str(data_dir), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert launcher.stdout is not None
        deadline = time.monotonic() + 120
        for line in launcher.stdout:
            if "all healthy" in line or time.monotonic() > deadline:
                break
        state = json.loads((data_dir / "stack.json").read_text())
        pids = list(state["pids"].values())
        assert len(pids) == 6 and all(alive(p) for p in pids)
        status = subprocess.run(
            [K0MARU, "status", "--vault", str(vault), "--data-dir", str(data_dir), "--json"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert status.returncode == 0, status.stdout + status.stderr
        report = json.loads(status.stdout)
        assert set(report["services"].values()) == {"SERVING"}
        assert (
            set(report["addresses"])
            == set(report["services"])
            == {"scanner", "embedder-1", "retriever", "offload", "gateway"}
        )
        assert all(":" in a and "://" not in a for a in report["addresses"].values())  # host:port gRPC addresses
        os.kill(launcher.pid, signal.SIGKILL)
        launcher.wait(timeout=10)
        assert wait_until_dead(pids, 30) == []
        status = subprocess.run(
            [K0MARU, "status", "--vault", str(vault), "--data-dir", str(data_dir)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert status.returncode == 1
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        if launcher.stdout is not None:
            launcher.stdout.close()


def test_mcp_uses_a_running_stack_and_leaves_it_running(vault: Path, tmp_path: Path):
    from k0maru_cli import Launcher

    write_notes(vault, NOTES)
    data_dir = tmp_path / "data"
    launcher = Launcher(vault, data_dir, embedders=1, http_port=0)
    state = launcher.start()
    try:
        params = StdioServerParameters(command=K0MARU, args=["mcp", "--vault", str(vault), "--data-dir", str(data_dir)])
        resume = threading.Timer(1.5, os.kill, (state.pids["offload"], signal.SIGCONT))

        async def scenario() -> None:
            with anyio.fail_after(60):
                async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    assert (await recall(session, "SQLITE_BUSY"))[0] == "db/sqlite busy.md"
                    await anyio.sleep(0.5)  # that recall in the ledger: the connection to it is up
                    # the ledger (offload) slow to answer: the recall does not wait for it, the exit does
                    os.kill(state.pids["offload"], signal.SIGSTOP)
                    resume.start()
                    assert (await recall(session, "E0502"))[0] == "rust/borrows.md"

        anyio.run(scenario)
        resume.join()
        assert json.loads((data_dir / "stack.json").read_text())["pids"] == state.pids
        assert all(alive(p) for p in state.pids.values())
        # the session ended right after its last recall: that recall is in the token ledger all the same
        # (sent in the background, and waited for before `k0maru mcp` exits)
        with state.client() as client:
            stats = client.call(client.offload.TokenStats, offload_pb2.TokenStatsRequest())
        assert stats.recalls == 2 and stats.recall_note_tokens > 0
    finally:
        launcher.stop()


def test_a_second_agent_keeps_its_memory_when_the_first_agents_stack_stops(vault: Path, tmp_path: Path):
    """Two agent hosts on one vault: the second `k0maru mcp` attached to the stack the first one
    started; when the first host closed, its stack stopped, and every flush of the second failed
    for the rest of its session. It now starts a stack of its own (calls wait meanwhile)."""
    from k0maru_cli import Launcher

    write_notes(vault, NOTES)
    data_dir = tmp_path / "data"
    first = Launcher(vault, data_dir, embedders=0, http_port=0)
    first_state = first.start()
    params = StdioServerParameters(
        command=K0MARU, args=["mcp", "--vault", str(vault), "--data-dir", str(data_dir), "--tool-wait", "90"]
    )
    pids: list[int] = []

    async def scenario() -> None:
        with anyio.fail_after(150):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                assert (await recall(session, "SQLITE_BUSY"))[0] == "db/sqlite busy.md"  # attached
                first.stop()  # the first agent host closed
                assert not any(alive(p) for p in first_state.pids.values())
                saved = structured(
                    await session.call_tool("flush_session", {"title": "Kept after the handover", "content": "x"})
                )
                assert saved["outcome"] == "created" and (vault / saved["path"]).is_file()
                state = json.loads((data_dir / "stack.json").read_text())
                assert state["launcher_pid"] != first_state.launcher_pid  # its own stack now
                pids.extend(state["pids"].values())

    try:
        anyio.run(scenario)
    finally:
        first.stop()
    assert pids and wait_until_dead(pids, 30) == []  # and it stopped that one as it closed


def test_mcp_answers_at_once_and_says_what_is_still_starting(vault: Path, tmp_path: Path):
    """initialize and tools/list never wait for the stack; a tool called too early says why."""
    write_notes(vault, NOTES)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    params = StdioServerParameters(
        command=K0MARU, args=["mcp", "--vault", str(vault), "--data-dir", str(data_dir), "--tool-wait", "1"]
    )
    with open(data_dir / "stack.lock", "w") as lock:  # another launcher holds the data dir: no stack can come up
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)

        async def scenario() -> None:
            with anyio.fail_after(60):
                async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    assert "recall_memory" in {t.name for t in (await session.list_tools()).tools}
                    early = await session.call_tool("recall_memory", {"query": "SQLITE_BUSY"})
                    assert early.is_error and "still starting" in early.content[0].text

        anyio.run(scenario)
    assert not (data_dir / "stack.json").exists()


def test_an_agent_leaving_during_a_first_build_stops_the_stack_without_restarts(vault: Path, tmp_path: Path):
    """A big vault's first build: tools answer from the notes indexed so far; an agent that quits
    meanwhile (the SDK terminates the server's process group) leaves nothing running, and the
    launcher, still waiting for the build, restarts nothing on its way out."""
    for i in range(20_000):  # a build that outlasts the launcher's 2 s before it attaches MCP
        (vault / f"n{i:05d}.md").write_text(f"# Note {i}\n\nshared words and uniq{i:05d}\n")
    data_dir, errlog = tmp_path / "data", tmp_path / "mcp.log"
    env = {**os.environ, "K0_BUILD_COMMIT_S": "0"}  # a commit per 200 notes
    args = ["mcp", "--vault", str(vault), "--data-dir", str(data_dir), "--embedders", "0"]
    answers: list[dict] = []
    pids: list[int] = []

    async def scenario() -> None:
        with errlog.open("w") as err:
            async with (
                stdio_client(StdioServerParameters(command=K0MARU, args=args, env=env), errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                with anyio.fail_after(120):
                    while not answers:
                        result = await session.call_tool("recall_memory", {"query": "uniq00000", "limit": 3})
                        if not result.is_error:  # nothing committed yet: the retriever says so
                            answers.append(result.structured_content)
                        await anyio.sleep(0.05)
                pids.extend(json.loads((data_dir / "stack.json").read_text())["pids"].values())

    anyio.run(scenario)
    (answer,) = answers
    assert answer["partial"] and answer["partial"][0].startswith("bm25: the index is being built ("), answer
    assert [h["path"] for h in answer["hits"]] == ["n00000.md"]
    assert wait_until_dead(pids, 30) == [], "processes of the stack outlived the MCP client"
    assert not (data_dir / "stack.json").exists()
    assert "starting it again" not in errlog.read_text()
