"""The real stack as local processes: indexing follows the vault, vectors arrive, crashes converge."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from k0maru.v1 import offload_pb2, retriever_pb2, scanner_pb2
from k0maru_cli import Launcher
from k0maru_common import DependencyFailed, InvalidInput, NotFound, StackClient
from k0maru_gateway._mcp import build_mcp
from tests.conftest import wait_for, write_notes

pytestmark = pytest.mark.integration
K0MARU = str(Path(sys.executable).parent / "k0maru")
HYBRID, BM25, VECTOR = (
    retriever_pb2.SEARCH_MODE_HYBRID,
    retriever_pb2.SEARCH_MODE_BM25,
    retriever_pb2.SEARCH_MODE_VECTOR,
)

NOTES = {
    "eng/sqlite.md": "# SQLite locking\n\n`SQLITE_BUSY` is returned when another connection holds the write lock.\n",
    "eng/rust.md": "---\ntags: [rust]\n---\n# Borrowing\n\nerror[E0502]: cannot borrow as mutable because it is also borrowed as immutable.\n",
    "eng/cache.md": "# Caching\n\nA write-through cache keeps the store and the cache in step. See [[sqlite]].\n",
    "zh/分词.md": "# 中文分词\n\n借用检查器报错时，先看不可变引用的作用域。jieba 分词让关键词检索支持中文。\n",
    "mixed.md": "# Mixed note 混合笔记\n\nThe deployment uses docker compose; 部署 使用 向量 数据库 Qdrant.\n",
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Launcher, StackClient, Path]]:
    root = tmp_path_factory.mktemp("stack")
    vault = write_notes(root / "vault", NOTES)
    # the English model named: this vault is Chinese enough that the launcher would pick the
    # multilingual one, and these tests check what happens to Han queries on the English model
    launcher = Launcher(
        vault,
        root / "data",
        embedders=1,
        model="minilm-l6-int8",
        http_port=0,
        extra_env={"K0_BM25_COMPACT_QUIET_S": "1"},  # BM25 compacted in the background a second after edits
    )
    state = launcher.start()
    client = state.client()
    yield launcher, client, vault
    client.close()
    launcher.stop()


def search(client: StackClient, query: str, mode: int = HYBRID, limit: int = 5, **scope: list[str] | str) -> list[str]:
    reply = client.call(
        client.retriever.Search,
        retriever_pb2.SearchRequest(
            query=query, limit=limit, mode=mode, explain=True, scope=retriever_pb2.Scope(**scope)
        ),
    )
    return [h.path for h in reply.hits]


def coverage(client: StackClient) -> float:
    status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
    return status.chunks_with_vectors / status.chunks if status.chunks else 0.0


def test_bm25_vector_and_hybrid_find_the_right_note(stack):
    _launcher, client, _vault = stack
    wait_for(lambda: coverage(client) == 1.0, 60, "every chunk to have a vector")
    assert search(client, "SQLITE_BUSY", BM25)[0] == "eng/sqlite.md"
    assert search(client, "E0502", BM25)[0] == "eng/rust.md"
    assert search(client, "database lock held by another connection", VECTOR)[0] == "eng/sqlite.md"
    assert search(client, "检查器", BM25)[0] == "zh/分词.md"
    assert search(client, "部署", BM25)[0] == "mixed.md"
    # The default English model cannot read Chinese (STACK.md): hybrid leaves its vector channel out.
    reply = client.call(client.retriever.Search, retriever_pb2.SearchRequest(query="检查器", explain=True))
    assert reply.hits[0].path == "zh/分词.md" and reply.mode_used == BM25
    assert search(client, "部署")[0] == "mixed.md"
    for query in ("서버 배포 절차", "Сервер перезапуск"):  # nor Korean, nor Russian (it checked Han only)
        reply = client.call(client.retriever.Search, retriever_pb2.SearchRequest(query=query))
        assert reply.mode_used == BM25 and "not this query's script" in reply.channels[1].reason, query
    # asked for the vector channel alone, it answered notes near by noise as if it had run
    alone = client.call(client.retriever.Search, retriever_pb2.SearchRequest(query="检查器", mode=VECTOR))
    assert not alone.hits and not alone.channels[0].ran and "not this query's script" in alone.channels[0].reason
    reply = client.call(
        client.retriever.Search, retriever_pb2.SearchRequest(query="write-through cache sqlite", explain=True)
    )
    top = {h.path: h for h in reply.hits}
    # eng/cache.md links to eng/sqlite.md, both candidates: a rank bonus for the one not already first.
    assert any(top[p].explain.graph_boost > 0 for p in ("eng/cache.md", "eng/sqlite.md"))
    assert all(h.explain.graph_boost == 0 for p, h in top.items() if p not in ("eng/cache.md", "eng/sqlite.md"))
    assert reply.vector_coverage == 1.0 and reply.mode_used == HYBRID
    # the name match: the query holds all of one note's title ("SQLite locking"), less of any other's
    reply = client.call(client.retriever.Search, retriever_pb2.SearchRequest(query="sqlite locking", explain=True))
    named = {h.path: h.explain.name_match for h in reply.hits}
    assert reply.hits[0].path == "eng/sqlite.md" and named["eng/sqlite.md"] == pytest.approx(1.0)
    assert all(v < 1.0 for p, v in named.items() if p != "eng/sqlite.md")


def test_scope_filters(stack):
    _launcher, client, _vault = stack
    assert set(search(client, "borrow cache sqlite 借用", diaries=["zh"])) == {"zh/分词.md"}
    assert search(client, "borrow", tags=["rust"]) == ["eng/rust.md"]
    assert set(search(client, "sqlite cache borrow", path_prefixes=["eng/"])) <= {
        "eng/sqlite.md",
        "eng/cache.md",
        "eng/rust.md",
    }


@pytest.mark.parametrize("query", ["", "   ", 'title:"unterminated', "AND OR NOT ((", "x" * 10_000, "*?^~[]{}"])
def test_bad_queries_never_error(stack, query: str):
    _launcher, client, _vault = stack
    reply = client.call(client.retriever.Search, retriever_pb2.SearchRequest(query=query))
    assert reply.vault


def test_edits_renames_and_deletes_are_followed(stack):
    _launcher, client, vault = stack
    write_notes(vault, {"eng/new.md": "# Flaky test\n\nThe flaky integration test times out under heavy load.\n"})
    wait_for(lambda: search(client, "flaky integration", BM25)[:1] == ["eng/new.md"], 45, "new note by BM25")
    wait_for(
        lambda: search(client, "test that sometimes fails when the machine is busy", VECTOR)[:1] == ["eng/new.md"],
        30,
        "new note by vector",
    )
    (vault / "eng/new.md").write_text("# Flaky test\n\nNow about quarantined snapshots instead.\n")
    wait_for(lambda: search(client, "quarantined snapshots", BM25)[:1] == ["eng/new.md"], 45, "edit")
    assert "eng/new.md" not in search(client, "heavy load", BM25)
    (vault / "archive").mkdir()
    (vault / "eng/new.md").rename(vault / "archive/moved.md")
    wait_for(lambda: search(client, "quarantined snapshots", BM25)[:1] == ["archive/moved.md"], 45, "rename")
    assert "eng/new.md" not in search(client, "quarantined snapshots flaky", BM25, limit=20)
    (vault / "archive/moved.md").unlink()
    wait_for(lambda: "archive/moved.md" not in search(client, "quarantined snapshots", HYBRID, limit=20), 45, "delete")
    assert "archive/moved.md" not in search(client, "quarantined snapshots flaky", VECTOR, limit=20)


def test_bad_files_never_take_the_stack_down(stack):
    _launcher, client, vault = stack
    (vault / "bin.md").write_bytes(b"\x00\x01\x02binary")
    (vault / "latin.md").write_bytes("r\xe9sum\xe9".encode("latin-1"))
    (vault / "broken.md").write_text("---\ntitle: [oops\n---\n# Still indexed\n\nbody with zebra crossing\n")
    wait_for(lambda: search(client, "zebra crossing", BM25)[:1] == ["broken.md"], 45, "broken frontmatter note")
    assert search(client, "SQLITE_BUSY", BM25)[0] == "eng/sqlite.md"
    # each said with why, where a user looks (`k0maru status`, the console's status page)
    scanner = client.call(client.scanner.Status, scanner_pb2.ScannerStatusRequest())
    assert ("bin.md", "binary content (NUL bytes)") in [(f.path, f.reason) for f in scanner.skipped_files]

    def problem_notes() -> dict[str, list[str]]:
        index = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
        assert index.notes_with_problems == len(index.problem_notes)
        return {n.path: list(n.problems) for n in index.problem_notes}

    assert problem_notes()["broken.md"][0].startswith("frontmatter is not valid YAML")
    assert problem_notes()["latin.md"] == [
        "not UTF-8: read as Windows-1252, a guess from its characters (save it as UTF-8 to be sure)"
    ]
    (vault / "broken.md").write_text("---\ntitle: fixed\n---\n# Still indexed\n\nbody with zebra crossing\n")
    wait_for(lambda: "broken.md" not in problem_notes(), 45, "the fixed note off the list")


def test_a_query_in_traditional_characters_finds_a_note_in_simplified(stack):
    """A team in Taiwan and on the mainland: `借用檢查器報錯` (Traditional) is the note's
    `借用检查器报错`, and Taiwan's `資料庫連線` is the mainland's `数据库连接`."""
    _launcher, client, vault = stack
    assert search(client, "借用檢查器報錯", BM25)[:1] == ["zh/分词.md"]
    write_notes(vault, {"zh/连接池.md": "# 连接池\n\n数据库连接失败时先看连接池的上限。\n"})
    wait_for(lambda: search(client, "连接池上限", BM25)[:1] == ["zh/连接池.md"], 45, "the new note")
    assert search(client, "資料庫連線失敗", BM25)[:1] == ["zh/连接池.md"]


def test_a_note_powershell_wrote_in_utf16_is_found_and_read(stack):
    """`Get-History > notes.md` in Windows PowerShell 5 writes UTF-16 with a byte order mark: it
    was "binary content" and never indexed. Now found, and read back as text."""
    _launcher, client, vault = stack
    text = "\ufeff# Rollback 回滚\r\n\r\nkubectl rollout undo deployment/platypus-gateway\r\n"
    (vault / "win/rollback.md").parent.mkdir(exist_ok=True)
    (vault / "win/rollback.md").write_bytes(text.encode("utf-16-le"))
    wait_for(lambda: search(client, "platypus gateway rollout", BM25)[:1] == ["win/rollback.md"], 45, "the note")
    assert search(client, "回滚", BM25)[:1] == ["win/rollback.md"]
    result = anyio.run(build_mcp(client).call_tool, "read_note", {"path": "win/rollback.md"})
    assert not result.is_error and result.structured_content is not None
    assert result.structured_content["title"] == "Rollback 回滚"
    assert "kubectl rollout undo deployment/platypus-gateway" in str(result.structured_content["text"])


def test_a_note_notepad_saved_in_gbk_is_found_and_read(stack):
    """Notepad on Chinese Windows saved "ANSI" (GBK) until 2019: such a note was "invalid UTF-8"
    and never indexed. Its encoding is guessed: found by a Chinese query, read back as Chinese,
    and the console's note says it was a guess."""
    _launcher, client, vault = stack
    text = "# 周会记录\r\n\r\n鸭嘴兽网关的连接池上限从二十调到五十，高峰期不再超时。\r\n"
    (vault / "win/周会.md").parent.mkdir(exist_ok=True)
    (vault / "win/周会.md").write_bytes(text.encode("gbk"))
    wait_for(lambda: search(client, "鸭嘴兽网关", BM25)[:1] == ["win/周会.md"], 45, "the note")
    result = anyio.run(build_mcp(client).call_tool, "read_note", {"path": "win/周会.md"})
    assert not result.is_error and result.structured_content is not None
    assert result.structured_content["title"] == "周会记录"
    assert "连接池上限从二十调到五十" in str(result.structured_content["text"])
    guess = "not UTF-8: read as GBK, a guess from its characters (save it as UTF-8 to be sure)"
    assert result.structured_content["problems"] == [guess]  # the agent is told too
    note = client.call(client.retriever.GetNote, retriever_pb2.GetNoteRequest(path="win/周会.md"))
    assert "鸭嘴兽网关" in note.markdown and list(note.document.problems) == [guess]


def test_a_conflicting_copy_a_sync_tool_kept_is_said_on_its_hit(stack):
    """Two people edited the rota at once and Syncthing kept both: an agent that recalls the copy
    is told it is one, and which note it conflicts with. The copy comes after the note (the
    shorter, it came first for the note's own name), and a link by their alias goes to the note
    (it named two notes, and went to none)."""
    _launcher, client, vault = stack
    aliased = "---\naliases: [quokkarota]\n---\n# Rota\n\nThe quokka pilot rota"
    write_notes(
        vault,
        {
            "team/rota.md": f"{aliased} is on the wiki, with the swaps of the whole winter listed by week.\n",
            "team/rota.sync-conflict-20261201-101500-ABCDEF7.md": f"{aliased} moved to the drive.\n",
            "team/pilots.md": "# Pilots\n\nWho flies when: [[quokkarota]].\n",
        },
    )
    copy = "team/rota.sync-conflict-20261201-101500-ABCDEF7.md"
    wait_for(
        lambda: {"team/rota.md", copy, "team/pilots.md"} <= set(search(client, "quokka pilots rota", BM25)),
        45,
        "the notes",
    )
    for query in ("Rota", "quokkarota", "quokka pilot rota"):
        assert search(client, query, BM25)[:2] == ["team/rota.md", copy], query
    read = anyio.run(build_mcp(client).call_tool, "read_note", {"path": "[[quokkarota]]"})
    assert not read.is_error and read.structured_content is not None
    assert read.structured_content["path"] == "team/rota.md"
    result = anyio.run(build_mcp(client).call_tool, "recall_memory", {"query": "quokka pilot rota"})
    assert not result.is_error and result.structured_content is not None
    said = {h["path"]: h.get("problems") for h in result.structured_content["hits"]}
    assert said["team/rota.md"] is None
    assert said["team/rota.sync-conflict-20261201-101500-ABCDEF7.md"] == [
        "a conflicting copy of rota.md that Syncthing kept: merge the two and delete this one"
    ]


def test_a_dendron_description_is_searched_and_a_copied_passage_is_handed_over_once(stack):
    """Dendron's `desc`, shown in the body as `{{fm.desc}}`, finds its note and is its snippet; two
    copies of one tutorial are both listed, the second without the passage again."""
    _launcher, client, vault = stack
    passage = "Quenda burrows are mapped by the survey team each spring, one transect at a time.\n"
    write_notes(
        vault,
        {
            "quenda.topic.census.md": "---\nid: w1\ntitle: Census\ndesc: 'How the yearly quenda headcount "
            "is planned'\n---\n## Summary\n\n{{fm.desc}}.\n",
            "tutorial/main/burrows.md": f"# Burrows\n\n{passage}",
            "tutorial/copy/burrows.md": f"# Burrows\n\n{passage}",
        },
    )
    wait_for(
        lambda: search(client, "quenda headcount planned", BM25)[:1] == ["quenda.topic.census.md"], 45, "the notes"
    )
    wait_for(lambda: len(search(client, "quenda burrows survey transect", BM25)) >= 2, 45, "both copies")
    mcp = build_mcp(client)
    found = anyio.run(mcp.call_tool, "recall_memory", {"query": "yearly quenda headcount", "mode": "bm25"})
    assert found.structured_content is not None
    assert "How the yearly quenda headcount is planned." in found.structured_content["hits"][0]["snippet"]
    copies = anyio.run(mcp.call_tool, "recall_memory", {"query": "quenda burrows survey transect", "mode": "bm25"})
    assert copies.structured_content is not None
    first, second = copies.structured_content["hits"][:2]
    assert {first["path"], second["path"]} == {"tutorial/main/burrows.md", "tutorial/copy/burrows.md"}
    assert "transect" in first["snippet"] and first["same_passage_as"] is None
    assert second["snippet"] == "" and second["same_passage_as"] == first["path"]


def test_names_macos_wrote_decomposed_are_found_as_typed(stack):
    """A vault unzipped from a macOS archive: decomposed (NFD) file and folder names, some text
    decomposed too; links, queries, paths and folders come composed (NFC) and in any case."""
    _launcher, client, vault = stack
    nfd = functools.partial(unicodedata.normalize, "NFD")
    write_notes(
        vault,
        {
            nfd("équipe/Café résumé.md"): "# Café résumé\n\nThe espresso machine needs descaling monthly.\n",
            nfd("équipe/한국어 메모.md"): nfd("# 한국어 메모\n\n서버를 배포하는 절차\n"),  # deploying the server
            "links to mac names.md": "# Index\n\n[[Café résumé]], [[한국어 메모]] and [[ÉQUIPE/café RÉSUMÉ]]\n",
            "decomposed text.md": nfd("# Dessert\n\nCrème brûlée wants a blowtorch.\n"),
        },
    )
    cafe, memo = nfd("équipe/Café résumé.md"), nfd("équipe/한국어 메모.md")
    wait_for(lambda: search(client, "blowtorch", BM25)[:1] == ["decomposed text.md"], 45, "the new notes")
    for query in ("crème brûlée", "creme brulee", nfd("Crème")):  # composed, unaccented, decomposed
        assert search(client, query, BM25)[:1] == ["decomposed text.md"], query
    # Korean words carry their particles (서버를: the server + object particle), written as jamo here
    assert search(client, "서버 배포", BM25)[:1] == [memo]
    note = client.call(client.retriever.GetNote, retriever_pb2.GetNoteRequest(path="links to mac names.md"))
    assert sorted(note.outgoing) == sorted([cafe, memo])
    assert [(lk.target, lk.path) for lk in note.links] == [
        ("Café résumé", cafe),
        ("한국어 메모", memo),
        ("ÉQUIPE/café RÉSUMÉ", cafe),
    ]
    for typed in ("équipe/Café résumé.md", "ÉQUIPE/café résumé.md"):  # an agent's or a person's spelling
        asked = client.call(client.retriever.GetNote, retriever_pb2.GetNoteRequest(path=typed))
        assert asked.document.path == cafe and list(asked.backlinks) == ["links to mac names.md"]
    backlinks = client.call(client.retriever.Backlinks, retriever_pb2.BacklinksRequest(path="équipe/한국어 메모.md"))
    assert list(backlinks.paths) == ["links to mac names.md"]
    with pytest.raises(NotFound):
        client.call(client.retriever.GetNote, retriever_pb2.GetNoteRequest(path="équipe/cafe resume.md"))
    for scope in ({"diaries": ["Équipe"]}, {"path_prefixes": ["équipe/"]}, {"path_prefixes": ["ÉQUIPE"]}):
        assert search(client, "espresso descaling", BM25, **scope)[:1] == [cafe], scope
    wait_for(lambda: coverage(client) == 1.0, 60, "every chunk to have a vector")
    assert search(client, "coffee machine maintenance", VECTOR, path_prefixes=["équipe/"])[:1] == [cafe]


def test_a_frontmatter_date_that_does_not_exist_is_a_problem_not_a_stalled_index(stack):
    """`date: 2026-02-30` is YAML's grammar for a date its constructor refuses: the scanner's
    GetDocuments failed for the whole batch, so the notes fetched beside it never came either."""
    _launcher, client, vault = stack
    write_notes(
        vault,
        {
            "odd/typo date.md": "---\ndate: 2026-02-30\n---\n# Typo date\n\nwombat ledger reconciliation\n",
            "odd/beside it.md": "# Beside it\n\nwombat ledger audit trail\n",
        },
    )
    wait_for(
        lambda: sorted(search(client, "wombat ledger", BM25)) == ["odd/beside it.md", "odd/typo date.md"], 45, "both"
    )
    note = client.call(client.retriever.GetNote, retriever_pb2.GetNoteRequest(path="odd/typo date.md"))
    assert list(note.document.problems) == ["frontmatter has a value YAML cannot read: day is out of range for month"]


def test_a_date_scope_keeps_the_notes_dated_within_it(stack):
    """since / until on a note's own date (frontmatter, Dendron's ms), or on its file's day when it
    names none; in both channels; a day that is not one is a clear error."""
    _launcher, client, vault = stack
    write_notes(
        vault,
        {
            "dated/january.md": "---\ndate: 2026-01-10\n---\n# January\n\ncapybara budget review\n",
            "dated/march.md": "---\nupdated: 1773100800000\n---\n# March\n\ncapybara budget review\n",  # 2026-03-10
            "dated/undated.md": "# Undated\n\ncapybara budget review\n",  # its file: today
        },
    )
    wait_for(lambda: len(search(client, "capybara budget", BM25)) == 3, 45, "the dated notes")
    today = time.strftime("%Y-%m-%d", time.gmtime())
    for mode in (BM25, HYBRID):  # in the folder: hybrid's vector channel also returns unrelated notes

        def dated(**days: str) -> list[str]:
            return sorted(search(client, "capybara budget", mode, path_prefixes=["dated/"], **days))  # noqa: B023

        assert dated(since="2026-02-01") == ["dated/march.md", "dated/undated.md"]
        assert dated(until="2026-02-01") == ["dated/january.md"]
        assert dated(since="2026-03-10", until="2026-03-10") == ["dated/march.md"]
        assert dated(since=today) == ["dated/undated.md"]
        assert len(dated()) == 3
    # no query, a scope: the notes in it, newest first ("what did we write this week")
    assert search(client, "", BM25, path_prefixes=["dated/"]) == [
        "dated/undated.md",
        "dated/march.md",
        "dated/january.md",
    ]
    assert search(client, "", HYBRID, since="2026-02-01", until="2026-06-30") == ["dated/march.md"]
    assert search(client, "", BM25) == []  # no scope either: nothing
    mcp = build_mcp(client)
    listed = anyio.run(mcp.call_tool, "recall_memory", {"query": "", "folder": "dated", "until": "2026-06-30"})
    hits = listed.structured_content["hits"]
    assert [(h["path"], h["date"], h["score"]) for h in hits] == [
        ("dated/march.md", "2026-03-10", 0.0),
        ("dated/january.md", "2026-01-10", 0.0),
    ]
    assert "capybara budget review" in hits[0]["snippet"]
    with pytest.raises(ToolError, match="query is empty: say what to look for, or list notes by since/until"):
        anyio.run(mcp.call_tool, "recall_memory", {"query": " "})
    # wrong arguments are said as the tools say things, not as pydantic's models do
    with pytest.raises(ToolError) as wrong:
        anyio.run(mcp.call_tool, "recall_memory", {"query": "capybara", "limit": 100, "tags": {"a": 1}})
    assert str(wrong.value) == (
        "recall_memory was called with wrong arguments: limit: must be less than or equal to 50 (got 100); "
        "tags: must be a valid list or a valid string (got {'a': 1})"
    )
    with pytest.raises(ToolError, match=r"^read_note was called with wrong arguments: path: required$"):
        anyio.run(mcp.call_tool, "read_note", {"lines": "1-2"})
    with pytest.raises(ToolError, match=r"^read_note takes no argument 'line'; it takes path, start_line, end_line, "):
        anyio.run(mcp.call_tool, "read_note", {"path": "dated/march.md", "line": "1-2"})  # it was dropped
    with pytest.raises(InvalidInput, match="since must be a day, YYYY-MM-DD"):
        search(client, "capybara budget", BM25, since="last week")
    with pytest.raises(InvalidInput, match=r"since \(2026-03-01\) is after until \(2026-02-01\)"):
        search(client, "capybara budget", BM25, since="2026-03-01", until="2026-02-01")


def test_read_note_reads_what_recall_found_in_parts_and_the_ledger_counts_it(stack):
    """MCP read_note, as an agent without the vault's files uses it: a hit's line range, the whole
    note in parts of at most max_chars (next_call reads on), its links and backlinks; what it hands
    over is spent against what recall saved; paths outside the index are clear errors."""
    _launcher, client, vault = stack
    text = "---\nupdated: 2026-11-30\n---\n# Runbook\n\nSee [[sqlite]].\n\n" + "".join(
        f"## Step {i}\n\nrestart the quokka relay {i}\n\n" for i in range(60)
    )
    write_notes(vault, {"ops/runbook.md": text})
    wait_for(lambda: search(client, "quokka relay 42", BM25)[:1] == ["ops/runbook.md"], 45, "the runbook")
    mcp = build_mcp(client)

    def tool(name: str, **arguments: object) -> dict[str, object]:
        result = anyio.run(mcp.call_tool, name, arguments)
        assert not result.is_error, result.content
        return dict(result.structured_content)

    hit = next(
        h for h in tool("recall_memory", query="quokka relay 42", mode="bm25")["hits"] if h["path"] == "ops/runbook.md"
    )
    modified = time.strftime("%Y-%m-%d", time.gmtime((vault / "ops/runbook.md").stat().st_mtime))
    assert (hit["date"], hit["modified"]) == ("2026-11-30", modified)  # what the note says, and its file
    assert tool("recall_memory", query="quokka relay 42", mode="BM25")["mode_used"] == "bm25"  # as docs spell it
    later = tool("recall_memory", query="quokka relay 42", mode="bm25", since="2026-12-01")["hits"]
    assert "ops/runbook.md" not in [h["path"] for h in later]
    start, end = (int(x) for x in str(hit["lines"]).split("-"))
    part = tool("read_note", path="ops/runbook.md", start_line=start, end_line=end)
    assert "quokka relay 42" in str(part["text"]) and part["lines"] == hit["lines"] and part["next_call"] is None
    assert part["title"] == "Runbook" and part["links"] == ["eng/sqlite.md"] and part["backlinks"] == []
    assert (part["date"], part["modified"]) == ("2026-11-30", modified)
    # the hit's range passed as it comes (it was ignored, and the whole note came)
    assert tool("read_note", path="ops/runbook.md", lines=hit["lines"])["text"] == part["text"]
    with pytest.raises(ToolError, match="lines must be a hit's range, like 5-10"):
        anyio.run(mcp.call_tool, "read_note", {"path": "ops/runbook.md", "lines": "the step"})
    pasted = "Error: quokka relay 42 failed\n" + "    at relay (src/relay.ts:42:7)\n" * 400  # a long stack trace
    echoed = str(tool("recall_memory", query=pasted, mode="bm25")["query"])
    assert echoed.startswith("Error: quokka relay 42") and echoed.endswith(f"… ({len(pasted):,} characters)")
    assert len(echoed) < 250
    assert tool("read_note", path="sqlite")["path"] == "eng/sqlite.md"  # as `[[sqlite]]` names it
    write_notes(
        vault,
        {"ops/faq a.md": "---\ntitle: Ops FAQ\n---\nfirst\n", "ops/faq b.md": "---\ntitle: Ops FAQ\n---\nsecond\n"},
    )
    wait_for(lambda: len(search(client, "first second", BM25, path_prefixes=["ops/faq"])) == 2, 45, "the two FAQs")
    with pytest.raises(
        ToolError, match=re.escape("no indexed note at 'Ops FAQ'; it could be any of 'ops/faq a.md', 'ops/faq b.md'")
    ):
        anyio.run(mcp.call_tool, "read_note", {"path": "Ops FAQ"})  # a title two notes share
    # a file name two folders share, a note moved since its path was handed out: the first by
    # depth was read, silently, in their place; the forms the tools hand out are read
    write_notes(
        vault,
        {"projects/alpha/Meeting.md": "# Meeting\nPostgreSQL\n", "projects/beta/Meeting.md": "# Meeting\nSQLite\n"},
    )
    wait_for(lambda: len(search(client, "postgresql sqlite", BM25, path_prefixes=["projects/"])) == 2, 45, "meetings")
    with pytest.raises(ToolError, match=re.escape("'Meeting' names 2 notes, in different folders: give one's path")):
        anyio.run(mcp.call_tool, "read_note", {"path": "Meeting"})
    assert tool("read_note", path="beta/Meeting")["path"] == "projects/beta/Meeting.md"
    (vault / "projects/beta").rename(vault / "projects/gamma")
    wait_for(lambda: "projects/gamma/Meeting.md" in search(client, "sqlite", BM25), 45, "the moved meeting")
    with pytest.raises(
        ToolError, match=re.escape("no indexed note at 'projects/beta/Meeting.md'; a note of that name")
    ):
        anyio.run(mcp.call_tool, "read_note", {"path": "projects/beta/Meeting.md"})
    write_notes(vault, {"Meeting.md": "# Meeting\nthe root one, quokka agenda\n"})
    wait_for(lambda: "Meeting.md" in search(client, "quokka agenda", BM25), 45, "the root meeting")
    assert tool("read_note", path="meeting")["path"] == "Meeting.md"  # its path, in any case: no ambiguity
    assert tool("read_note", path="[[eng/sqlite]]")["path"] == "eng/sqlite.md"  # as the loadout lists notes
    assert tool("read_note", path="[[sqlite|the database]]")["path"] == "eng/sqlite.md"
    assert tool("read_note", path=str(vault.resolve() / "ops/runbook.md"))["path"] == "ops/runbook.md"
    assert part["cut"] is None
    long_line = tool("read_note", path="ops/runbook.md", start_line=4, max_chars=200)  # "# Runbook" is short
    assert long_line["cut"] is None
    write_notes(vault, {"ops/one line.md": "# One line\n\n" + "quokka " * 5000 + "\n"})  # a paragraph of 35,000
    wait_for(lambda: "ops/one line.md" in search(client, "quokka", BM25, limit=10), 45, "the long line")
    cut = tool("read_note", path="ops/one line.md", start_line=3, max_chars=500)
    assert cut["cut"] == "line 3 has 35,000 characters: 1-500 are shown, next_call reads on"
    assert len(str(cut["text"])) == 500 and cut["lines"] == "3-3"
    assert cut["next_call"]["arguments"] == {  # type: ignore[index]
        "path": "ops/one line.md",
        "start_line": 3,
        "start_char": 500,
        "end_line": 0,
        "max_chars": 500,
    }
    parts, arguments = [], {"path": "ops/one line.md", "max_chars": 12_000}  # the whole note, the long line in parts
    while True:
        answer = tool("read_note", **arguments)
        parts.append(str(answer["text"]))
        if answer["next_call"] is None:
            break
        arguments = dict(answer["next_call"]["arguments"])  # type: ignore[index]
    long_text = "# One line\n\n" + "quokka " * 5000
    assert len(parts) == 4 and parts[0] + "\n" + "".join(parts[1:]) == long_text  # lines 1-2, then 3 in 3 parts
    with pytest.raises(
        ToolError, match=re.escape("line 3 of ops/one line.md has 35,000 characters; asked from 35,000")
    ):
        anyio.run(mcp.call_tool, "read_note", {"path": "ops/one line.md", "start_line": 3, "start_char": 35_000})
    assert part["total_lines"] == len(text.splitlines())
    before = client.call(client.offload.TokenStats, offload_pb2.TokenStatsRequest())
    pieces, arguments = [], {"path": "ops/runbook.md", "max_chars": 500}
    while True:
        answer = tool("read_note", **arguments)
        assert len(str(answer["text"])) <= 500
        pieces.append(str(answer["text"]))
        if answer["next_call"] is None:
            break
        arguments = dict(answer["next_call"]["arguments"])  # type: ignore[index]  # max_chars carried on
    assert "\n".join(pieces) == "\n".join(text.splitlines()) and len(pieces) >= 5
    after = wait_for(
        lambda: (
            (t := client.call(client.offload.TokenStats, offload_pb2.TokenStatsRequest())).reads
            >= before.reads + len(pieces)
            and t
        ),
        10,
        "the reads in the ledger",
    )
    assert after.recall_answer_tokens > before.recall_answer_tokens and after.recalls == before.recalls
    for bad, says in (
        ({"path": "../outside.md"}, "escapes the vault"),
        ({"path": "ops/none.md"}, "ops/none.md"),
        ({"path": "ops/runbook.md", "start_line": 5000}, f"has {len(text.splitlines())} lines; asked for 5000-end"),
    ):
        with pytest.raises(ToolError, match=says):
            anyio.run(mcp.call_tool, "read_note", bad)


def test_what_obsidian_excludes_from_its_search_leaves_the_index_and_comes_back(stack):
    """A note under a folder named in Obsidian's Excluded files is out of every search from the
    next scan on, `Status` says which rule left it out, and it is back once the rule is gone."""
    _launcher, client, vault = stack
    write_notes(vault, {"Templates/Standup template.md": "# Standup\n\nYesterday: {{yesterday}} numbat placeholder\n"})
    wait_for(
        lambda: search(client, "numbat placeholder", BM25) == ["Templates/Standup template.md"], 45, "the template"
    )
    app = vault / ".obsidian" / "app.json"
    app.parent.mkdir(exist_ok=True)
    app.write_text(json.dumps({"userIgnoreFilters": ["templates/"], "alwaysUpdateLinks": True}))
    try:
        client.call(client.scanner.Scan, scanner_pb2.ScanRequest())  # or the periodic rescan, within 30 s
        wait_for(lambda: search(client, "numbat placeholder", BM25) == [], 45, "the template left out")
        assert "Templates/Standup template.md" not in search(client, "numbat placeholder", HYBRID, limit=20)
        status = client.call(client.scanner.Status, scanner_pb2.ScannerStatusRequest())
        assert list(status.excluded) == ["templates/ (Obsidian's Excluded files, .obsidian/app.json)"]
    finally:
        app.unlink()
    client.call(client.scanner.Scan, scanner_pb2.ScanRequest())
    wait_for(lambda: search(client, "numbat placeholder", BM25) == ["Templates/Standup template.md"], 45, "it back")
    assert list(client.call(client.scanner.Status, scanner_pb2.ScannerStatusRequest()).excluded) == []


def test_logseq_dendron_and_canvas_files_are_read_as_their_tools_write_them(stack):
    """Logseq: page properties, namespace pages in `a___b.md`, `#[[tags]]`, aliases, journals,
    block references, its backups in logseq/bak left out. Dendron: links written label first, and
    `dendron://vault/` names. An Obsidian canvas: its cards are text, its file cards links."""
    _launcher, client, vault = stack
    write_notes(
        vault,
        {
            "pages/Project___Beta.md": "title:: Project/Beta\ntags:: [[release train]], infra\n\n"
            "- The beta rollout waits for the canary metrics.\n- As ((64f1c2aa-1111-2222-3333-444455556666)) says\n",
            "journals/2026_12_04.md": "- Met about [[Project/Beta]] #[[release train]], in [[JS]]\n",
            "pages/JavaScript.md": "alias:: JS, ECMAScript\n\n- The language of the beta's front end.\n"
            "- Adopted on [[Dec 4th, 2026]]\n  id:: 64f1c2aa-1111-2222-3333-444455556666\n",
            "logseq/bak/pages/Project___Beta/2026-12-01T10_00_00.000Z.Desktop.md": "- beta rollout canary metrics\n",
            "dendron.topic.lookup.md": "# Lookup\n\nLookup finds notes by their hierarchy.\n",
            "boards/release.canvas": json.dumps(  # an Obsidian canvas: a text card, a file card
                {
                    "nodes": [
                        {"id": "t1", "type": "text", "text": "The launch waits for two green dashboards #launch"},
                        {"id": "f1", "type": "file", "file": "pages/Project___Beta.md"},
                    ]
                }
            ),
            "dendron.changelog.md": "# Changelog\n\n- fuzzy matching shipped ([[docs|dendron.topic.lookup#create]])\n"
            "- see [[Lookup|dendron://site/dendron.topic.lookup]]\n",
        },
    )
    wait_for(lambda: search(client, "canary metrics", BM25)[:1] == ["pages/Project___Beta.md"], 45, "the new notes")
    wait_for(
        lambda: search(client, "fuzzy matching shipped", BM25)[:1] == ["dendron.changelog.md"], 45, "the new notes"
    )
    assert not [p for p in search(client, "beta rollout canary metrics", BM25, limit=20) if p.startswith("logseq/")]
    assert search(client, "launch waits for green dashboards", BM25, tags=["launch"]) == ["boards/release.canvas"]
    page = client.call(client.retriever.GetNote, retriever_pb2.GetNoteRequest(path="pages/Project___Beta.md"))
    assert page.document.title == "Project/Beta"
    assert set(page.document.tags) == {"release train", "infra"}
    assert list(page.backlinks) == ["boards/release.canvas", "journals/2026_12_04.md"]
    journal = client.call(client.retriever.GetNote, retriever_pb2.GetNoteRequest(path="journals/2026_12_04.md"))
    assert [(lk.target, lk.path) for lk in journal.links] == [
        ("Project/Beta", "pages/Project___Beta.md"),
        ("release train", ""),
        ("JS", "pages/JavaScript.md"),  # by the page's alias, as Logseq resolves it
    ]
    assert "release train" in journal.document.tags
    assert journal.document.title == "Dec 4th, 2026" and list(journal.backlinks) == ["pages/JavaScript.md"]
    assert [(lk.target, lk.path) for lk in page.links][-1:] == [
        ("((64f1c2aa-1111-2222-3333-444455556666))", "pages/JavaScript.md")  # a block reference
    ]
    javascript = client.call(client.retriever.Backlinks, retriever_pb2.BacklinksRequest(path="pages/JavaScript.md"))
    assert list(javascript.paths) == ["journals/2026_12_04.md", "pages/Project___Beta.md"]
    assert "pages/JavaScript.md" not in search(client, "64f1c2aa", BM25)  # a block's hidden id is not its text
    for tag in ("release train", "#Release Train"):  # tags compare without `#`, in any case
        assert sorted(search(client, "beta", BM25, tags=[tag])) == ["journals/2026_12_04.md", "pages/Project___Beta.md"]
    wait_for(lambda: coverage(client) == 1.0, 60, "every chunk to have a vector")
    assert search(client, "waiting on canary numbers", VECTOR, tags=["RELEASE TRAIN"])[:1] == [
        "pages/Project___Beta.md"
    ]
    changelog = client.call(client.retriever.GetNote, retriever_pb2.GetNoteRequest(path="dendron.changelog.md"))
    assert [(lk.target, lk.path) for lk in changelog.links] == [
        ("dendron.topic.lookup", "dendron.topic.lookup.md"),  # its label first: found by the other side
        ("dendron.topic.lookup", "dendron.topic.lookup.md"),
    ]
    backlinks = client.call(client.retriever.Backlinks, retriever_pb2.BacklinksRequest(path="dendron.topic.lookup.md"))
    assert list(backlinks.paths) == ["dendron.changelog.md"]


def test_retriever_crash_converges_to_a_fresh_build(stack, tmp_path: Path):
    launcher, client, vault = stack
    write_notes(
        vault, {f"bulk/n{i}.md": f"# Bulk {i}\n\nbulk note number {i} about topic{i % 7}\n" for i in range(300)}
    )
    launcher.restart("retriever")  # SIGKILL, likely mid-indexing, then start again
    status = launcher.state.health()
    assert status["retriever"] == "SERVING"

    def index_status() -> retriever_pb2.IndexStatusResponse | None:  # this long-lived client saw the retriever
        try:  # go: it may take a reconnect (its channel backs off after the refused connections)
            return client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
        except DependencyFailed:
            return None

    wait_for(lambda: (s := index_status()) is not None and s.documents >= 300 + len(NOTES), 60, "the bulk notes")
    write_notes(
        vault, {f"bulk/n{i}.md": f"# Bulk {i}\n\nbulk note {i}, edited, about topic{i % 5}\n" for i in range(120)}
    )
    last = client.call(client.scanner.Scan, scanner_pb2.ScanRequest()).last_seq
    wait_for(
        lambda: client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest()).last_applied_seq >= last,
        60,
        "the edits",
    )  # each edit left a deleted document behind in BM25's statistics
    launcher.restart("retriever")  # the restart reconciles, and the compaction that follows makes
    status = wait_for(index_status, 30, "the restarted retriever")  # BM25 a fresh build
    assert status.consistent and status.bm25_documents == status.chunks, status.problem
    wait_for(
        lambda: client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest()).bm25_deleted == 0,
        60,
        "the compaction",
    )
    queries = ["topic3 bulk", "SQLITE_BUSY", "检查器", "bulk note number 42"]

    def scored(query: str) -> list[tuple[str, float]]:  # scores too: deleted documents skew BM25 statistics
        request = retriever_pb2.SearchRequest(query=query, limit=10, mode=BM25, explain=True)
        return [(h.path, round(h.explain.bm25.score, 5)) for h in client.call(client.retriever.Search, request).hits]

    after_crash = {q: scored(q) for q in queries}
    reply = client.call(client.retriever.Reindex, retriever_pb2.ReindexRequest())
    assert reply.documents >= 300
    fresh = {q: scored(q) for q in queries}
    assert after_crash == fresh


def test_status_json_reports_every_worker(stack):
    launcher, _client, vault = stack
    out = subprocess.run(
        [K0MARU, "status", "--vault", str(vault), "--data-dir", str(launcher.data_dir), "--json"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (
        report["embedders"] and report["embedders"][0]["processed"] > 0 and report["embedders"][0]["state"] == "SERVING"
    )
    assert set(report["queue"]) == {"pending", "dead_letter"}
    assert set(report["index"]) >= {"documents", "chunks", "chunks_with_vectors"}

    # the job stream's consumers, as the retriever reads them: the launcher's embedder, live
    # (a worker joins the group with its first read of the stream)
    def workers() -> list[dict]:
        again = subprocess.run(
            [K0MARU, "status", "--vault", str(vault), "--data-dir", str(launcher.data_dir), "--json"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return list(json.loads(again.stdout)["workers"])

    listed = wait_for(workers, 30, "the embedder on the job stream")
    pid = report["embedders"][0]["pid"]
    assert [w["name"] for w in listed if not w["gone"]] == [w["name"] for w in listed if w["name"].endswith(f"-{pid}")]


def test_moving_a_note_after_a_restart_embeds_nothing(tmp_path: Path):
    from k0maru.v1 import embedder_pb2, embedder_pb2_grpc
    from k0maru_common import open_channel

    vault = write_notes(
        tmp_path / "vault",
        {"a/long.md": "# Moving\n\n" + "\n\n".join(f"## S{i}\n\nsection {i} text" for i in range(5))},
    )

    def run_stack(expected: str, action=None):  # type: ignore[no-untyped-def]
        launcher = Launcher(vault, tmp_path / "data", embedders=1, http_port=0)
        state = launcher.start()
        client = state.client()
        try:
            if action:
                action()
            wait_for(
                lambda: (
                    client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest()).documents == 1
                    and coverage(client) == 1.0
                    and search(client, "section 3 text", BM25)[:1] == [expected]
                ),
                60,
                "every vector",
            )
            time.sleep(1.0)
            with open_channel(state.addresses["embedder-1"], state.grpc_token) as channel:
                info = embedder_pb2_grpc.EmbedderStub(channel).Info(embedder_pb2.EmbedderInfoRequest(), timeout=5)
            return info.processed, search(client, "section 3 text", VECTOR)
        finally:
            client.close()
            launcher.stop()

    first, _ = run_stack("a/long.md")
    assert first >= 5

    def move() -> None:
        (vault / "b").mkdir()
        (vault / "a/long.md").rename(vault / "b/long.md")

    after, hits = run_stack("b/long.md", move)
    assert hits[:1] == ["b/long.md"]
    assert after == 0  # counted before this test's one query: no chunk was embedded again


def test_a_logseq_graph_that_titles_its_journals_its_own_way(stack):
    """`:journal/page-title-format` in logseq/config.edn: journals are titled so, a link so written
    finds them, and a change of format is applied to the notes already indexed, then undone."""
    _launcher, client, vault = stack
    write_notes(
        vault,
        {
            "journals/2026_11_20.md": "- retro with the platform team\n",
            "pages/Retro.md": "- notes of [[2026/11/20]]\n",
        },
    )
    config = vault / "logseq" / "config.edn"
    config.parent.mkdir(exist_ok=True)
    config.write_text('{:meta/version 1\n :journal/page-title-format "yyyy/MM/dd"}\n')

    def title() -> str:
        try:
            return client.call(
                client.retriever.GetNote, retriever_pb2.GetNoteRequest(path="journals/2026_11_20.md")
            ).document.title
        except NotFound:
            return ""

    try:
        client.call(client.scanner.Scan, scanner_pb2.ScanRequest())  # or the periodic rescan
        wait_for(lambda: title() == "2026/11/20", 45, "the journal titled by the graph's format")
        wait_for(lambda: search(client, "notes of", BM25, path_prefixes=["pages/Retro.md"]), 45, "the retro")
        retro = client.call(client.retriever.GetNote, retriever_pb2.GetNoteRequest(path="pages/Retro.md"))
        assert [(lk.target, lk.path) for lk in retro.links] == [("2026/11/20", "journals/2026_11_20.md")]
    finally:
        config.unlink()
    client.call(client.scanner.Scan, scanner_pb2.ScanRequest())
    wait_for(lambda: title() == "Nov 20th, 2026", 45, "Logseq's default title again")


def test_read_note_shows_what_each_embed_in_its_lines_shows(stack):
    """A note made of embeds (Dendron's `![[note#summary,1:#*]]`, Obsidian's `![[note#Heading]]`
    and `![[note#^block]]`) says little on its own: read_note gives, for each embed in the lines
    it returns, the part of the embedded note shown in its place, or why there is none."""
    _launcher, client, vault = stack
    write_notes(
        vault,
        {
            "emb/export lock.md": "---\ntitle: Export lock\n---\n# Export lock\n\n## Summary\n\nExports take an flock"
            " on the export folder.\n\n## Why\n\nTwo exports wrote one file. ^two-writers\n",
            "emb/hub.md": "# Hub of the wombat team\n\n![[export lock#summary,1:#*]]\n\n![[Export lock#Why]]\n\n"
            "![[export lock#^two-writers]]\n\n![[export lock#nowhere]]\n\n![[diagram.png]]\n",
        },
    )
    wait_for(lambda: search(client, "hub wombat team", BM25)[:1] == ["emb/hub.md"], 45, "the hub")
    mcp = build_mcp(client)
    result = anyio.run(mcp.call_tool, "read_note", {"path": "emb/hub.md"})
    assert not result.is_error, result.content
    embeds = result.structured_content["embeds"]
    assert [(e["line"], e["path"], e["text"]) for e in embeds] == [
        (
            3,
            "emb/export lock.md",
            "Exports take an flock on the export folder.\n\n## Why\n\nTwo exports wrote one file. ^two-writers",
        ),
        (5, "emb/export lock.md", "## Why\n\nTwo exports wrote one file. ^two-writers"),
        (7, "emb/export lock.md", "Two exports wrote one file."),
        (9, "emb/export lock.md", None),
        (11, None, None),
    ]
    assert embeds[3]["missing"] == "emb/export lock.md has no heading 'nowhere'"
    assert "no note of the vault has that name" in embeds[4]["missing"]
    part = anyio.run(mcp.call_tool, "read_note", {"path": "emb/hub.md", "start_line": 1, "end_line": 4})
    assert [e["line"] for e in part.structured_content["embeds"]] == [3]  # only those in the lines shown


def test_read_note_shows_what_logseqs_block_references_and_embeds_show(stack):
    """Logseq shows `((uuid))`, `{{embed ((uuid))}}` and `{{embed [[page]]}}` as the block or page
    they name: read_note gave the raw uuid, and the agent saw which page, not which block."""
    _launcher, client, vault = stack
    uuid = "6571a3f2-aaaa-bbbb-cccc-aa11bb22cc03"
    write_notes(
        vault,
        {
            "pages/Flaky Tests.md": f"- intro to the numbat suite\n- Known flake: HashMap iteration order\n\tid:: {uuid}"
            "\n\tcollapsed:: true\n\t- seen in CI twice\n- next block\n",
            "pages/Numbat CI.md": f"- the flake: (({uuid}))\n- {{{{embed (({uuid}))}}}}\n- {{{{embed [[Flaky Tests]]}}}}\n"
            f"- (({uuid[:-1]}9))\n",
        },
    )
    wait_for(lambda: search(client, "numbat CI", BM25)[:1] == ["pages/Numbat CI.md"], 45, "the page")
    result = anyio.run(build_mcp(client).call_tool, "read_note", {"path": "pages/Numbat CI.md"})
    assert not result.is_error, result.content
    block = "- Known flake: HashMap iteration order\n\t- seen in CI twice"
    assert [(e["line"], e["target"], e["path"], e["text"]) for e in result.structured_content["embeds"]] == [
        (1, f"(({uuid}))", "pages/Flaky Tests.md", block),
        (2, f"(({uuid}))", "pages/Flaky Tests.md", block),
        (
            3,
            "Flaky Tests",
            "pages/Flaky Tests.md",
            "- intro to the numbat suite\n"
            + block.replace("\n\t-", f"\n\tid:: {uuid}\n\tcollapsed:: true\n\t-")
            + "\n- next block",
        ),
        (4, f"(({uuid[:-1]}9))", None, None),
    ]
