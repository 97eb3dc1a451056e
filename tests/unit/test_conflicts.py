"""Notes in conflict that a sync tool or git left: indexed, with a problem that says so (and so
listed by `k0maru status` and the console's status page)."""

from __future__ import annotations

from pathlib import Path

from k0maru_scanner.server import parse_document
from tests.conftest import write_notes
from tests.unit.test_scanner import make

MERGED = "# Rota\n\nthe pilot rota is on the wiki\n"
CONFLICT = "# Rota\n\n<<<<<<< HEAD\nthe pilot rota is on the wiki\n=======\nthe rota moved to the shared drive\n>>>>>>> origin/main\n"
HOW_TO = (
    "# Resolving conflicts\n\nGit marks them so:\n\n```text\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> branch\n```\n"
)
SETEXT = "Title\n=======\n\n>>>>>>> not a marker without the others\n"


def test_conflicting_copies_and_git_markers_are_problems_of_their_notes(vault: Path, tmp_path: Path):
    write_notes(
        vault,
        {
            "team/rota.md": MERGED,
            "team/rota.sync-conflict-20261201-101500-ABCDEF7.md": CONFLICT.replace("<<<<<<< HEAD\n", ""),
            "team/rota (Ann's conflicted copy 2026-12-01).md": MERGED + "edited by Ann\n",
            "team/rota (Conflicted copy laptop 202612011015).md": MERGED + "edited on the laptop\n",
            "team/rota_BACKUP_4242.md": MERGED,
            "team/pulled.md": CONFLICT,
            "how-to.md": HOW_TO,
            "setext.md": SETEXT,
            "conflicted copy.md": "# a name, not a copy\n",
        },
    )
    scanner = make(vault, tmp_path)
    scanner.scan()
    problems = {rel: list(parse_document(scanner, rel).problems) for rel in scanner.manifest.files}
    copy = "a conflicting copy of rota.md that {} kept: merge the two and delete this one"
    assert problems == {
        "team/rota.md": [],
        "team/rota.sync-conflict-20261201-101500-ABCDEF7.md": [copy.format("Syncthing")],
        "team/rota (Ann's conflicted copy 2026-12-01).md": [copy.format("a sync tool")],
        "team/rota (Conflicted copy laptop 202612011015).md": [copy.format("a sync tool")],
        "team/rota_BACKUP_4242.md": [copy.format("git mergetool")],
        "team/pulled.md": [
            "holds a git merge conflict (<<<<<<< … ======= … >>>>>>>): both versions are indexed until it is resolved"
        ],
        "how-to.md": [],  # the markers in a fence are an example
        "setext.md": [],
        "conflicted copy.md": [],
    }
    originals = {rel: parse_document(scanner, rel).conflict_of for rel in scanner.manifest.files}
    assert {rel: of for rel, of in originals.items() if of} == {
        f"team/{copy}": "team/rota.md"
        for copy in (
            "rota.sync-conflict-20261201-101500-ABCDEF7.md",
            "rota (Ann's conflicted copy 2026-12-01).md",
            "rota (Conflicted copy laptop 202612011015).md",
            "rota_BACKUP_4242.md",
        )
    }
    # both versions stay searchable text
    assert "the rota moved to the shared drive" in parse_document(scanner, "team/pulled.md").chunks[0].text


def test_a_file_whose_name_differs_only_in_its_unicode_form_says_so(vault: Path, tmp_path: Path):
    """`Café Notes.md` as macOS writes it (decomposed) and as Linux writes it (composed), side by
    side after a sync: macOS takes them for one file, and links went to one of them silently."""
    composed, decomposed = "Caf\u00e9 Notes.md", "Cafe\u0301 Notes.md"
    write_notes(vault, {decomposed: "# Café Notes\n\nthe first\n", "plain.md": "# Plain\n"})
    scanner = make(vault, tmp_path)
    scanner.scan()
    assert list(parse_document(scanner, decomposed).problems) == []
    write_notes(vault, {composed: "# Café Notes\n\na stub\n"})
    scanner.scan()
    said = "another file has this name in another Unicode form ({!r}): macOS takes them for one; rename one"
    assert list(parse_document(scanner, composed).problems) == [said.format(decomposed)]
    assert list(parse_document(scanner, decomposed).problems) == [said.format(composed)]
    assert list(parse_document(scanner, "plain.md").problems) == []
