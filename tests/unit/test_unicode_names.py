"""A vault whose names macOS wrote decomposed (NFD), or in another case than people type them.

Unzipped from a macOS archive, copied from HFS+ or synced by some tools, a vault's file and
folder names are decomposed (`e` + U+0301, Hangul as jamo, `ト` + U+3099), while links, queries,
paths an agent asks for and new notes' titles are composed (NFC). Each of these used to miss.
"""

from __future__ import annotations

import datetime as dt
import os
import unicodedata
from pathlib import Path

import pytest

from k0maru.v1 import common_pb2
from k0maru_common import name_key
from k0maru_offload._flush import FlushEngine, FlushNote, write_versioned
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Scope
from k0maru_retriever._graph import LinkGraph
from k0maru_retriever._names import VaultNames
from k0maru_scanner._markdown import parse_note


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def test_names_compare_equal_whatever_their_normal_form_and_case():
    assert nfd("Café Résumé.md") != "café résumé.md"
    assert name_key(nfd("Café Résumé.md")) == name_key("café résumé.md")
    assert name_key(nfd("한국어 메모")) == name_key("한국어 메모")
    assert name_key(nfd("プロジェクト")) == name_key("プロジェクト")
    assert name_key("Straße") == name_key("STRASSE")
    assert name_key("café") != name_key("cafe")  # letters stay letters: only the form and the case go


def test_links_typed_composed_resolve_to_notes_named_decomposed():
    graph = LinkGraph()
    notes = {
        nfd("Café résumé.md"): [],
        nfd("한국어 메모.md"): [],
        nfd("プロジェクト/データベース設計.md"): [],
        "index.md": ["Café résumé", "한국어 메모", "プロジェクト/データベース設計", "CAFÉ RÉSUMÉ"],
    }
    graph.load(notes)
    assert graph.outgoing("index.md") == {p for p in notes if p != "index.md"}
    assert graph.backlinks(nfd("Café résumé.md")) == {"index.md"}
    # and the graph boost's broader match (titles, aliases) compares the same way
    graph.set_note("a.md", ["Décision"], ["A"])
    graph.set_note("b.md", [], [nfd("décision")])
    assert graph.connected_among({"a.md", "b.md"}) == {"a.md", "b.md"}


def test_a_note_written_decomposed_is_read_composed():
    note = parse_note(
        nfd("Crème/Brûlée.md"),
        nfd("---\naliases: [Crème brûlée]\ntags: [dessert-été]\n---\nThe crème needs a torch. #été [[Café]]\n"),
    )
    assert note.title == "Brûlée" == unicodedata.normalize("NFC", note.title)  # from the file name
    assert note.aliases == ["Crème brûlée"] and note.tags == ["dessert-été", "été"]
    assert [link.target for link in note.links] == ["Café"]
    assert note.sections[0].lines == ["The crème needs a torch. #été [[Café]]"]
    assert note.path == nfd("Crème/Brûlée.md")  # the path names the file: as the file system spells it


def test_bm25_terms_are_one_whatever_the_accents_and_their_form():
    analyzer = BM25Analyzer()
    terms = analyzer.terms("Café résumé naïve Việt ﬁle")
    assert terms == analyzer.terms("cafe RESUME naive viet file") == ["cafe", "resum", "naiv", "viet", "file"]
    assert analyzer.terms(nfd("Café résumé naïve Việt ﬁle")) == terms  # `e` + U+0301 split the word before
    assert analyzer.split(nfd("Crème 검사"))[0].split() == ["Creme"]  # what tantivy indexes
    decomposed = analyzer.terms(nfd("Crème 검사 ガイド"))  # Hangul as jamo, `カ` + U+3099
    assert decomposed == ["creme", "검사", "ガイ", "イド"]
    assert analyzer.terms("한국어 データベース ガイド") == [  # other scripts keep their marks
        *["한국", "국어"],
        *["デー", "ータ", "タベ", "ベー", "ース"],
        *["ガイ", "イド"],
    ]


def test_vault_names_find_notes_and_folders_as_typed():
    docs = dict.fromkeys([nfd("Projets/Café.md"), "Projets/a.md", "Rust.md", "rust.md", "Notes/x.md", "notes/y.md"])
    names = VaultNames(docs)
    assert names.note("projets/CAFÉ.md") == nfd("Projets/Café.md")
    assert names.note("RUST.md") is None  # two notes fit: neither is guessed
    assert names.note("Rust.md") == "Rust.md"
    assert names.notes("RUST.md") == ["Rust.md", "rust.md"]
    diary = names.scope(Scope(diaries=("projets",)))
    assert diary.diaries == ("projets", "Projets") and diary.matches(nfd("Projets/Café.md"), "Projets", [])
    folder = names.scope(Scope(path_prefixes=("notes/",)))
    assert folder.path_prefixes == ("notes/", "Notes/") and folder.matches("Notes/x.md", "Notes", [])
    assert names.scope(Scope(path_prefixes=("projets/café.md",))).matches(nfd("Projets/Café.md"), "Projets", [])
    for gone in (nfd("Projets/Café.md"), "Projets/a.md"):  # as IndexState does it
        del docs[gone]
        names.remove(gone)
    assert names.folders("projets") == [] and names.note("projets/café.md") is None


def test_a_new_note_never_takes_a_name_spelled_the_same(tmp_path: Path):
    (tmp_path / "Rust.md").write_text("ownership rules")
    (tmp_path / nfd("café.md")).write_text("espresso")
    assert write_versioned(tmp_path, "rust", "ownership rules") == (tmp_path / "Rust.md", "up_to_date")
    assert write_versioned(tmp_path, "rust", "lifetimes") == (tmp_path / "rust-v2.md", "versioned")
    assert write_versioned(tmp_path, "café", "latte") == (tmp_path / "café-v2.md", "versioned")
    assert (tmp_path / "Rust.md").read_text() == "ownership rules"
    (tmp_path / "go.md").write_text("goroutines")  # both spellings there already: the exact one counts
    (tmp_path / "Go.md").write_text("channels")
    assert write_versioned(tmp_path, "go", "goroutines") == (tmp_path / "go.md", "up_to_date")
    (tmp_path / "go.md").unlink()
    (tmp_path / "Go.md").unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["Rust.md", "rust-v2.md", nfd("café.md"), "café-v2.md"])


def test_a_long_title_or_a_windows_device_name_makes_a_name_every_disk_holds(tmp_path: Path):
    """80 Chinese characters behind a date were a 254-byte name: the first note was written and its
    `-v2` refused ("File name too long"), the agent's note lost; a title of 4-byte characters
    (`𠀀`, CJK extension B) failed at once. `Con` was `Con.md`, a name Windows refuses."""
    day = dt.date(2026, 12, 4)
    for title in ("中" * 100, "𠀀" * 100, "決定" * 60):
        for n, outcome in ((1, "created"), (2, "versioned"), (3, "versioned")):
            path, said = FlushEngine(tmp_path).flush(FlushNote(title, f"version {n}", "decision"), day)
            assert said == outcome and len(os.path.basename(path).encode()) <= 255, path
            assert (tmp_path / path).read_text().count(f"version {n}") == 1
    assert write_versioned(tmp_path, "Con", "a") == (tmp_path / "Con-note.md", "created")
    assert write_versioned(tmp_path, "lpt1.draft", "b") == (tmp_path / "lpt1.draft-note.md", "created")
    assert write_versioned(tmp_path, "console", "c") == (tmp_path / "console.md", "created")


@pytest.mark.parametrize("category", ["projects", "PROJECTS", "Projects"])
def test_a_category_finds_its_folder_in_any_case_and_form(tmp_path: Path, category: str):
    (tmp_path / "Projects").mkdir()
    path, outcome = FlushEngine(tmp_path).flush(FlushNote("Plan", "a plan", category))
    assert outcome == "created" and path.startswith("Projects/") and path.endswith("-plan.md")
    (tmp_path / nfd("Équipe")).mkdir()
    path, _ = FlushEngine(tmp_path).flush(FlushNote("Plan", "a plan", "équipe"))
    assert path.startswith(nfd("Équipe") + "/") and path.endswith("-plan.md")


def test_a_tag_scope_finds_the_tag_as_typed_and_the_tags_nested_under_it():
    """As Obsidian's tag search: no `#`, any case, and `project` finds `project/alpha` (Logseq's
    namespaced tags too); a note keeps the spelling its author typed."""
    docs: dict[str, common_pb2.Document] = {
        "a.md": common_pb2.Document(path="a.md", tags=["Project", "ops"]),
        "b.md": common_pb2.Document(path="b.md", tags=["project/alpha"]),
        "c.md": common_pb2.Document(path="c.md", tags=["projects", nfd("Équipe")]),
    }
    names = VaultNames(docs)
    scope = names.scope(Scope(tags=("#PROJECT",)))
    assert scope.tags == (("Project", "project/alpha"),)
    assert [p for p, d in docs.items() if scope.matches(p, "", list(d.tags))] == ["a.md", "b.md"]
    assert names.scope(Scope(tags=("project/Alpha", "équipe"))).tags == (("project/alpha",), (nfd("Équipe"),))
    assert names.scope(Scope(tags=("missing",))).tags == (("missing",),)
    docs["e.md"] = common_pb2.Document(path="e.md", tags=["developer experience"])
    names.add("e.md")
    names.retag((), ["developer experience"])
    for typed in ("#[[developer experience]]", "[[Developer Experience]]"):  # as Logseq writes a tag of words
        assert names.scope(Scope(tags=(typed,))).tags == (("developer experience",),)
    # two tags: a hit carries both
    both = names.scope(Scope(tags=("project", "OPS")))
    assert [p for p, d in docs.items() if both.matches(p, "", list(d.tags))] == ["a.md"]
    docs["d.md"] = common_pb2.Document(path="d.md", tags=["Project/Beta"])  # as IndexState does it
    names.add("d.md")
    names.retag((), ["Project/Beta"])
    assert names.scope(Scope(tags=("project",))).tags == (("Project", "Project/Beta", "project/alpha"),)


def test_a_chinese_tag_finds_its_spelling_in_the_other_script():
    """A team in Taiwan and on the mainland tags the same thing `#資料庫` and `#数据库`."""
    docs: dict[str, common_pb2.Document] = {
        "tw.md": common_pb2.Document(path="tw.md", tags=["資料庫/效能"]),
        "cn.md": common_pb2.Document(path="cn.md", tags=["数据库"]),
        "other.md": common_pb2.Document(path="other.md", tags=["程序"]),  # Simplified: no Taiwan word
    }
    names = VaultNames(docs)
    for typed in ("数据库", "#資料庫"):
        scope = names.scope(Scope(tags=(typed,)))
        assert scope.tags == (("数据库", "資料庫/效能"),), typed
        assert [p for p, d in docs.items() if scope.matches(p, "", list(d.tags))] == ["tw.md", "cn.md"]
    assert names.scope(Scope(tags=("程序",))).tags == (("程序",),)


def test_a_chinese_folder_or_note_is_found_as_typed_in_the_other_script():
    """The mainland's `数据库/` folder, asked for as Taiwan writes it (`資料庫/`), as a diary, a
    folder scope or one note; before, only the tag scopes folded the two scripts."""
    docs = dict.fromkeys(["数据库/连接池.md", "数据库/索引.md", "运维/值班.md"])
    names = VaultNames(docs)
    assert names.folders("資料庫") == ["数据库"]
    folder = names.scope(Scope(path_prefixes=("資料庫/",)))
    assert [p for p in docs if folder.matches(p, p.split("/")[0], [])] == ["数据库/连接池.md", "数据库/索引.md"]
    assert names.scope(Scope(diaries=("資料庫",))).diaries == ("資料庫", "数据库")
    assert names.note("資料庫/連接池.md") == "数据库/连接池.md"
    assert names.folders("运维") == ["运维"] and names.folders("程序") == []


def test_tag_spellings_kept_as_notes_are_retagged_equal_those_built_afresh():
    """The spellings are kept note by note (rebuilding them after each change took 0.23 s at 100k
    notes); random changes, with spellings two notes share, leave them as a fresh build finds them."""
    import random

    rng = random.Random(7)  # 5 notes, 8 spellings: spellings come and go
    spellings = ["Project", "project", "project/alpha", "Ops", "ops", nfd("Équipe"), "équipe", "x/y/z"]
    docs: dict[str, common_pb2.Document] = {}
    names = VaultNames(docs)
    names.tags("ops")  # built (empty): kept from here on
    for step in range(600):
        path = f"n{rng.randrange(5)}.md"
        old = list(docs[path].tags) if path in docs else []
        if path in docs and rng.random() < 0.3:
            del docs[path]
            names.remove(path)
            names.retag(old, ())
        else:
            new = rng.sample(spellings, rng.randrange(4))
            if path not in docs:
                names.add(path)
            docs[path] = common_pb2.Document(path=path, tags=new)
            names.retag(old, new)
        if step % 5 == 0:
            fresh = VaultNames(docs)
            for typed in ("project", "OPS", "équipe", "x", "x/y", "missing"):
                assert names.tags(typed) == fresh.tags(typed), (step, typed)
