"""The incremental scanner's state machine and its handling of bad files."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import xxhash

from k0maru.v1 import common_pb2, scanner_pb2
from k0maru_scanner import _scanner as scanner_module
from k0maru_scanner import server
from k0maru_scanner._manifest import Manifest
from k0maru_scanner._scanner import (
    SYMLINKED_FOLDER,
    UNDECODABLE_FOLDER,
    UNDECODABLE_NAME,
    IgnoreRules,
    IncrementalScanner,
    legacy_name,
    safe_name,
)
from k0maru_scanner.server import parse_document
from tests.conftest import write_notes

K = common_pb2


def make(vault: Path, data: Path, max_bytes: int = 2 * 1024 * 1024) -> IncrementalScanner:
    return IncrementalScanner(vault, Manifest(data / "m.sqlite", 100_000), IgnoreRules(), max_bytes)


def kinds(result) -> list[tuple[int, str]]:
    return [(e.kind, e.path) for e in result.entries]


def test_add_touch_edit_delete(vault: Path, tmp_path: Path):
    (vault / "a.md").write_text("hello")
    scanner = make(vault, tmp_path)
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_ADDED, "a.md")]
    assert scanner.scan().entries == ()
    st = (vault / "a.md").stat()
    os.utime(vault / "a.md", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    touched = scanner.scan()
    assert touched.entries == () and touched.unchanged == 1
    assert scanner.manifest.files["a.md"].mtime_ns == st.st_mtime_ns + 5_000_000_000
    (vault / "a.md").write_text("hello, edited")
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_MODIFIED, "a.md")]
    (vault / "a.md").unlink()
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_DELETED, "a.md")]


def test_a_date_past_2262_or_before_1678_stops_nothing(vault: Path, tmp_path: Path):
    """A note dated after 2262-04-11 (a broken archive's date, a typo in `touch -d`): its mtime in
    ns overflowed SQLite's INTEGER at every commit, the scanner exited, and the launcher's restarts
    met it again: no change of the vault was indexed any more, and a cold start failed."""
    for name, seconds in (("future.md", 9_300_000_000), ("past.md", -9_300_000_000)):
        (vault / name).write_text(f"# {name}\n\nkept\n")
        os.utime(vault / name, ns=(seconds * 10**9, seconds * 10**9))
    (vault / "later.md").write_text("# Later\n")
    scanner = make(vault, tmp_path)
    added = scanner.scan()
    assert sorted(p for _, p in kinds(added)) == ["future.md", "later.md", "past.md"]
    assert scanner.manifest.files["future.md"].mtime_ns == 2**63 - 1
    assert scanner.scan().unchanged == 3  # read as unchanged from then on, not re-read each scan
    (vault / "later.md").write_text("# Later, edited\n")
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_MODIFIED, "later.md")]
    assert parse_document(scanner, "future.md").mtime_ns == 2**63 - 1  # the proto's int64 holds it


def test_a_path_the_os_reported_is_read_whatever_its_size_and_mtime(vault: Path, tmp_path: Path):
    """`touch -r`, `cp -p`, `rsync -a` keep a file's mtime: an edit of the same size made so was
    never indexed. A path the OS reported written is read and hashed again (no event when its text
    is the same); other files keep the size-and-mtime shortcut."""
    note = vault / "a.md"
    note.write_text("zqaaaaaaaaaa")
    hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(note, ns=(hour_ago, hour_ago))
    scanner = make(vault, tmp_path)
    scanner.scan()
    note.write_text("zqbbbbbbbbbb")  # the same size
    os.utime(note, ns=(hour_ago, hour_ago))
    assert scanner.scan().entries == ()  # the shortcut, as documented
    assert kinds(scanner.scan(recheck=["a.md"])) == [(K.CHANGE_KIND_MODIFIED, "a.md")]
    assert scanner.scan(recheck=["a.md"]).entries == ()  # read again: the same text, no event


def test_unchanged_files_are_not_read(vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    an_hour_ago = time.time_ns() - 3600 * 10**9  # written earlier: not within a tick of the scan
    for i in range(20):
        (vault / f"n{i}.md").write_text(f"note {i}")
        os.utime(vault / f"n{i}.md", ns=(an_hour_ago, an_hour_ago))
    scanner = make(vault, tmp_path)
    scanner.scan()
    reads = count_reads(monkeypatch)
    result = scanner.scan()
    assert result.unchanged == 20 and reads == []


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The notes the scanner reads from now on."""
    reads: list[Path] = []
    original = scanner_module.read_note_text
    monkeypatch.setattr(
        scanner_module, "read_note_text", lambda path, limit: reads.append(path) or original(path, limit)
    )
    return reads


def test_a_skipped_note_is_examined_again_by_the_next_process(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A note refused stays refused while its file is unchanged, and is not read again by the same
    process; a scanner started later, with K0_MAX_FILE_BYTES raised (or a newer reader), examines
    it again and indexes it, the file untouched."""
    an_hour_ago = time.time_ns() - 3600 * 10**9
    (vault / "big.md").write_text("# Big\n\n" + "word " * 400)
    (vault / "bin.md").write_bytes(b"\x00\x01binary")
    for name in ("big.md", "bin.md"):
        os.utime(vault / name, ns=(an_hour_ago, an_hour_ago))
    first = make(vault, tmp_path, max_bytes=1000)
    assert first.scan().skipped == 2
    reads = count_reads(monkeypatch)
    assert first.scan().skipped == 2 and reads == []
    first.manifest.close()
    second = make(vault, tmp_path, max_bytes=10_000)
    assert kinds(second.scan()) == [(K.CHANGE_KIND_ADDED, "big.md")]
    assert sorted(p.name for p in reads) == ["big.md", "bin.md"]
    assert second.manifest.files["bin.md"].skipped_reason == "binary content (NUL bytes)"
    reads.clear()
    assert second.scan().entries == () and reads == []


def test_an_edit_in_the_same_mtime_tick_as_the_scan_before_is_not_missed(vault: Path, tmp_path: Path):
    """File systems stamp mtimes in ticks (FAT 2 s, HFS+ and many network shares 1 s, ext4 a few
    ms): an edit of the same size in the tick of the version the scanner recorded leaves size and
    mtime as they were, and was missed until the note changed again. A note recorded within
    RACY_NS of its mtime is now read again by the next scan; once settled it is not."""
    from k0maru_scanner._scanner import RACY_NS

    note = vault / "n.md"
    note.write_text("# N\n\nversion one\n")
    first = note.stat()
    scanner = make(vault, tmp_path)
    assert scanner.scan().added == 1
    note.write_text("# N\n\nversion two\n")  # the same size, and (as on a coarse file system) the same mtime
    os.utime(note, ns=(first.st_atime_ns, first.st_mtime_ns))
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_MODIFIED, "n.md")]
    assert scanner.manifest.files["n.md"].hash == xxhash.xxh3_64_hexdigest(note.read_bytes())
    record = scanner.manifest.files["n.md"]
    assert record.parsed_at_ms * 1_000_000 - record.mtime_ns >= RACY_NS or scanner.scan().entries == ()
    settled = time.time_ns() - 3600 * 10**9
    os.utime(note, ns=(settled, settled))
    scanner.scan()  # a new mtime: read once more (the same text: no event)
    read = scanner.manifest.files["n.md"].parsed_at_ms
    time.sleep(0.01)
    assert scanner.scan().entries == () and scanner.manifest.files["n.md"].parsed_at_ms == read  # not read
    # an mtime hours ahead (a zip unpacked in another time zone) settles at once: it was read at
    # every scan, each one writing the manifest
    ahead = time.time_ns() + 9 * 3600 * 10**9
    os.utime(note, ns=(ahead, ahead))
    scanner.scan()
    read = scanner.manifest.files["n.md"].parsed_at_ms
    time.sleep(0.01)
    assert scanner.scan().entries == () and scanner.manifest.files["n.md"].parsed_at_ms == read  # not read


def test_rename_is_one_event(vault: Path, tmp_path: Path):
    (vault / "old.md").write_text("same content")
    scanner = make(vault, tmp_path)
    scanner.scan()
    (vault / "sub").mkdir()
    (vault / "old.md").rename(vault / "sub" / "new.md")
    result = scanner.scan()
    assert result.renamed == 1 and result.added == 0 and result.deleted == 0
    assert [(e.kind, e.path, e.old_path) for e in result.entries] == [(K.CHANGE_KIND_RENAMED, "sub/new.md", "old.md")]


def test_ignored_folders_and_names(vault: Path, tmp_path: Path):
    for rel in (
        ".git/x.md",
        ".obsidian/y.md",
        ".k0maru/refs/z.md",
        "node_modules/m.md",
        "ok/n.md",
        "img.png",
        ".hidden.md",
        "t.txt",
        "m.markdown",
        "logseq/bak/pages/Plan/2026-12-01T10_00_00.000Z.Desktop.md",  # Logseq's copies of pages it overwrote
        "logseq/version-files/pages/Plan.md",
        "logseq/custom.md",
        "notes/logseq/bak/kept.md",  # a path rule names the vault's own logseq/bak only
    ):
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text("x")
    result = make(vault, tmp_path).scan()
    assert sorted(e.path for e in result.entries) == [
        "logseq/custom.md",
        "m.markdown",
        "notes/logseq/bak/kept.md",
        "ok/n.md",
        "t.txt",
    ]


def test_what_obsidian_and_logseq_exclude_from_their_search_is_not_indexed(vault: Path, tmp_path: Path):
    """Obsidian's Excluded files (`.obsidian/app.json`: prefixes any case, `/regex/`) and Logseq's
    `:hidden` (`logseq/config.edn`, prefixes from the graph's folder); a change to either takes
    effect at the next scan, deleting or adding the notes it names."""
    notes = (
        "Templates/Meeting.md",
        "templates2/x.md",
        "archive/2019/old.md",
        "work/plan.draft.md",
        "work/plan.md",
        "pages/archived/gone.md",
        "pages/archivedx.md",
        "pages/kept.md",
        "secret.md",
    )
    write_notes(vault, {rel: f"# {rel}\n" for rel in notes})
    app = vault / ".obsidian" / "app.json"
    app.parent.mkdir()
    app.write_text('{"userIgnoreFilters": ["Templates/", "Archive/", "/\\\\.draft\\\\.md$/", "/(unclosed/", 3, ""]}')
    edn = vault / "logseq" / "config.edn"
    edn.parent.mkdir()
    edn.write_text(
        ';; Directories to be ignored (hidden) by Logseq\n;; e.g. :hidden ["/work" "/test.md"]\n'
        '{:meta/version 1\n :hidden ["/pages/archived" "secret.md"] ; and a comment\n :journal/page-title-format "MMM do, yyyy"}\n'
    )
    scanner = make(vault, tmp_path)
    first = scanner.scan()
    assert sorted(e.path for e in first.entries) == [
        "pages/archivedx.md",
        "pages/kept.md",
        "templates2/x.md",
        "work/plan.md",
    ]
    assert scanner.excluded.described == (
        "Templates/ (Obsidian's Excluded files, .obsidian/app.json)",
        "Archive/ (Obsidian's Excluded files, .obsidian/app.json)",
        "/\\.draft\\.md$/ (Obsidian's Excluded files, .obsidian/app.json)",
        "/(unclosed/ (Obsidian's Excluded files, .obsidian/app.json): not a regular expression here"
        " (missing ) at position 9), not applied",
        "/pages/archived (Logseq's :hidden, logseq/config.edn)",
        "/secret.md (Logseq's :hidden, logseq/config.edn)",
    )
    assert not any(f.endswith(("/archive", "/Templates")) for f in scanner.folders.values())  # not even listed

    app.write_text('{"userIgnoreFilters": ["work/plan.md"]}')  # Templates/ and Archive/ let back in
    second = scanner.scan()
    assert sorted(kinds(second)) == sorted(
        [
            (K.CHANGE_KIND_ADDED, "Templates/Meeting.md"),
            (K.CHANGE_KIND_ADDED, "archive/2019/old.md"),
            (K.CHANGE_KIND_ADDED, "work/plan.draft.md"),
            (K.CHANGE_KIND_DELETED, "work/plan.md"),
        ]
    )
    app.write_text('{"userIgnoreFilters": ["/", "/work"]}')  # Obsidian's paths never start with "/": none match
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_ADDED, "work/plan.md")]
    app.write_text("[" * 100_000)  # deeper than Python's stack
    assert scanner.scan().entries == ()
    assert scanner.excluded.described[0] == (
        ".obsidian/app.json could not be read as JSON: Obsidian's Excluded files are not applied"
    )
    app.write_text("{not json")  # as a half-written file: nothing from it applies, and it says so
    edn.unlink()
    third = scanner.scan()
    assert kinds(third) == [(K.CHANGE_KIND_ADDED, "pages/archived/gone.md"), (K.CHANGE_KIND_ADDED, "secret.md")]
    assert scanner.excluded.described == (
        ".obsidian/app.json could not be read as JSON: Obsidian's Excluded files are not applied",
    )


def test_what_foam_leaves_out_of_its_workspace_is_not_indexed(vault: Path, tmp_path: Path):
    """Foam's `foam.files.exclude`, the older `foam.files.ignore`, VS Code's `files.exclude` (the
    globs set to true) and `foam.files.include`, in `.vscode/settings.json` (JSON with comments):
    a glob matches a file or a folder and all under it."""
    notes = (
        "_site/index.md",
        "docs/_site/page.md",
        "journal/2026-12-01.md",
        "journal/2026-12-01.draft.md",
        "raw/dump.md",
        "rawx/kept.md",
        "history/a.md",
        "shown/b.md",
        "outside.md",
    )
    write_notes(vault, {rel: f"# {rel}\n" for rel in notes})
    settings = vault / ".vscode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        "{\n"
        "  // Foam's own\n"
        '  "foam.files.exclude": ["**/_site/**/*", "raw/**", "", 7],\n'
        '  "foam.files.ignore": ["**/*.draft.md"], /* the older name */\n'
        '  "files.exclude": {"history": true, "shown": false, "**/*.js": {"when": "$(basename).ts"}},\n'
        '  "foam.edit.linkReferenceDefinitions": "off",\n'
        "}\n"
    )
    scanner = make(vault, tmp_path)
    assert sorted(e.path for e in scanner.scan().entries) == [
        "journal/2026-12-01.md",
        "outside.md",
        "rawx/kept.md",
        "shown/b.md",
    ]
    assert scanner.excluded.described == (
        "**/_site/**/* (Foam's foam.files.exclude, .vscode/settings.json)",
        "raw/** (Foam's foam.files.exclude, .vscode/settings.json)",
        "**/*.draft.md (Foam's foam.files.ignore, .vscode/settings.json)",
        "history (Foam's files.exclude, .vscode/settings.json)",
    )
    assert not any(f in ("_site", "raw", "history", "docs/_site") for f in scanner.folders.values())  # not listed

    settings.write_text('{"foam.files.include": ["journal/**", "{shown,rawx}/*.md"]}')  # only these
    assert sorted(kinds(scanner.scan())) == [
        (K.CHANGE_KIND_ADDED, "journal/2026-12-01.draft.md"),
        (K.CHANGE_KIND_DELETED, "outside.md"),
    ]
    assert scanner.excluded.described == (
        "only journal/** (Foam's foam.files.include, .vscode/settings.json)",
        "only {shown,rawx}/*.md (Foam's foam.files.include, .vscode/settings.json)",
    )
    # VS Code's settings of a workspace that is not Foam's: what VS Code hides is its own business
    settings.write_text('{"files.exclude": {"raw": true}, "editor.tabSize": 2}')
    assert len(kinds(scanner.scan())) == 5 and scanner.excluded.described == ()
    # globs no one writes by hand: braces nested past the stack; 40 `**/` on a path 60 folders deep
    # (a backtracking search would take hours; one that runs past 50 ms is dropped, as Obsidian's)
    deep = "/".join(["d"] * 60) + "/x.md"
    write_notes(vault, {deep: "# Deep\n"})
    settings.write_text(json.dumps({"foam.files.exclude": ["{" * 100_000, "**/" * 40 + "*z", "raw/**"]}))
    assert [e.path for e in scanner.scan().entries if e.kind == K.CHANGE_KIND_ADDED] == [deep]
    braces, stars, raw = scanner.excluded.described
    assert braces.startswith("{{{{") and "not a glob here" in braces
    assert stars.endswith("*z (Foam's foam.files.exclude, .vscode/settings.json)")  # answered in time
    assert raw == "raw/** (Foam's foam.files.exclude, .vscode/settings.json)"
    settings.write_text('{"foam.files.exclude": ["a"')  # half written: nothing from it applies, and it says so
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_ADDED, "raw/dump.md")]
    assert scanner.excluded.described == (
        ".vscode/settings.json could not be read as JSON: Foam's excluded files are not applied",
    )


def test_a_users_pattern_that_backtracks_or_a_huge_settings_file_never_holds_the_scanner(vault: Path, tmp_path: Path):
    """An Excluded files pattern runs on every path of every scan: one with nested quantifiers
    would backtrack for ever on a path of a's; it stops after its budget and is dropped, said so."""
    slow = "a" * 40 + "!.md"
    write_notes(vault, {slow: "# a\n", "b.draft.md": "# b\n", "c.md": "# c\n"})
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text(json.dumps({"userIgnoreFilters": ["/(a|a)+$/", "/draft/"]}))
    scanner = make(vault, tmp_path)
    started = time.monotonic()
    assert sorted(e.path for e in scanner.scan().entries) == [slow, "c.md"]
    assert time.monotonic() - started < 30  # not the hours the pattern alone would take
    first, second = scanner.excluded.described
    assert first.startswith("/(a|a)+$/ (Obsidian's Excluded files, .obsidian/app.json): took more than 0.05 s on ")
    assert second == "/draft/ (Obsidian's Excluded files, .obsidian/app.json)"
    (vault / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": ["c.md"], "x": "' + "y" * (1 << 20) + '"}')
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_ADDED, "b.draft.md")]  # not read: nothing excluded
    assert scanner.excluded.described == (".obsidian/app.json is larger than 1,048,576 bytes: not read",)


def test_tool_excludes_can_be_turned_off(vault: Path, tmp_path: Path):
    write_notes(vault, {"Templates/Meeting.md": "# Meeting\n"})
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": ["Templates/"]}')
    scanner = IncrementalScanner(
        vault, Manifest(tmp_path / "m.sqlite", 100), IgnoreRules(), 1 << 20, tool_excludes=False
    )
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_ADDED, "Templates/Meeting.md")]
    assert scanner.excluded.described == ()


def test_a_parser_fault_on_one_note_costs_only_that_note(vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Fault injection: were parsing to raise on one note (as it did on `date: 2026-02-30`),
    the reply still carries every other note, and that one is reported missing."""
    write_notes(vault, {"a.md": "# A\n", "b.md": "# B\n[[a]]\n", "c.md": "# C\n"})
    scanner = make(vault, tmp_path)
    scanner.scan()
    real = server.chunk_sections

    def faulty(sections: list[Any]) -> Any:  # b.md's document is half built in the reply by then
        if any("# B" in line for section in sections for line in section.lines):
            raise ValueError("a parser fault")
        return real(sections)

    monkeypatch.setattr(server, "chunk_sections", faulty)
    reply = server.ScannerServicer(scanner, "v", None).GetDocuments(
        scanner_pb2.GetDocumentsRequest(paths=["a.md", "b.md", "c.md"]), None
    )
    assert [d.path for d in reply.documents] == ["a.md", "c.md"] and list(reply.missing) == ["b.md"]


def test_bad_files_are_skipped_with_reasons(vault: Path, tmp_path: Path):
    (vault / "binary.md").write_bytes(b"abc\x00def")
    (vault / "undecodable.md").write_bytes(bytes(range(0x80, 0x100)) * 2)
    (vault / "huge.md").write_text("x" * 5000)
    (vault / "good.md").write_text("fine")
    (vault / "loop").mkdir()
    (vault / "loop" / "self").symlink_to(vault / "loop")
    (vault / "dangling.md").symlink_to(vault / "missing.md")
    outside = tmp_path / "outside.md"
    outside.write_text("secret")
    (vault / "escape.md").symlink_to(outside)
    scanner = make(vault, tmp_path, max_bytes=1000)
    result = scanner.scan()
    assert [e.path for e in result.entries] == ["good.md"]
    reasons = {p: r.skipped_reason for p, r in scanner.manifest.files.items() if not r.indexed}
    assert "binary" in reasons["binary.md"]
    assert reasons["undecodable.md"].startswith("invalid UTF-8 at byte 0, and not text in GBK")
    assert "too large" in reasons["huge.md"]
    assert "outside" in reasons["escape.md"]
    (vault / "undecodable.md").write_text("café, fixed")
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_ADDED, "undecodable.md")]


def test_notes_in_legacy_encodings_are_indexed_with_a_problem_that_says_so(vault: Path, tmp_path: Path):
    """Notepad on Chinese Windows saved GBK until 2019: such a note was "invalid UTF-8 at byte 0"
    and never indexed. Its encoding is guessed now, and the note says it was."""
    gbk = "---\ntags: [运维]\n---\n# 数据库连接池\n\n高峰期连接超时，上限从二十调到五十。见 [[监控告警]]\n"
    (vault / "周会.md").write_bytes(gbk.encode("gbk"))
    (vault / "cafe.md").write_bytes("# Café\n\nLa réserve était trop petite.\n".encode("cp1252"))
    russian = "# Отчёт о сбое\n\nИстекло время подключения к базе данных, см. [[мониторинг]] #эксплуатация\n"
    (vault / "сбой.md").write_bytes(russian.encode("cp1251"))
    pasted = "# Quotes\n\n中文 and a pasted ".encode() + b"\x93quote\x94\n"
    (vault / "pasted.md").write_bytes(pasted)
    scanner = make(vault, tmp_path)
    assert sorted(e.path for e in scanner.scan().entries) == ["cafe.md", "pasted.md", "сбой.md", "周会.md"]
    doc = parse_document(scanner, "周会.md")
    assert doc is not None and doc.title == "数据库连接池" and list(doc.tags) == ["运维"]
    assert [lk.target for lk in doc.links] == ["监控告警"] and "上限从二十调到五十" in doc.chunks[0].text
    assert list(doc.problems) == ["not UTF-8: read as GBK, a guess from its characters (save it as UTF-8 to be sure)"]
    assert doc.hash == xxhash.xxh3_64_hexdigest(gbk.encode("gbk"))
    assert parse_document(scanner, "cafe.md").title == "Café"
    doc = parse_document(scanner, "сбой.md")
    assert doc.title == "Отчёт о сбое" and list(doc.tags) == ["эксплуатация"]
    assert [lk.target for lk in doc.links] == ["мониторинг"]
    assert list(doc.problems) == [
        "not UTF-8: read as Windows-1251, a guess from its characters (save it as UTF-8 to be sure)"
    ]
    quotes = parse_document(scanner, "pasted.md")
    assert "\ufffdquote\ufffd" in quotes.chunks[0].text
    assert list(quotes.problems) == ["2 bytes that are not UTF-8 read as U+FFFD (the first at byte 30)"]


def test_notes_windows_tools_wrote_in_utf16_are_read(vault: Path, tmp_path: Path):
    """Windows PowerShell 5 writes `>` and `Out-File` as UTF-16 with a byte order mark, and so does
    Notepad's "Unicode": such a note was "binary content (NUL bytes)". A mark names the encoding;
    without one nothing is guessed."""
    text = "\ufeff---\r\ntags: [deploy]\r\n---\r\n# Rollout 发布\r\n\r\nkubectl rollout undo, see [[runbook]] #ops\r\n"
    (vault / "ps5.md").write_bytes(text.encode("utf-16-le"))
    (vault / "be.md").write_bytes("\ufeff# Big endian\n\nzebra".encode("utf-16-be"))
    (vault / "wide.md").write_bytes("\ufeff# Thirty-two\n\nquokka".encode("utf-32"))
    (vault / "no mark.md").write_bytes("# No mark\n".encode("utf-16-le"))
    (vault / "cut.md").write_bytes("\ufeff# Cut".encode("utf-16-le") + b"\x00\xd8")  # a lone surrogate
    (vault / "nul.md").write_bytes("\ufeff# A\x00B".encode("utf-16-le"))
    scanner = make(vault, tmp_path)
    assert sorted(e.path for e in scanner.scan().entries) == ["be.md", "ps5.md", "wide.md"]
    reasons = {p: r.skipped_reason for p, r in scanner.manifest.files.items() if not r.indexed}
    assert reasons == {
        "no mark.md": "binary content (NUL bytes)",
        "cut.md": "invalid UTF-16 at byte 12",
        "nul.md": "binary content (NUL bytes)",
    }
    doc = parse_document(scanner, "ps5.md")
    assert doc is not None and doc.title == "Rollout 发布" and sorted(doc.tags) == ["deploy", "ops"]
    assert [lk.target for lk in doc.links] == ["runbook"] and doc.hash == xxhash.xxh3_64_hexdigest(
        text.encode("utf-16-le")
    )
    assert "kubectl rollout undo" in doc.chunks[0].text and "\ufeff" not in doc.chunks[0].text
    assert [parse_document(scanner, p).title for p in ("be.md", "wide.md")] == ["Big endian", "Thirty-two"]


def indexed_paths(scanner: IncrementalScanner) -> list[str]:
    scanner.scan()
    return sorted(p for p, r in scanner.manifest.files.items() if r.indexed)


def code_repository(root: Path) -> Path:
    """An agent's project as the vault: composer's packages and a Sphinx build the .gitignore
    names, a private journal it keeps out of the repository, a note ignored by name."""
    from tests.conftest import git

    root.mkdir()
    git(root, "init", "-q")
    write_notes(
        root,
        {
            ".gitignore": "vendor/\n_build/\njournal/\nCLAUDE.local.md\n",
            "README.md": "# Project\n",
            "docs/guide.md": "# Guide\n",
            "vendor/autoload.php": "<?php\n",
            "vendor/composer/installed.json": "{}",
            "vendor/composer/ClassLoader.php": "<?php\n",
            "vendor/monolog/monolog/README.md": "# Monolog\n",
            "vendor/monolog/monolog/LICENSE": "MIT\n",
            "vendor/monolog/monolog/composer.json": "{}",
            "vendor/monolog/monolog/src/Logger.php": "<?php\n",
            "vendor/monolog/monolog/CHANGELOG.md": "# Changes\n",
            "_build/html/index.html": "<html>",
            "_build/html/search.js": "",
            "_build/html/_sources/guide.md.txt": "# Guide\n",
            "_build/doctrees/guide.doctree": "",
            "_build/doctrees/environment.pickle": "",
            "journal/2026/12/03.md": "# Wednesday\n",
            "journal/2026/12/04.md": "# Thursday\n",
            "CLAUDE.local.md": "# My own rules\n",
        },
    )
    git(root, "add", ".gitignore", "README.md", "docs")
    git(root, "add", "-f", "_build/html/_sources/guide.md.txt")  # tracked, though in _build/
    git(root, "commit", "-q", "-m", "project", day="2026-12-01")
    return root


def test_folders_git_ignores_that_hold_no_notes_are_not_walked(tmp_path: Path):
    """Vendored packages' and a build's files are not the team's notes; a private journal
    kept out of the repository and a note ignored by name are the user's, and a tracked file is
    never ignored (git does not ignore a folder that holds one)."""
    repo = code_repository(tmp_path / "project")
    scanner = make(repo, tmp_path / "data")
    assert indexed_paths(scanner) == [
        "CLAUDE.local.md",
        "README.md",
        "_build/html/_sources/guide.md.txt",
        "docs/guide.md",
        "journal/2026/12/03.md",
        "journal/2026/12/04.md",
    ]
    assert scanner.git_ignores.describe() == [
        "_build/doctrees/, vendor/: ignored by .gitignore and holding no notes, not indexed (K0_GITIGNORE=false indexes them)"
    ]
    (repo / ".gitignore").write_text("_build/\n")  # vendor/ no longer ignored: its notes come, untouched
    assert [p for p in indexed_paths(scanner) if p.startswith("vendor/")] == [
        "vendor/monolog/monolog/CHANGELOG.md",
        "vendor/monolog/monolog/README.md",
    ]
    off = IncrementalScanner(repo, Manifest(tmp_path / "off.sqlite", 1000), IgnoreRules(), 1 << 20, gitignore=False)
    assert "vendor/monolog/monolog/README.md" in indexed_paths(off)


def test_a_submodule_inside_the_vault_keeps_git_answering_for_the_rest(tmp_path: Path):
    """git answers nothing for a batch of folders that holds one inside a submodule ("Pathspec
    … is in submodule"): the submodule's folders are walked as they are, and the vault's own
    ignored folders are still left out (here the vault is a folder of the repository)."""
    from tests.conftest import git, git_commit

    library = tmp_path / "library"
    library.mkdir()
    git(library, "init", "-q")
    git_commit(library, "2026-01-01", {"README.md": "# Library\n", "guide/intro.md": "# Intro\n"})
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q")
    write_notes(repo, {".gitignore": "_build/\n", "docs/a.md": "# A\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "docs/library")
    build = "docs/site/_build/html"  # asked about beside library/guide, a folder of the submodule
    write_notes(repo, {f"{build}/index.html": "<html>", f"{build}/s.js": "", f"{build}/_sources/a.txt": "x"})
    scanner = make(repo / "docs", tmp_path / "data")
    assert indexed_paths(scanner) == ["a.md", "library/README.md", "library/guide/intro.md"]
    assert scanner.git_ignores.left_out == ["site/_build"]


def test_a_gitignore_that_is_a_fifo_holds_neither_git_nor_the_scan(tmp_path: Path, caplog):
    """git opens each .gitignore it meets and waits on a FIFO for ever: git is not asked then
    (what it would ignore is indexed), and the scan goes on."""
    import logging

    repo = code_repository(tmp_path / "project")
    (repo / ".gitignore").unlink()
    os.mkfifo(repo / ".gitignore")
    with caplog.at_level(logging.WARNING):
        assert "vendor/monolog/monolog/README.md" in indexed_paths(make(repo, tmp_path / "data"))
    assert ".gitignore is not a regular file: git would wait on it" in caplog.text


def test_virtual_environments_and_tagged_caches_are_not_walked_in_or_out_of_git(vault: Path, tmp_path: Path):
    """A folder holding `pyvenv.cfg` (a Python virtual environment) or a `CACHEDIR.TAG` with the
    Cache Directory Tagging signature (cargo's target/) is generated: not walked, git or not. A
    note named CACHEDIR.TAG without the signature, or a FIFO so named, is no tag."""
    write_notes(
        vault,
        {
            "notes/a.md": "# A\n",
            "env/pyvenv.cfg": "home = /usr/bin\n",
            "env/lib/python3.11/site-packages/pkg-1.0.dist-info/top_level.txt": "pkg\n",
            "target/CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n# cargo\n",
            "target/debug/build/out.txt": "x\n",
            "tagged by hand/CACHEDIR.TAG": "not the signature\n",
            "tagged by hand/b.md": "# B\n",
        },
    )
    os.mkfifo(vault / "notes" / "CACHEDIR.TAG")
    assert indexed_paths(make(vault, tmp_path)) == ["notes/a.md", "tagged by hand/b.md"]


def test_a_vault_in_a_folder_of_a_repository_follows_the_ignore_files_above_it(tmp_path: Path):
    from tests.conftest import git

    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q")
    write_notes(
        repo,
        {
            ".gitignore": "**/_build/\n",
            "docs/guide.md": "# Guide\n",
            "docs/_build/html/index.html": "<html>",
            "docs/_build/html/_sources/guide.md.txt": "# Guide\n",
            "docs/_build/html/search.js": "",
        },
    )
    assert indexed_paths(make(repo / "docs", tmp_path / "data")) == ["guide.md"]


def test_a_note_large_only_by_pasted_images_is_indexed_by_its_text(vault: Path, tmp_path: Path):
    image = base64.b64encode(random.Random(3).randbytes(9_000)).decode()  # 12,000 characters
    (vault / "shot.md").write_text(f"# Crash dialog\n\n![](data:image/png;base64,{image})\nsegfault in the renderer\n")
    (vault / "long.md").write_text("many words " * 150 + f"![](data:image/png;base64,{image})")  # 1,677 of text
    (vault / "huge.md").write_text(f"![](data:image/png;base64,{image * 2})")  # past 16 × the limit: not read
    scanner = make(vault, tmp_path, max_bytes=1000)
    assert [e.path for e in scanner.scan().entries] == ["shot.md"]
    reasons = {p: r.skipped_reason for p, r in scanner.manifest.files.items() if not r.indexed}
    assert reasons["long.md"].startswith("too large: 1677 bytes of text > 1000")
    assert reasons["huge.md"].startswith("too large: 24027 bytes > 16 × 1000")
    doc = parse_document(scanner, "shot.md")
    assert (
        doc is not None
        and doc.size > 12_000
        and [c.text for c in doc.chunks] == ["# Crash dialog\n\n![](data:image/png;base64,)\nsegfault in the renderer"]
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_is_skipped(vault: Path, tmp_path: Path):
    (vault / "locked.md").write_text("x")
    (vault / "locked.md").chmod(0)
    scanner = make(vault, tmp_path)
    assert scanner.scan().skipped == 1


def test_seq_survives_restart_and_journal_replays(vault: Path, tmp_path: Path):
    scanner = make(vault, tmp_path)
    for i in range(3):
        (vault / f"{i}.md").write_text(str(i))
        scanner.scan()
    scanner.manifest.close()
    again = make(vault, tmp_path)
    (vault / "3.md").write_text("3")
    assert [e.seq for e in again.scan().entries] == [4]
    assert [e.seq for e in again.manifest.changes(1)] == [2, 3, 4]


def test_file_that_becomes_too_large_is_deleted_from_index(vault: Path, tmp_path: Path):
    (vault / "grow.md").write_text("small")
    scanner = make(vault, tmp_path, max_bytes=100)
    scanner.scan()
    (vault / "grow.md").write_text("x" * 500)
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_DELETED, "grow.md")]


def _bad_name(vault: Path, name: bytes, text: bytes = b"x\n") -> Path:
    path = Path(os.fsdecode(os.fsencode(vault) + b"/" + name))
    path.write_bytes(text)
    return path


def test_a_damaged_manifest_is_set_aside_and_its_journal_goes_on_past_the_old_one(vault: Path, tmp_path: Path):
    """A page in the middle damaged (not only the header): SQLite's quick_check finds it at open.
    The scanner exited at every start; now the file is kept aside, a full scan fills a new one,
    and the new journal's seqs start past every seq the old one gave out."""
    from k0maru_scanner._manifest import open_manifest

    write_notes(vault, {f"n{i}.md": f"# Note {i}\n\nwords\n" for i in range(60)})
    path = tmp_path / "m.sqlite"
    scanner = IncrementalScanner(vault, open_manifest(path, 100_000), IgnoreRules(), 1 << 20)
    old_last = scanner.scan().entries[-1].seq
    scanner.manifest.close()
    raw = bytearray(path.read_bytes())
    middle = len(raw) // 4096 // 2 * 4096
    assert middle >= 2 * 4096
    raw[middle : middle + 64] = b"\xff" * 64  # a b-tree page's header
    path.write_bytes(bytes(raw))
    again = IncrementalScanner(vault, open_manifest(path, 100_000), IgnoreRules(), 1 << 20)
    assert len(list(tmp_path.glob("m.sqlite.unreadable-*"))) == 1
    result = again.scan()
    assert result.added == 60 and result.entries[0].seq > old_last + 1_000_000
    assert open_manifest(path, 100_000).last_seq() == result.entries[-1].seq  # and it reopens as it is


def test_changes_since_a_seq_past_the_journals_end_is_refused(vault: Path, tmp_path: Path):
    """A `since_seq` this journal never gave out is another journal's (one made anew since): the
    answer was an empty stream, and the retriever waited for changes that never came. It is
    refused as a truncated journal is, so the retriever reconciles."""
    from k0maru.v1 import scanner_pb2
    from k0maru_common import JournalTruncated
    from k0maru_scanner.server import ScannerServicer

    (vault / "a.md").write_text("a")
    scanner = make(vault, tmp_path)
    last = scanner.scan().entries[-1].seq
    servicer = ScannerServicer(scanner, "v", None)
    assert [e.path for e in servicer.Changes(scanner_pb2.ChangesRequest(since_seq=last - 1), None)] == ["a.md"]
    assert list(servicer.Changes(scanner_pb2.ChangesRequest(since_seq=last), None)) == []
    with pytest.raises(JournalTruncated, match="past it"):
        list(servicer.Changes(scanner_pb2.ChangesRequest(since_seq=last + 1000), None))
    scanner.manifest.close()


def test_changes_counted_in_another_journal_are_refused(vault: Path, tmp_path: Path):
    """A journal is named when its manifest is made, and keeps its name across restarts; a seq
    given with another journal's name is refused even where this journal holds that seq (its
    entries there are other changes), so the follower reconciles."""
    from k0maru.v1 import scanner_pb2
    from k0maru_common import JournalTruncated
    from k0maru_scanner._manifest import open_manifest
    from k0maru_scanner.server import ScannerServicer

    (vault / "a.md").write_text("a")
    scanner = make(vault, tmp_path)
    scanner.scan()
    named = scanner.manifest.journal_id
    assert len(named) == 16
    servicer = ScannerServicer(scanner, "v", None)
    assert servicer.Status(scanner_pb2.ScannerStatusRequest(), None).journal_id == named
    mine = scanner_pb2.ChangesRequest(since_seq=0, journal_id=named)
    assert [e.path for e in servicer.Changes(mine, None)] == ["a.md"]
    assert [e.path for e in servicer.Changes(scanner_pb2.ChangesRequest(since_seq=0), None)] == ["a.md"]  # unnamed
    with pytest.raises(JournalTruncated, match="made anew"):
        list(servicer.Changes(scanner_pb2.ChangesRequest(since_seq=0, journal_id="0123456789abcdef"), None))
    scanner.manifest.close()
    assert open_manifest(tmp_path / "m.sqlite", 100_000).journal_id == named  # kept across a restart
    assert open_manifest(tmp_path / "other.sqlite", 100_000).journal_id != named  # a new manifest, a new name


def test_undecodable_file_name_is_skipped_with_reason_and_survives_restart(vault: Path, tmp_path: Path):
    from k0maru.v1 import scanner_pb2
    from k0maru_scanner.server import ScannerServicer

    _bad_name(vault, b"bad-\xff.md")
    (vault / "sub").mkdir()
    _bad_name(vault / "sub", b"also-\xfe\xfd.md")
    (vault / "good.md").write_text("fine")
    scanner = make(vault, tmp_path)
    result = scanner.scan()
    assert kinds(result) == [(K.CHANGE_KIND_ADDED, "good.md")] and result.skipped == 2
    skipped = {p: r.skipped_reason for p, r in scanner.manifest.files.items() if not r.indexed}
    assert sorted(skipped) == ["bad-\\xff.md", "sub/also-\\xfe\\xfd.md"]
    assert all("not valid UTF-8" in reason for reason in skipped.values())
    request = scanner_pb2.ListDocumentsRequest(include_skipped=True)
    listed = list(ScannerServicer(scanner, "v", None).ListDocuments(request, None))
    assert [e.SerializeToString() and e.path for e in listed] == ["bad-\\xff.md", "good.md", "sub/also-\\xfe\\xfd.md"]
    assert [e.path for e in scanner.scan(force_full=True).entries] == ["good.md"]
    scanner.manifest.close()
    again = make(vault, tmp_path)  # a restart reads the manifest back
    assert again.scan().skipped == 2 and "bad-\\xff.md" in again.manifest.files


def test_real_file_spelled_like_an_escaped_name_is_indexed(vault: Path, tmp_path: Path):
    _bad_name(vault, b"bad-\xff.md")
    (vault / "bad-\\xff.md").write_text("a real note with a backslash in its name")
    scanner = make(vault, tmp_path)
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_ADDED, "bad-\\xff.md")]


def test_watcher_survives_undecodable_file_names(vault: Path, tmp_path: Path):
    from k0maru_scanner._watcher import ChangeWatcher

    scanner = make(vault, tmp_path)
    scanner.scan()
    watcher = ChangeWatcher(scanner, 0.05, 50, 3600)
    watcher.start()
    try:
        _bad_name(vault, b"bad-\xff.md")  # watchfiles raises on this path's event
        deadline = time.monotonic() + 30
        while "bad-\\xff.md" not in scanner.manifest.files and time.monotonic() < deadline:
            time.sleep(0.05)
        (vault / "later.md").write_text("written after the bad name")
        while "later.md" not in scanner.manifest.files and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "later.md" in scanner.manifest.files and not scanner.manifest.files["bad-\\xff.md"].indexed
        assert watcher.running
        for n in range(6):  # each change to it ended the OS watch: 5 in a row and the watcher gave up
            _bad_name(vault, b"bad-\xff.md", f"edit {n}".encode())
            time.sleep(0.3)
        (vault / "last.md").write_text("after the edits")
        while "last.md" not in scanner.manifest.files and time.monotonic() < deadline + 30:
            time.sleep(0.05)
        assert "last.md" in scanner.manifest.files and watcher.running
        assert watcher.health().restarts == 0  # not a failure: a scan, and the watch set up again
    finally:
        watcher.stop()


def test_a_tools_excluded_files_apply_at_once_and_its_other_settings_files_wake_nobody(vault: Path, tmp_path: Path):
    """`.obsidian/` and `.vscode/` are hidden, so not listed nor watched: a note the user excluded
    in Obsidian waited for the 30 s rescan to leave the index. Their settings files are watched
    now; Obsidian's `workspace.json`, rewritten at every click, wakes no scan."""
    from k0maru_scanner._watcher import ChangeWatcher

    write_notes(vault, {"Templates/Meeting.md": "# Meeting\n", "b.md": "# B\n", "c.md": "# C\n"})
    (vault / ".obsidian").mkdir()
    scanner = make(vault, tmp_path)
    scanner.scan()
    scans: list[float] = []
    real_scan = scanner.scan
    scanner.scan = lambda **kw: (scans.append(time.monotonic()), real_scan(**kw))[1]  # type: ignore[method-assign]
    watcher = ChangeWatcher(scanner, 0.05, 50, 3600)  # no rescan: only events make scans
    watcher.start()

    def wait_for(done: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + 20
        while not done() and time.monotonic() < deadline:
            time.sleep(0.05)
        return done()

    try:
        assert wait_for(lambda: len(scans) >= 1)  # the scan once the watch is in place
        time.sleep(0.3)
        settled = len(scans)
        for i in range(5):
            (vault / ".obsidian" / "workspace.json").write_text(f'{{"active": "{i}"}}')
            time.sleep(0.05)
        time.sleep(0.5)
        assert len(scans) == settled  # workspace.json: no scan
        (vault / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": ["Templates/"]}')
        assert wait_for(lambda: "Templates/Meeting.md" not in scanner.manifest.files)
        (vault / ".vscode").mkdir()  # a settings folder made later is watched from then on
        assert wait_for(lambda: str(vault / ".vscode") in watcher._watch_set() and len(scans) > settled + 2)
        time.sleep(0.3)
        (vault / ".vscode" / "settings.json").write_text('{"foam.files.exclude": ["c.md"]}')
        assert wait_for(lambda: "c.md" not in scanner.manifest.files)
        assert "b.md" in scanner.manifest.files and watcher.running
    finally:
        watcher.stop()


def test_names_a_windows_zip_wrote_in_gbk_say_what_they_read_as(vault: Path, tmp_path: Path):
    """unzip writes the names in a zip made on Chinese Windows as their GBK bytes: every note of
    such a vault was skipped with "rename the file", and no word of what it was called."""
    folder = os.fsencode(vault) + "/会议".encode("gbk")
    os.mkdir(folder)
    Path(os.fsdecode(folder + b"/a.md")).write_text("# A\n")
    Path(os.fsdecode(os.fsencode(vault) + "/周会记录.md".encode("gbk"))).write_text("# 周会\n")
    scanner = make(vault, tmp_path)
    scanner.scan()
    reasons = {p: r.skipped_reason for p, r in scanner.manifest.files.items()}
    hint = "a zip made on Windows? `convmv -r -f gbk -t utf-8 --notest <vault>` renames such files)"
    assert reasons == {
        safe_name(
            os.fsdecode("周会记录.md".encode("gbk"))
        ): f"{UNDECODABLE_NAME} (in GBK it reads '周会记录.md': {hint}",
        safe_name(os.fsdecode("会议".encode("gbk"))): f"{UNDECODABLE_FOLDER} (in GBK it reads '会议': {hint}",
    }


@pytest.mark.parametrize(
    ("name", "codec", "encoding", "convmv"),
    [
        ("отчёт о сбое.md", "cp1251", "Windows-1251", "cp1251"),
        ("příliš žluťoučký.md", "cp1250", "Windows-1250", "cp1250"),
        ("סיכום פגישה.md", "cp1255", "Windows-1255", "cp1255"),
        ("รายงานข้อผิดพลาด.md", "cp874", "Windows-874", "cp874"),
    ],
)
def test_a_name_in_any_guessed_encoding_says_how_to_rename_it(name: str, codec: str, encoding: str, convmv: str):
    """Each encoding the guess names has convmv's spelling (the first version of Windows-874 and
    Windows-1255 had none: test_hostile_vault found a name that raised KeyError)."""
    assert legacy_name(os.fsdecode(name.encode(codec))) == (
        f" (in {encoding} it reads {name!r}: a zip made on Windows? "
        f"`convmv -r -f {convmv} -t utf-8 --notest <vault>` renames such files)"
    )
    for last in range(0x80, 0x100):  # whatever a name is guessed as, the hint names convmv's spelling
        hint = legacy_name(os.fsdecode(b"\xa0\xa1\xb5" + bytes([last])))
        assert hint == "" or "`convmv -r -f " in hint


def test_a_folder_name_that_is_not_utf8_is_one_skipped_entry_and_the_watcher_lives(vault: Path, tmp_path: Path):
    """Listing such a folder is reported (an open) to the OS watch on its parent under a name
    watchfiles cannot decode: the watcher failed at every scan and gave up after five, taking
    the scanner down. No note under it could be indexed anyway: now the folder is one skipped
    entry that says why, and is not listed."""
    from k0maru_scanner._watcher import ChangeWatcher

    os.mkdir(os.fsencode(vault) + b"/bad-\xff")
    (Path(os.fsdecode(os.fsencode(vault) + b"/bad-\xff")) / "inside.md").write_text("# Inside\n")
    scanner = make(vault, tmp_path)
    scanner.scan()
    assert scanner.manifest.files["bad-\\xff"].skipped_reason.startswith(UNDECODABLE_FOLDER)
    assert not any(rel.startswith("bad-") and rel != "bad-\\xff" for rel in scanner.manifest.files)
    failures: list[str] = []
    watcher = ChangeWatcher(scanner, 0.05, 50, 3600, on_give_up=failures.append)
    watcher.start()
    try:
        for i in range(4):  # each note is a scan; each scan listed the folder, and failed the watcher
            (vault / f"n{i}.md").write_text(f"# N{i}\n")
            deadline = time.monotonic() + 10
            while f"n{i}.md" not in scanner.manifest.files and time.monotonic() < deadline:
                time.sleep(0.05)
            assert f"n{i}.md" in scanner.manifest.files
        assert watcher.health().restarts == 0 and not failures, watcher.health()
    finally:
        watcher.stop()


def test_a_vault_on_a_fuse_mount_finds_changes_made_behind_it(tmp_path: Path):
    """On a network or FUSE filesystem (NFS, SMB, sshfs, a VM's shared folder) the OS reports only
    the changes made through this machine's mount: a note saved on the server or another machine
    waited for the 30 s safety rescan. There the watcher now rescans every 5 s beside the OS
    watch, and says why. A real FUSE mount (bindfs) of a folder; the changes "made elsewhere" are
    made in that folder, behind the mount."""
    import shutil
    import subprocess

    from k0maru_scanner._watcher import REMOTE_RESCAN_S, ChangeWatcher, filesystem_of

    bindfs = shutil.which("bindfs")
    if bindfs is None or not os.path.exists("/dev/fuse"):
        pytest.skip("bindfs or /dev/fuse is not available here")
    behind, vault = tmp_path / "server", tmp_path / "vault"
    write_notes(behind, {"a.md": "# A\n"})
    vault.mkdir()
    mounted = subprocess.run([bindfs, str(behind), str(vault)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount with bindfs here: {mounted.stderr.strip()}")
    try:
        assert filesystem_of(vault) == "fuse"
        scanner = make(vault, tmp_path)
        scanner.scan()
        watcher = ChangeWatcher(scanner, 0.05, 50, 3600)  # no 30 s rescan to fall back on
        watcher.start()
        try:
            deadline = time.monotonic() + 30
            while "fuse" not in watcher.note and time.monotonic() < deadline:
                time.sleep(0.05)
            assert f"a scan every {REMOTE_RESCAN_S:g} s" in watcher.note
            (vault / "local.md").write_text("# Saved through this machine\n")  # the OS reports it
            (behind / "remote.md").write_text("# Saved on the server\n")  # it does not
            deadline = time.monotonic() + 4 * REMOTE_RESCAN_S
            while {"local.md", "remote.md"} - set(scanner.manifest.files) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert {"local.md", "remote.md"} <= set(scanner.manifest.files)
        finally:
            watcher.stop()
    finally:
        subprocess.run(["fusermount", "-u", str(vault)], check=False)


def test_symlink_loops_and_fifos_are_recorded_as_skipped(vault: Path, tmp_path: Path):
    (vault / "loop").symlink_to(vault / "loop")  # at the vault root, whatever the name
    (vault / "ring-a.md").symlink_to(vault / "ring-b.md")
    (vault / "ring-b.md").symlink_to(vault / "ring-a.md")
    os.mkfifo(vault / "pipe.md")
    os.mkfifo(vault / "pipe")
    (vault / "gone.md").symlink_to(vault / "missing.md")
    (vault / "good.md").write_text("fine")
    (tmp_path / "shared notes").mkdir()
    (tmp_path / "shared notes" / "a.md").write_text("# Shared\n")
    (vault / "shared").symlink_to(tmp_path / "shared notes")  # linked in to be searched: not followed, said
    scanner = make(vault, tmp_path)
    result = scanner.scan()  # a FIFO read would block forever; a loop would raise
    assert kinds(result) == [(K.CHANGE_KIND_ADDED, "good.md")]
    reasons = {p: r.skipped_reason for p, r in scanner.manifest.files.items() if not r.indexed}
    assert reasons == {
        "shared": SYMLINKED_FOLDER,
        "loop": "symlink loop",
        "ring-a.md": "symlink loop",
        "ring-b.md": "symlink loop",
        "pipe.md": "not a regular file (FIFO)",
        "pipe": "not a regular file (FIFO)",
        "gone.md": "broken symlink: its target does not exist",
    }
    assert scanner.scan().skipped == 7  # stable: nothing re-recorded


def test_a_symlink_to_a_note_of_the_vault_is_not_indexed_twice(vault: Path, tmp_path: Path):
    """A note linked into a second folder would be two search results with one text; a link to a
    note the scan leaves out (a hidden folder's) is the only way it is indexed, so it is."""
    (vault / "projects").mkdir()
    (vault / "projects" / "plan.md").write_text("# Plan\n\nship it\n")
    (vault / "today.md").symlink_to(vault / "projects" / "plan.md")
    (vault / ".templates").mkdir()
    (vault / ".templates" / "standup.md").write_text("# Standup\n")
    (vault / "standup.md").symlink_to(vault / ".templates" / "standup.md")
    scanner = make(vault, tmp_path)
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_ADDED, "projects/plan.md"), (K.CHANGE_KIND_ADDED, "standup.md")]
    reasons = {p: r.skipped_reason for p, r in scanner.manifest.files.items() if not r.indexed}
    assert reasons == {"today.md": "a symlink to projects/plan.md, which is indexed under its own path"}
    (vault / "projects" / "plan.md").unlink()  # the target is gone: the link is broken, said so
    scanner.scan()
    reasons = {p: r.skipped_reason for p, r in scanner.manifest.files.items() if not r.indexed}
    assert reasons == {"today.md": "broken symlink: its target does not exist"}


def test_file_name_with_a_backslash_is_indexed_and_served(vault: Path, tmp_path: Path):
    from k0maru.v1 import scanner_pb2
    from k0maru_scanner.server import ScannerServicer

    (vault / "C#\\notes.md").write_text("# Escapes\n\nbackslashes are legal in POSIX names\n")
    scanner = make(vault, tmp_path)
    assert kinds(scanner.scan()) == [(K.CHANGE_KIND_ADDED, "C#\\notes.md")]
    reply = ScannerServicer(scanner, "v", None).GetDocuments(
        scanner_pb2.GetDocumentsRequest(paths=["C#\\notes.md", "..\\outside.md"]), None
    )
    assert [d.path for d in reply.documents] == ["C#\\notes.md"]
    assert list(reply.missing) == ["..\\outside.md"]


def test_confine_refuses_loops_and_huge_paths_with_clear_errors(vault: Path):
    from k0maru_common import OutsideVault, confine

    (vault / "loop").symlink_to(vault / "loop")
    with pytest.raises(OutsideVault, match="cannot be resolved"):
        confine(vault, "loop/note.md")
    with pytest.raises(OutsideVault) as caught:
        confine(vault, "a/" * 500_000 + "x.md")
    assert len(str(caught.value)) < 400
    assert confine(vault, "a\\b.md") == vault.resolve() / "a\\b.md"


def test_confine_follows_symlinks_inside_and_refuses_those_out(vault: Path, tmp_path: Path):
    from k0maru_common import OutsideVault, confine

    (vault / "real").mkdir()
    (vault / "real" / "n.md").write_text("x")
    (vault / "inside").symlink_to(vault / "real")
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault / "out").symlink_to(outside)
    root = vault.resolve()
    assert confine(vault, "real/n.md") == root / "real" / "n.md"
    assert confine(root, "real/missing/n.md", vault_resolved=True) == root / "real" / "missing" / "n.md"
    assert confine(vault, "inside/n.md") == root / "real" / "n.md"  # resolved, not the link's own path
    with pytest.raises(OutsideVault, match="escapes"):
        confine(root, "out/n.md", vault_resolved=True)


def test_pages_list_what_list_documents_lists(vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from k0maru.v1 import scanner_pb2
    from k0maru_scanner import server

    for i in range(7):
        (vault / f"n{i}.md").write_text(f"note {i}")
    (vault / "big.md").write_bytes(b"\x00binary")
    scanner = make(vault, tmp_path)
    scanner.scan()
    monkeypatch.setattr(server, "MANIFEST_PAGE", 3)
    servicer = server.ScannerServicer(scanner, "v", None)
    for skipped in (False, True):
        request = scanner_pb2.ListDocumentsRequest(include_skipped=skipped)
        pages = list(servicer.ListDocumentPages(request, None))
        assert [len(p.entries) for p in pages] == ([3, 3, 1] if not skipped else [3, 3, 2])
        assert [e for p in pages for e in p.entries] == list(servicer.ListDocuments(request, None))


def test_fetch_after_scan_serves_the_file_as_it_is_now(vault: Path, tmp_path: Path):
    """The bytes a scan read are reused by GetDocuments only while size and mtime still match."""
    from k0maru.v1 import scanner_pb2
    from k0maru_scanner.server import ScannerServicer

    (vault / "a.md").write_text("# A\n\nfirst version\n")
    (vault / "b.md").write_text("# B\n\nfirst version\n")
    scanner = make(vault, tmp_path)
    scanner.scan()
    st = (vault / "b.md").stat()
    (vault / "b.md").write_text("# B\n\nsecond versio\n")  # same size, new mtime
    os.utime(vault / "b.md", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    servicer = ScannerServicer(scanner, "v", None)
    request = scanner_pb2.GetDocumentsRequest(paths=["a.md", "b.md"])
    for _ in range(2):  # the second fetch reads the disk (the kept bytes are handed out once)
        docs = {d.path: d for d in servicer.GetDocuments(request, None).documents}
        assert "first version" in docs["a.md"].chunks[0].text
        assert "second versio" in docs["b.md"].chunks[0].text
        assert docs["a.md"].hash == scanner.manifest.files["a.md"].hash


def test_a_vault_folder_that_went_away_is_not_every_note_deleted(vault: Path, tmp_path: Path):
    """An unmounted drive or a renamed vault folder: the scan fails clearly and changes nothing
    (it used to delete every note from the index); when the folder is back nothing changed."""
    from k0maru_scanner._scanner import VaultUnavailable

    (vault / "a.md").write_text("# A\n")
    (vault / "sub").mkdir()
    (vault / "sub" / "b.md").write_text("# B\n")
    scanner = make(vault, tmp_path)
    assert scanner.scan().added == 2
    vault.rename(tmp_path / "away")
    with pytest.raises(VaultUnavailable, match=r"cannot be listed.*kept as it was"):
        scanner.scan()
    assert sorted(scanner.manifest.files) == ["a.md", "sub/b.md"]
    (tmp_path / "away").rename(vault)
    result = scanner.scan()
    assert (result.unchanged, result.deleted, result.entries) == (2, 0, ())


UNLISTED_SCRIPT = """
import sys
from pathlib import Path
from k0maru_scanner._manifest import Manifest
from k0maru_scanner._scanner import UNDECODABLE_FOLDER, UNDECODABLE_NAME, IgnoreRules, IncrementalScanner, safe_name
vault, data = Path(sys.argv[1]), Path(sys.argv[2])
scanner = IncrementalScanner(vault, Manifest(data / "m.sqlite", 100_000), IgnoreRules(), 1 << 20)
assert scanner.scan().added == 3
(vault / "private").chmod(0)  # a folder that cannot be listed any more
result = scanner.scan()
assert (result.deleted, result.unchanged) == (0, 2), result
assert sorted(scanner.manifest.files) == ["a.md", "private/p.md", "sub/b.md"]
(vault / "sub" / "b.md").unlink()  # a deletion elsewhere still counts
assert scanner.scan().deleted == 1
(vault / "private").chmod(0o755)
result = scanner.scan()
assert (result.deleted, result.unchanged, result.added) == (0, 2, 0), result
print("ok")
"""


def test_a_folder_that_cannot_be_listed_keeps_its_notes(tmp_path: Path):
    """Notes in a folder that cannot be listed any more are out of sight, not deleted. Root lists
    any folder: under root the scan runs in a child process without the capabilities that let it
    (util-linux `setpriv`)."""
    import shutil
    import subprocess
    import sys

    vault, data = tmp_path / "vault", tmp_path / "data"
    data.mkdir()
    write_notes(vault, {"a.md": "# A\n", "sub/b.md": "# B\n", "private/p.md": "# P\n"})
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root lists any folder, and setpriv (util-linux) is not installed")
        caps = "-dac_override,-dac_read_search"
        prefix = [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}"]
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", UNLISTED_SCRIPT, str(vault), str(data)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        (vault / "private").chmod(0o755)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


NAMESPACE_PREAMBLE = """
import os, sys, time
from pathlib import Path
from k0maru_scanner._manifest import Manifest
from k0maru_scanner._scanner import UNDECODABLE_FOLDER, UNDECODABLE_NAME, IgnoreRules, IncrementalScanner, safe_name
from k0maru_scanner._watcher import ChangeWatcher, watched_inodes
LIMIT = Path("/proc/sys/user/max_inotify_watches")  # this user namespace's own limit
vault, data = Path(sys.argv[1]), Path(sys.argv[2])

def until(what, check, timeout_s=60.0):
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)

scanner = IncrementalScanner(vault, Manifest(data / "m.sqlite", 100_000), IgnoreRules(), 1 << 20)
"""


def run_in_user_namespace(script: str, vault: Path, data: Path) -> None:
    """`script` after NAMESPACE_PREAMBLE in a user namespace of its own (`unshare -U -r`), where
    it may lower the inotify watch limit without touching the machine's; it prints "ok"."""
    import shutil
    import subprocess
    import sys

    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-U", "-r", "true"], capture_output=True).returncode != 0:
        pytest.skip("user namespaces (util-linux unshare -U -r) are not available here")
    done = subprocess.run(
        [unshare, "-U", "-r", sys.executable, "-c", NAMESPACE_PREAMBLE + script, str(vault), str(data)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


WATCH_LIMIT_SCRIPT = """
assert scanner.scan().added == 40
LIMIT.write_text("30")  # 41 folders
watcher = ChangeWatcher(scanner, 0.05, 50, 2.0, poll_s=0.2, retry_os_watch_s=3.0)
watcher.start()
until("the watcher says it polls", lambda: "(user.max_inotify_watches = 30) is reached" in watcher.note)
# the watches are given back to the user's other programs (notify closes its inotify instance
# in its own thread, a moment after the failed set-up)
until("the watches given back", lambda: watched_inodes() == set(), 5.0)
(vault / "f39" / "late.md").write_text("# Late\\n")
until("a note in any folder is found by polling", lambda: "f39/late.md" in scanner.manifest.files)
time.sleep(7)  # two retry periods: with no more room than before, the OS watch is not tried again
assert watcher.os_watch_tries == 1 and watched_inodes() == set()

LIMIT.write_text("1000")  # the user raised the limit: the OS watch is back
until("the OS watch is back", lambda: watcher.note == "" and set(scanner.folders) <= (watched_inodes() or set()))

LIMIT.write_text("45")  # and folders made later go beyond it
for i in range(10):
    (vault / f"new{i}").mkdir()
    (vault / f"new{i}" / "n.md").write_text("# New\\n")
until("folders beyond the limit are noticed", lambda: "51 folders cannot all be watched" in watcher.note)
(vault / "new9" / "later.md").write_text("# Later\\n")
until("and changes in them found", lambda: "new9/later.md" in scanner.manifest.files)
assert watcher.running and watcher.health().state == "running"
watcher.stop()
print("ok")
"""


SKIPPED_FOLDERS_SCRIPT = """
assert scanner.scan().added == 3 and len(scanner.folders) == 3  # the vault, notes/, notes/deep/
LIMIT.write_text("20")  # 3 folders to watch, 100 skipped
watcher = ChangeWatcher(scanner, 0.05, 50, 3600.0)  # no rescan: every change below comes by event
watcher.start()
until("the OS watch holds the listed folders", lambda: watched_inodes() == set(scanner.folders) - {os.stat(vault / os.fsdecode(b"bad-\\xff")).st_ino})
assert watcher.note == "" and watcher.os_watch_tries == 1

def found(rel):
    until(rel + " found by an event", lambda: rel in scanner.manifest.files)

# room for the folders, not for the old watch and the new one at once: a watch set up again
# waits until the old one's are given back (notify closes them in its own thread)
LIMIT.write_text("7")
(vault / "new" / "deeper").mkdir(parents=True)  # a folder made later is watched too
(vault / "new" / "deeper" / "n.md").write_text("# New\\n")
found("new/deeper/n.md")
(vault / "new" / "deeper" / "later.md").write_text("# Later\\n")
found("new/deeper/later.md")
(vault / "notes").rename(vault / "renamed")  # and one renamed
(vault / "renamed" / "deep" / "after.md").write_text("# After the rename\\n")
found("renamed/deep/after.md")
assert "notes/a.md" not in scanner.manifest.files
(vault / "node_modules" / "pkg0" / "lib" / "x.md").write_text("# Not a note\\n")
time.sleep(1)
assert "node_modules/pkg0/lib/x.md" not in scanner.manifest.files
assert watched_inodes() == set(scanner.folders)
assert watcher.note == "" and watcher.running and watcher.health().state == "running"
watcher.stop()
print("ok")
"""


def test_folders_the_scanner_skips_take_no_watches(tmp_path: Path):
    """The OS watched the whole vault tree, `.git` and `node_modules` too: in a vault inside a
    code project that spent thousands of the user's inotify watches (shared with their editor) on
    folders the scanner skips, and with more than the limit, sent every change to polling. Now
    exactly the listed folders are watched, each on its own; folders made or renamed later are
    watched once a scan lists them; a folder whose name is not valid UTF-8 is not listed, so not
    watched either. The limit (20) is lowered in a user namespace of the test's own."""
    vault, data = tmp_path / "vault", tmp_path / "data"
    data.mkdir()
    write_notes(vault, {"top.md": "# Top\n", "notes/a.md": "# A\n", "notes/deep/b.md": "# B\n"})
    for i in range(50):
        (vault / "node_modules" / f"pkg{i}" / "lib").mkdir(parents=True)
        (vault / ".git" / "objects" / f"{i:02x}").mkdir(parents=True)
    os.mkdir(os.fsencode(vault) + b"/bad-\xff")
    run_in_user_namespace(SKIPPED_FOLDERS_SCRIPT, vault, data)


def test_a_vault_beyond_the_os_watch_limit_is_polled_and_says_so(tmp_path: Path):
    """Linux limits the folders a user can watch (`fs.inotify.max_user_watches`); watchfiles
    leaves out, silently, every folder beyond it, so changes there waited for the 30 s rescan.
    Now the watcher notices (at start, and for folders made later), gives the OS watch up,
    polls, says why, and takes the OS watch back once the limit allows. The limit is lowered in
    a user namespace of the test's own (`unshare -U -r`), so the machine's is untouched."""
    vault, data = tmp_path / "vault", tmp_path / "data"
    data.mkdir()
    write_notes(vault, {f"f{i}/n.md": f"# N{i}\n" for i in range(40)})
    run_in_user_namespace(WATCH_LIMIT_SCRIPT, vault, data)


def test_a_folder_replaced_in_place_is_watched_again(vault: Path, tmp_path: Path):
    """The watcher compared the folders it watches with the scan's by path only: a folder deleted
    and made again under its name (a checkout, a sync), or a drive mounted on it again, kept the
    OS watch of the folder that was there, and its notes' changes waited for the periodic rescan
    (30 s). Now by inode too: the watch is set up again after the scan that lists it."""
    import shutil
    import threading

    from k0maru_scanner._watcher import ChangeWatcher

    write_notes(vault, {"sub/a.md": "# A\n"})
    scanner = make(vault, tmp_path)
    scanner.scan()
    watcher = ChangeWatcher(scanner, 0.05, 50, 3600)
    events, watching = watcher._open_os_watch(threading.Event())
    try:
        scanner.scan()
        assert not watcher._folders_changed(watching)
        (vault / "sub").rename(tmp_path / "old")  # then the new folder cannot reuse its inode
        write_notes(vault, {"sub/a.md": "# A\n"})  # the same path, another folder
        shutil.rmtree(tmp_path / "old")
        scanner.scan()
        assert watcher._folders_changed(watching)
    finally:
        events.close()


def test_a_file_is_read_whole_up_to_its_bound_whatever_its_size(tmp_path: Path):
    """`read_at_most` sizes its read by fstat: every size around the bound reads exactly as a
    read of `limit` bytes did, and a file that grew since the stat is read on (a FIFO's writer
    adds after the open, as an editor appending while the scanner reads)."""
    from k0maru_common import read_at_most

    note = tmp_path / "n.md"
    for size in (0, 1, 4095, 4096, 4097, 70_000):
        data = os.urandom(size)
        note.write_bytes(data)
        for limit in (1, 4096, 4097, 65_536, 1 << 20):
            assert read_at_most(note, limit) == data[:limit], (size, limit)
    fifo = tmp_path / "grows"
    os.mkfifo(fifo)
    data = os.urandom(200_000)  # fstat says 0: all of it is read after the first read asked for 1 byte

    def write() -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as out:  # the reader stops at its bound
            out.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    assert read_at_most(fifo, 150_000) == data[:150_000]
    writer.join(timeout=30)
