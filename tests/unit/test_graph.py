"""Wikilink resolution the way Obsidian does it, and backlinks."""

from __future__ import annotations

from k0maru.v1 import common_pb2
from k0maru_retriever._graph import LABEL_SIDE, LinkGraph, link_target


def test_resolution_order_and_shortest_path():
    g = LinkGraph()
    for p in ("Note.md", "deep/a/Note.md", "projects/Plan.md", "projects/x/Plan.md", "folder/Sibling.md"):
        g.set_note(p, [])
    assert g.resolve("note") == "Note.md"  # case-insensitive, shortest path
    assert g.resolve("deep/a/Note") == "deep/a/Note.md"  # exact path
    assert g.resolve("x/Plan") == "projects/x/Plan.md"  # partial path suffix
    assert g.resolve("Plan") == "projects/Plan.md"
    assert g.resolve("Sibling", "folder/Other.md") == "folder/Sibling.md"
    assert g.resolve("Missing") is None
    # a Markdown link's relative path, from the linking note's folder
    g.set_note("x/Note.md", [])
    assert g.resolve("../x/Note", "folder/Other.md") == "x/Note.md"  # by file name, the shortest path would win
    assert g.resolve("./a/Note", "deep/Other.md") == "deep/a/Note.md"
    assert g.resolve("../../deep/a/Note.md", "projects/x/Plan.md") == "deep/a/Note.md"


def _link(target: str, alias: str = "", markdown: bool = False) -> str:
    return link_target(common_pb2.Link(target=target, alias=alias, markdown=markdown))


def test_a_label_written_first_names_the_note_when_the_target_does_not():
    """Dendron (and Gollum, GitHub wikis) write `[[label|note]]`, Obsidian `[[note|label]]`."""
    g = LinkGraph()
    g.set_note("dendron.topic.lookup.md", [])
    g.set_note("Rust.md", [])
    g.set_note("docs.md", [])
    g.set_note(
        "source.md",
        [
            _link("docs", "dendron.topic.lookup#create"),  # both sides name notes: the target wins
            _link("Docs for lookup", "dendron.topic.lookup#create"),  # label first
            _link("Rust", "the language"),  # Obsidian
            _link("Nothing", "nowhere"),
            _link("notes", "Rust.md", markdown=True),  # a Markdown link's text is never a note name
        ],
    )
    assert g.outgoing("source.md") == {"docs.md", "dendron.topic.lookup.md", "Rust.md"}
    assert g.resolve_link(_link("Docs for lookup", "dendron.topic.lookup#create"), "source.md") == (
        "dendron.topic.lookup",
        "dendron.topic.lookup.md",
    )
    assert g.resolve_link(_link("Nothing", "nowhere")) == ("Nothing", None)
    assert g.backlinks("dendron.topic.lookup.md") == {"source.md"}
    # the target's note appears: the link moves to it; it goes: back to the label's note
    g.set_note("Docs for lookup.md", [])
    assert g.backlinks("Docs for lookup.md") == {"source.md"}
    assert g.resolve(_link("Docs for lookup", "dendron.topic.lookup#create")) == "Docs for lookup.md"
    g.remove_note("Docs for lookup.md")
    assert g.resolve(_link("Docs for lookup", "dendron.topic.lookup#create")) == "dendron.topic.lookup.md"
    g.set_note("nowhere.md", [])
    assert "nowhere.md" in g.outgoing("source.md")
    g.remove_note("dendron.topic.lookup.md")
    assert g.outgoing("source.md") == {"docs.md", "Rust.md", "nowhere.md"}


def test_logseq_namespace_pages_are_found_as_folders_would_be():
    """Logseq writes the page `Project/Beta` as `pages/Project___Beta.md` (before 0.8:
    `Project%2FBeta.md`); a link names it `[[Project/Beta]]`."""
    g = LinkGraph()
    for p in ("pages/Project___Beta.md", "pages/Other___Beta.md", "pages/Project%2FGamma.md", "pages/src.md"):
        g.set_note(p, [])
    g.set_note("journals/2024_01_05.md", ["Project/Beta", "Other/Beta", "project/gamma", "Later/Page"])
    assert g.outgoing("journals/2024_01_05.md") == {
        "pages/Project___Beta.md",
        "pages/Other___Beta.md",
        "pages/Project%2FGamma.md",
    }
    assert g.resolve("Gamma") == "pages/Project%2FGamma.md"  # as `Project/Gamma.md` is by `[[Gamma]]`
    g.set_note("pages/Later___Page.md", [])
    assert g.backlinks("pages/Later___Page.md") == {"journals/2024_01_05.md"}
    # read_note's test of a name against a note: a path spells a namespace page, a bare name is a file's
    assert g.ends_with("pages/Project___Beta.md", "Project/Beta") and g.ends_with("pages/src.md", "src")
    assert not g.ends_with("pages/Project___Beta.md", "Beta") and not g.ends_with("pages/Project___Beta.md", "x/Beta")


def test_a_link_by_a_title_or_alias_finds_its_one_note():
    """Logseq resolves `[[JS]]` to the page with `alias:: JS`; a file name still comes first, and a
    name several notes share names none of them."""
    g = LinkGraph()
    g.set_note("pages/JavaScript.md", [], ["JavaScript", "JS"])
    g.set_note("journal.md", ["js", "Overview", "Tooling"])
    assert g.outgoing("journal.md") == {"pages/JavaScript.md"}
    g.set_note("a/x.md", [], ["Overview"])
    g.set_note("b/y.md", [], ["Overview"])  # two notes titled "Overview"
    g.set_note("c/z.md", [], ["Tooling"])
    assert g.outgoing("journal.md") == {"pages/JavaScript.md", "c/z.md"}
    g.set_note("b/y.md", [], ["Why"])  # retitled: "Overview" is one note's again
    assert g.outgoing("journal.md") == {"pages/JavaScript.md", "c/z.md", "a/x.md"}
    g.set_note("JS.md", [])  # a file named so wins over the alias
    assert g.outgoing("journal.md") == {"JS.md", "c/z.md", "a/x.md"}
    g.remove_note("JS.md")
    g.set_note("pages/JavaScript.md", [], ["JavaScript"])  # the alias dropped
    assert g.outgoing("journal.md") == {"c/z.md", "a/x.md"}
    g.remove_note("c/z.md")
    assert g.outgoing("journal.md") == {"a/x.md"}
    assert g.backlinks("a/x.md") == {"journal.md"}


def test_a_link_in_one_chinese_script_finds_the_note_named_in_the_other():
    """A team in Taiwan and on the mainland: `[[資料庫連線]]` (Taiwan's words, Traditional) is the
    note `数据库连接.md`, a Simplified link finds a Traditional name, and so do titles; a note that
    appears later resolves the links waiting for it."""
    g = LinkGraph()
    g.set_note("ops/数据库连接.md", [])
    g.set_note("tw/資料庫連線備忘.md", [], ["資料庫連線備忘"])
    g.set_note("tw/週報.md", ["資料庫連線", "数据库连接备忘", "學習筆記"])
    assert g.outgoing("tw/週報.md") == {"ops/数据库连接.md", "tw/資料庫連線備忘.md"}
    g.set_note("学习笔记.md", [])
    assert g.outgoing("tw/週報.md") == {"ops/数据库连接.md", "tw/資料庫連線備忘.md", "学习笔记.md"}
    assert g.backlinks("学习笔记.md") == {"tw/週報.md"}
    g.set_note("mainland.md", [], ["週会"])  # a title in one script, a link in the other
    g.set_note("links.md", ["週會"])
    assert g.outgoing("links.md") == {"mainland.md"}


def test_unresolved_link_resolves_when_note_appears_and_backlinks_follow():
    g = LinkGraph()
    g.set_note("a.md", ["Later"])
    assert g.outgoing("a.md") == set()
    g.set_note("Later.md", [])
    assert g.outgoing("a.md") == {"Later.md"}
    assert g.backlinks("Later.md") == {"a.md"}
    g.remove_note("a.md")
    assert g.backlinks("Later.md") == set()


def test_incremental_updates_equal_a_fresh_build():
    import random

    rng = random.Random(7)
    names = [f"n{i}" for i in range(40)]
    titles = [f"T{i}" for i in range(80)] + names[:6]  # titles and aliases, some a file's name too
    folders = ["", "a/", "a/b/", "c/"]
    live = LinkGraph()
    notes: dict[str, tuple[list[str], list[str]]] = {}

    def target() -> str:
        one = rng.choice(names + titles + [f"a/{n}" for n in names[:5]])
        return _link(rng.choice([*titles, "label"]), one) if rng.random() < 0.3 else one  # label first

    for _ in range(600):
        path = f"{rng.choice(folders)}{rng.choice(names)}.md"
        if path in notes and rng.random() < 0.3:
            del notes[path]
            live.remove_note(path)
        else:
            notes[path] = ([target() for _ in range(rng.randrange(4))], rng.sample(titles, rng.randrange(3)))
            live.set_note(path, *notes[path])
    fresh = LinkGraph()
    fresh.load({p: targets for p, (targets, _) in notes.items()}, {p: t for p, (_, t) in notes.items()})
    found = [(t, *fresh.resolve_link(t, p)) for p, (targets, _) in notes.items() for t in targets]
    assert any(LABEL_SIDE in t and side != t.split(LABEL_SIDE)[0] and path for t, side, path in found)  # by label
    assert any(side.startswith("T") and path for _, side, path in found)  # by title or alias
    for path in notes:
        assert live.outgoing(path) == fresh.outgoing(path), path
        assert live.backlinks(path) == fresh.backlinks(path), path


def test_notes_set_in_batches_equal_one_at_a_time():
    """`set_notes` (batches that replace notes, add notes their links name, and repeat a path)
    and removals between batches leave the graph a note-by-note build leaves."""
    import random

    rng = random.Random(11)
    names = [f"n{i}" for i in range(30)]
    folders = ["", "a/", "a/b/", "c/"]
    one_by_one, batched = LinkGraph(), LinkGraph()
    live: set[str] = set()
    for _ in range(40):
        batch = []
        for _ in range(rng.randrange(1, 12)):
            path = f"{rng.choice(folders)}{rng.choice(names)}.md"
            targets = [rng.choice(names + [f"a/{n}" for n in names[:5]]) for _ in range(rng.randrange(4))]
            batch.append((path, targets, [f"title {path}"]))
        for path, targets, titles in batch:
            one_by_one.set_note(path, targets, titles)
        batched.set_notes(batch)
        live |= {path for path, _, _ in batch}
        for gone in rng.sample(sorted(live), k=min(len(live), rng.randrange(3))):
            one_by_one.remove_note(gone)
            batched.remove_note(gone)
            live.discard(gone)
    assert live
    for path in live:
        assert batched.outgoing(path) == one_by_one.outgoing(path), path
        assert batched.backlinks(path) == one_by_one.backlinks(path), path
    assert batched.connected_among(live) == one_by_one.connected_among(live)


def test_a_link_in_full_width_forms_finds_the_note_named_in_the_usual_ones():
    """A Chinese input method types `（Linux）` and `Ｒｅｄｉｓ`; an agent quoting the name writes
    `(Linux)` and `Redis`: the links stayed unresolved (a broken link in graph and backlinks)."""
    g = LinkGraph()
    g.set_note("工具/常用命令 速查（Linux）.md", [])
    g.set_note("技术/Redis连接池超时排查.md", [])
    g.set_note("链接测试.md", ["常用命令 速查(Linux)", "Ｒｅｄｉｓ连接池超时排查", "常用命令 速查（Linux）"])
    assert g.outgoing("链接测试.md") == {"工具/常用命令 速查（Linux）.md", "技术/Redis连接池超时排查.md"}
