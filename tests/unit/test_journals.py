"""Logseq's journals in the formats a graph sets: which file is which day's journal, and its title."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from k0maru.v1 import common_pb2, scanner_pb2
from k0maru_scanner._journals import JournalFormat, format_day, moment_to_date_fns
from k0maru_scanner._manifest import Manifest
from k0maru_scanner._markdown import parse_note
from k0maru_scanner._scanner import IgnoreRules, IncrementalScanner
from k0maru_scanner.server import ScannerServicer, parser_version
from tests.conftest import write_notes

DAY = date(2026, 12, 4)  # a Friday


def test_every_title_format_logseq_offers():
    expected = {
        "MMM do, yyyy": "Dec 4th, 2026",
        "MMMM do, yyyy": "December 4th, 2026",
        "do MMM yyyy": "4th Dec 2026",
        "E, dd-MM-yyyy": "Fri, 04-12-2026",
        "EEE, MM/dd/yyyy": "Fri, 12/04/2026",
        "EEEE, dd.MM.yyyy": "Friday, 04.12.2026",
        "yyyy-MM-dd EEEE": "2026-12-04 Friday",
        "yyyy/MM/dd": "2026/12/04",
        "yyyyMMdd": "20261204",
        "yyyy年MM月dd日": "2026年12月04日",
        "d.M.yy 'week'": "4.12.26 week",
    }
    assert {f: format_day(DAY, f) for f in expected} == expected
    assert [format_day(date(2026, 1, d), "do") for d in (1, 2, 3, 11, 12, 13, 21, 22, 23)] == [
        "1st", "2nd", "3rd", "11th", "12th", "13th", "21st", "22nd", "23rd",
    ]  # fmt: skip


def test_journal_files_in_the_graphs_own_file_name_format_and_folder():
    default = JournalFormat()
    assert default.names("journals/2026_12_04.md") == ["Dec 4th, 2026", "2026-12-04"]
    assert default.names("journals/2026-12-04.md") == [] and default.fingerprint == ""
    dashed = JournalFormat("yyyy-MM-dd", "yyyy-MM-dd", "daily")
    assert dashed.names("daily/2026-12-04.md") == ["2026-12-04", "2026-12-04"]
    assert dashed.names("journals/2026_12_04.md") == [] and dashed.names("daily/2026-02-30.md") == []
    assert dashed.fingerprint == "journals daily/yyyy-MM-dd titled yyyy-MM-dd"
    # a file-name format that names no day's number cannot be read: Logseq's default is kept
    assert JournalFormat(file="MMM do").names("journals/2026_12_04.md") == ["Dec 4th, 2026", "2026-12-04"]


def test_a_graph_that_sets_its_formats_titles_its_journals_so_and_reindexes_when_they_change(
    vault: Path, tmp_path: Path
):
    config = vault / "logseq" / "config.edn"
    write_notes(
        vault,
        {
            "logseq/config.edn": ';; :journal/page-title-format "MMM do, yyyy"\n'
            '{:journal/page-title-format "EEEE, dd.MM.yyyy"\n :journal/file-name-format "yyyy-MM-dd"}\n',
            "journals/2026-12-04.md": "- stand-up notes\n",
            "pages/Plan.md": "- see [[Friday, 04.12.2026]]\n",
        },
    )
    scanner = IncrementalScanner(vault, Manifest(tmp_path / "m.sqlite", 1000), IgnoreRules(), 1 << 20)
    scanner.scan()
    servicer = ScannerServicer(scanner, "v", None)

    def journal() -> common_pb2.Document:
        reply = servicer.GetDocuments(scanner_pb2.GetDocumentsRequest(paths=["journals/2026-12-04.md"]), None)
        return reply.documents[0]

    assert (journal().title, list(journal().aliases), journal().date) == (
        "Friday, 04.12.2026",
        ["2026-12-04"],
        "2026-12-04",
    )
    assert parser_version(scanner).endswith("; journals journals/yyyy-MM-dd titled EEEE, dd.MM.yyyy")
    assert scanner.scan().entries == ()  # nothing changed
    config.write_text('{:journal/page-title-format "yyyy/MM/dd" :journal/file-name-format "yyyy-MM-dd"}\n')
    changed = scanner.scan()  # every note again: their files did not change, their parse did
    assert sorted(e.path for e in changed.entries) == ["journals/2026-12-04.md", "pages/Plan.md"]
    assert journal().title == "2026/12/04"
    config.unlink()
    scanner.scan()
    assert journal().title == "2026-12-04" and parser_version(scanner) == parser_version(scanner).split(";")[0]
    assert parse_note("journals/2026-12-04.md", "- x").title == "2026-12-04"  # not a journal by default: its name


def test_obsidians_daily_notes_in_their_own_format_are_dated_by_their_names(vault: Path, tmp_path: Path):
    """`.obsidian/daily-notes.json` (or the Periodic Notes plugin's settings) names daily notes in
    moment.js tokens (`DD.MM.YYYY`, `MMMM D, YYYY`): such a note's day is read from its name, in its
    folder; a change of format re-reads every note. The default, `YYYY-MM-DD`, is read in any
    note's name anyway."""
    assert [moment_to_date_fns(m) for m in ("DD.MM.YYYY", "MMMM D, YYYY", "[Daily] Do MMM YYYY", "gggg-[W]ww")] == [
        "dd.MM.yyyy",
        "MMMM d, yyyy",
        "'Daily' do MMM yyyy",
        "",  # week-based tokens: not read
    ]
    nested = JournalFormat(daily_file=moment_to_date_fns("YYYY/MM/YYYY-MM-DD dddd"), daily_folder="Journal")
    assert nested.daily_day("Journal/2026/12/2026-12-04 Friday.md") == "2026-12-04"
    assert nested.daily_day("Elsewhere/2026/12/2026-12-04 Friday.md") == ""
    settings = vault / ".obsidian" / "daily-notes.json"
    write_notes(
        vault,
        {
            ".obsidian/daily-notes.json": '{"folder": "Daily/", "format": "DD.MM.YYYY", "template": "T"}',
            "Daily/04.12.2026.md": "- stand-up\n",
            "Daily/31.02.2026.md": "- no such day\n",
            "Other/04.12.2026.md": "- not a daily note\n",
        },
    )
    scanner = IncrementalScanner(vault, Manifest(tmp_path / "m.sqlite", 1000), IgnoreRules(), 1 << 20)
    scanner.scan()
    servicer = ScannerServicer(scanner, "v", None)

    def dates() -> list[str]:
        paths = ["Daily/04.12.2026.md", "Daily/31.02.2026.md", "Other/04.12.2026.md"]
        return [d.date for d in servicer.GetDocuments(scanner_pb2.GetDocumentsRequest(paths=paths), None).documents]

    assert dates() == ["2026-12-04", "", ""]
    assert parser_version(scanner).endswith("; daily notes Daily/dd.MM.yyyy")
    settings.write_text('{"folder": "Other", "format": "DD.MM.YYYY"}')
    assert len(scanner.scan().entries) == 3  # every note again
    assert dates() == ["", "", "2026-12-04"]
    # the Periodic Notes plugin's daily notes, when enabled, win over the core plugin's
    periodic = vault / ".obsidian" / "plugins" / "periodic-notes" / "data.json"
    periodic.parent.mkdir(parents=True)
    periodic.write_text('{"daily": {"enabled": false, "format": "DD.MM.YYYY", "folder": "Daily"}}')
    scanner.scan()
    assert dates() == ["", "", "2026-12-04"]  # disabled: the core plugin's still
    periodic.write_text('{"daily": {"enabled": true, "format": "DD.MM.YYYY", "folder": "Daily"}, "weekly": {}}')
    scanner.scan()
    assert dates() == ["2026-12-04", "", ""]
    periodic.unlink()
    settings.write_text("{half written")
    scanner.scan()
    assert dates() == ["", "", ""] and parser_version(scanner) == parser_version(scanner).split(";")[0]
