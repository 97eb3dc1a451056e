"""The Markdown model: frontmatter, titles, tags, links, diaries."""

from __future__ import annotations

import base64
import json
import random

from k0maru_scanner._chunker import chunk_sections
from k0maru_scanner._markdown import DESCRIPTION_MAX, FM_VARIABLES_BUDGET, parse_note


def test_frontmatter_title_tags_aliases():
    note = parse_note(
        "a/b.md",
        "---\ntitle: Real Title\naliases: [One, Two]\ntags: [x, '#y']\ndate: 2026-01-02\n---\n# Heading\nbody\n",
    )
    assert note.title == "Real Title"
    assert note.aliases == ["One", "Two"]
    assert note.tags == ["x", "y"]
    assert json.loads(note.frontmatter_json)["date"] == "2026-01-02"
    assert note.diary == "a"


def test_title_falls_back_to_h1_then_file_name():
    assert parse_note("n.md", "intro\n# First\n# Second\n").title == "First"
    assert parse_note("dir/my note.md", "no heading here").title == "my note"


def test_broken_yaml_still_indexes_body_and_records_problem():
    note = parse_note("x.md", "---\ntitle: [unclosed\n---\n# Body Title\ntext #tag\n")
    assert note.problems and "YAML" in note.problems[0]
    assert note.title == "Body Title"
    assert note.tags == ["tag"]
    assert note.frontmatter == {}


def test_frontmatter_values_yaml_reads_but_cannot_build_are_problems_not_failures():
    """YAML's grammar takes `2026-02-30` as a date its constructor then refuses; JSON cannot hold a
    value that holds itself or a mapping with keys of mixed types. Each failed the scanner's whole
    GetDocuments reply (every note fetched beside it); now each is a problem on its note."""
    cases = {
        "date: 2026-02-30": "has a value YAML cannot read: day is out of range for month",
        "date: 2026-01-01 25:00:00": "has a value YAML cannot read: hour must be in 0..23",
        "due: 0000-01-01": "has a value YAML cannot read: year 0 is out of range",
        "n: !!int ten": "has a value YAML cannot read: invalid literal for int()",
        "t: !!timestamp soon": "has a value YAML cannot read:",
        "a: &x [*x]": "kept as text: JSON cannot hold it (Circular reference detected)",
        "a: {1: one, b: two}": "kept as text: JSON cannot hold it ('<' not supported",
    }
    for yaml_line, says in cases.items():
        note = parse_note("x.md", f"---\n{yaml_line}\n---\n# Body Title\ntext #tag\n")
        assert note.title == "Body Title" and note.tags == ["tag"], yaml_line
        assert len(note.problems) == 1 and note.problems[0].startswith(f"frontmatter {says}"), note.problems
        json.loads(note.frontmatter_json)  # always a JSON object
    assert json.loads(parse_note("x.md", "---\na: &x [*x]\nb: 2\n---\n").frontmatter_json) == {"a": "[[...]]", "b": "2"}


def test_a_notes_description_is_what_its_frontmatter_says_it_is_about():
    def description(text: str) -> str:
        return parse_note("n.md", text).description

    dendron = (
        "---\nid: 4ush\ntitle: Publish\ndesc: 'Export any subset of your notes as static HTML'\n---\n{{fm.desc}}.\n"
    )
    assert description(dendron) == "Export any subset of your notes as static HTML"
    assert description("---\ndesc: ''\nsummary: The summary.\n---\n") == "The summary."  # the first with text
    assert description("---\nDescription: >-\n  Folded over\n  two lines.\n---\n") == "Folded over two lines."
    assert description("---\ndescription: [not, text]\nexcerpt: 3\n---\n") == ""  # text only
    assert description("description:: a Logseq page's property\n\n- body\n") == "a Logseq page's property"
    assert description("# No frontmatter\n\ndescription: in the body\n") == ""
    assert len(description("---\nabstract: " + "word " * 400 + "\n---\n")) == DESCRIPTION_MAX


def test_dendrons_frontmatter_variables_read_as_their_values():
    """Dendron shows `{{fm.desc}}` as the note's `desc` (171 of the dendron vault's notes say what
    they are about only so): the text searched and shown is the value, on the variable's line."""
    text = (
        "---\ntitle: Publish\ndesc: 'Export notes\n\n  as HTML'\ncustom:\n  version: 5\n  on: true\n---\n"
        "## Summary\n\n{{fm.desc}}. v{{ fm.custom.version }} {{fm.custom.on}} {{fm.missing}}\n\n```\n{{fm.title}}\n```\n"
    )
    (section,) = parse_note("publish.md", text).sections
    summary = "Export notes as HTML. v5 {{fm.custom.on}} {{fm.missing}}"
    assert section.lines == ["## Summary", "", summary, "", "```", "{{fm.title}}", "```"]  # code as written
    assert section.start_line == 10  # the heading's line in the file
    big = "x" * 5000
    hostile = parse_note("h.md", f"---\nbig: {big}\n---\n" + "{{fm.big}}" * 1000 + "\n")
    (line,) = [line for s in hostile.sections for line in s.lines if line]
    assert line.count("x") == FM_VARIABLES_BUDGET and line.endswith("{{fm.big}}")  # a budget, not a blowup


def test_a_notes_own_date_is_its_last_written_day_as_its_text_says():
    def day(text: str, path: str = "n.md") -> str:
        return parse_note(path, text).date

    assert day("---\ndate: 2026-01-02\ncreated: 2025-05-05\n---\n") == "2026-01-02"
    assert day("---\ncreated: 2025-05-05\nUpdated: 2026-03-04T10:00:00Z\n---\n") == "2026-03-04"  # any case
    assert day("---\nupdated: 1627283357535\ncreated: 1600000000000\n---\n") == "2021-07-26"  # Dendron: ms
    assert day("---\nlastmod: '2026-07-08 09:10'\n---\n") == "2026-07-08"  # Hugo, as text
    assert day("date:: 2026-12-01\n\n- a Logseq page's property\n") == "2026-12-01"
    assert day("- a journal\n", "journals/2026_12_04.md") == "2026-12-04"
    assert day("---\ndate: 2026-11-30\n---\n- a journal dated otherwise\n", "journals/2026_12_04.md") == "2026-11-30"
    # the day a note's name gives, when its text names none: daily notes as Obsidian, Foam and
    # Dendron name them, names that start or end with a day, Zettelkasten ids
    for path, named in (
        ("daily/2026-12-04.md", "2026-12-04"),
        ("daily.journal.2026.12.04.md", "2026-12-04"),
        ("journal/2026/12/04.md", "2026-12-04"),
        ("2026-11-30 retro.md", "2026-11-30"),
        ("standup 2026_12_01.md", "2026-12-01"),
        ("202612041530 idea.md", "2026-12-04"),
        ("release 2024.10.15.md", "2024-10-15"),
        ("weekly/2026-W49.md", "2026-11-30"),  # periodic notes: the period's first day (ISO weeks)
        ("monthly/2026-12.md", "2026-12-01"),
        ("2026-Q4.md", "2026-10-01"),
        ("2026-12 budget.md", ""),  # a month in a longer name: no day
        ("2026-W54.md", ""),
        ("Python 3.11.7.md", ""),
        ("ticket 12345678.md", ""),
        ("2026-02-30.md", ""),
        ("2026/notes.md", ""),
    ):
        assert day("# a note\n", path) == named, path
    assert day("---\nupdated: 2026-12-03\n---\n", "daily/2026-11-01.md") == "2026-12-03"  # its text first
    # a decision record states its day under its title (it was dated by its file: a clone's day)
    assert (
        day("# 4. Use gRPC\n\nDate: 2026-03-01\n\n## Status\n\nAccepted\n", "docs/adr/0004-use-grpc.md") == "2026-03-01"
    )
    assert day("# Use gRPC\n\n- Status: accepted\n- Date: 2025-11-02\n", "adr/x.md") == "2025-11-02"  # log4brains
    assert day("---\ndate: 2026-01-05\n---\n# X\n\nDate: 2020-01-01\n") == "2026-01-05"  # frontmatter first
    assert day("# X\n\nThe candidate date: 2026-01-01 was moved.\n") == ""  # prose, not a date line
    for none in (
        "# no date",
        "---\ndate: next week\nupdated: true\n---\n",
        "---\ndate: 2026-02-30\n---\n",
        "---\ndate: 99999999999999999999999\n---\n",
        "---\ndate: [2026-01-01]\n---\n",
    ):
        assert day(none) == "", none


def test_inline_tags_follow_obsidian_rules():
    text = "\n".join(
        [
            "# Heading is not a tag",
            "## Also #real-tag in a heading line",
            "text #alpha and #nested/child and #中文标签 and #123 and a#b and `#code`",
            "```",
            "#infence",
            "```",
            "[link](#anchor) http://x.y/#frag #trail/",
            # a heading of this note linked, Dendron's label-first link, an HTML anchor (dendron's
            # and foam's docs: 11 such "tags" in 6 notes)
            'see [[#Checkpointing]], [[#feedback|dendron://site/community#feedback]], <a href="#top">up</a>',
            "(#paren) [#bracket]",
        ]
    )
    tags = parse_note("t.md", text).tags
    assert tags == ["real-tag", "alpha", "nested/child", "中文标签", "trail", "paren", "bracket"]


def test_vcp_tag_lines_with_their_separators():
    note = parse_note("t.md", "body\nTag: 部署, 运维，数据库、缓存; 队列|消息｜流。\nHashTag: not-a-tag-line\n")
    assert note.tags == ["部署", "运维", "数据库", "缓存", "队列", "消息", "流"]


def test_links_of_every_form():
    text = "[[Plain]] [[Target|Alias]] [[Note#Heading]] [[Doc#^block1]] [[Other^blk]] ![[Embedded.png]]\n[md](sub/file%20name.md#part) [web](https://x.y/a.md) `[[in code]]`"
    links = parse_note("s.md", text).links
    seen = [(lk.target, lk.alias, lk.heading, lk.block, lk.embed, lk.markdown) for lk in links]
    assert ("Plain", "", "", "", False, False) in seen
    assert ("Target", "Alias", "", "", False, False) in seen
    assert ("Note", "", "Heading", "", False, False) in seen
    assert ("Doc", "", "", "block1", False, False) in seen
    assert ("Other", "", "", "blk", False, False) in seen
    assert ("Embedded.png", "", "", "", True, False) in seen
    assert ("sub/file name", "md", "part", "", False, True) in seen
    angled = parse_note("s.md", '[a](<my note.md>) [b](<sub dir/y.md#Some Heading>) [c](../up/x.md "t")').links
    assert [(lk.target, lk.alias, lk.heading) for lk in angled] == [
        ("my note", "a", ""),  # CommonMark's <destination> may hold spaces
        ("sub dir/y", "b", "Some Heading"),
        ("../up/x", "c", ""),
    ]
    assert all(lk.target != "in code" for lk in links)
    assert all("x.y" not in lk.target for lk in links)


def test_a_note_keeps_at_most_256_tags_and_aliases_and_says_so():
    """A generated or hostile note with 100k tags would queue an hour of tag embedding."""
    text = (
        "---\naliases: ["
        + ", ".join(f"a{i}" for i in range(300))
        + "]\n---\n"
        + " ".join(f"#t{i}" for i in range(100_000))
    )
    note = parse_note("many.md", text)
    assert note.tags == [f"t{i}" for i in range(256)] and len(note.aliases) == 256
    assert note.problems == ["100000 tags: only the first 256 are kept", "300 aliases: only the first 256 are kept"]


def test_dendron_links_name_their_note_without_the_vault():
    """`dendron://vault/note` names a note of another vault of the workspace; after a `|` it marks
    the label-first form `[[label|dendron://vault/note]]`. A plain `[[label|note]]` is left as
    written: which side names a note is the retriever's graph's to find."""
    text = (
        "[[Office Hours|dendron://dendron.site/community.events.office-hours]] "
        "[[Dendronites|dendron://site/community.concepts#dendronites]] "
        "![[dendron://site/dendron._ref.web-ui#calendar-view,1:#*]] [[docs|dendron.topic.lookup#create]]"
    )
    seen = [(lk.target, lk.alias, lk.heading, lk.embed) for lk in parse_note("s.md", text).links]
    assert seen == [
        ("community.events.office-hours", "Office Hours", "", False),
        ("community.concepts", "Dendronites", "dendronites", False),
        ("dendron._ref.web-ui", "", "calendar-view,1:#*", True),
        ("docs", "dendron.topic.lookup#create", "", False),
    ]


def test_a_logseq_page_has_its_title_aliases_and_tags():
    """Logseq keeps a page's properties in `key:: value` lines that open the page, writes a tag
    of several words `#[[two words]]`, and names a namespace page's file `a___b.md`."""
    text = (
        "title:: Project/Alpha Plan\nalias:: alpha, [[A P]]\ntags:: planning, [[big project]], #q1\nowner:: bob\n\n"
        "- Kickoff with [[Bob]] about [[Project/Beta]] and #[[road map]]\n"
        "\t- id:: 64f1c2aa-1111-2222-3333-444455556666\n\t- tag:: not a page property\n"
    )
    note = parse_note("pages/Project___Alpha.md", text)
    assert note.title == "Project/Alpha Plan"
    assert sorted(note.aliases) == ["A P", "alpha"]
    assert sorted(note.tags) == ["big project", "planning", "q1", "road map"]
    assert note.frontmatter["owner"] == "bob" and "id" not in note.frontmatter
    assert {lk.target for lk in note.links} == {"A P", "big project", "Bob", "Project/Beta", "road map"}
    # no title property: the page name from the file name; an old graph's escaped `/`
    assert parse_note("pages/Project___Beta.md", "- body\n").title == "Project/Beta"
    assert parse_note("pages/Project%2FGamma.md", "- body\n").title == "Project/Gamma"
    assert parse_note("pages/100% done.md", "- body\n").title == "100% done"
    # YAML frontmatter's own keys win; properties further down are a block's, not the page's
    note = parse_note("a.md", "---\ntags: [y]\n---\ntags:: z\nowner:: me\n")
    assert note.tags == ["y"] and note.frontmatter["owner"] == "me"
    assert parse_note("b.md", "# B\n\ntags:: late\n").tags == []


def test_a_logseq_journal_is_named_by_its_day_and_hidden_block_properties_are_not_text():
    """Logseq shows journals/2026_12_04.md as "Dec 4th, 2026" (its default format), links to it
    so, and never shows a block's `id::` or `collapsed::`."""
    text = "- Met about [[Project/Beta]]\n  id:: 64f1c2aa-1111-2222-3333-444455556666\n  collapsed:: true\n- done\n"
    note = parse_note("journals/2026_12_04.md", text)
    assert (note.title, note.aliases) == ("Dec 4th, 2026", ["2026-12-04"])
    assert note.sections[0].lines == ["- Met about [[Project/Beta]]", "", "", "- done"]  # line numbers kept
    days = {p: parse_note(p, "- x\n").title for p in ("journals/2026_12_01.md", "journals/2026_12_12.md")}
    assert days == {"journals/2026_12_01.md": "Dec 1st, 2026", "journals/2026_12_12.md": "Dec 12th, 2026"}
    assert note.block_ids == ["64f1c2aa-1111-2222-3333-444455556666"]
    ref = parse_note("pages/B.md", "- as ((64F1C2AA-1111-2222-3333-444455556666)) says `((x))`\n")
    assert [(lk.target, lk.block) for lk in ref.links] == [
        ("((64f1c2aa-1111-2222-3333-444455556666))", "64f1c2aa-1111-2222-3333-444455556666")
    ]
    assert ref.sections[0].lines == ["- as  says `((x))`"]  # the reference is a link, its uuid no text
    assert parse_note("journals/2026_02_30.md", "- x\n").aliases == []  # no such day
    assert parse_note("notes/journals.md", "- x\n").title == "journals"


def test_embed_marks_at_line_start_and_beside_links():
    text = "![[A]][[B]]![[C]] [[[D]] x![[E]]\n![img](pics/F.md) [![x](G.md) [h](H.md)![i](I.md)"
    links = parse_note("s.md", text).links
    seen = [(lk.target, lk.embed, lk.markdown, lk.alias) for lk in links]
    assert seen == [
        ("A", True, False, ""),
        ("B", False, False, ""),
        ("C", True, False, ""),
        ("D", False, False, ""),
        ("E", True, False, ""),
        ("pics/F", True, True, "img"),
        ("G", True, True, "x"),  # `[` then the image `![x](G.md)`, as CommonMark reads it
        ("H", False, True, "h"),
        ("I", True, True, "i"),
    ]


def test_diary_is_first_folder_or_root():
    assert parse_note("top.md", "x").diary == "Root"
    assert parse_note("work/deep/n.md", "x").diary == "work"


def test_opaque_data_is_not_indexed_and_lines_do_not_move():
    blob = base64.b64encode(random.Random(7).randbytes(300_000)).decode()
    text = (
        "# Error dialog\n\nThe build failed:\n\n"
        f"![shot](data:image/png;base64,{blob}) then #fixed by [[Cache]] clearing\n\nLast line.\n"
    )
    note = parse_note("shot.md", text)
    chunks = chunk_sections(note.sections)
    assert len(chunks) == 1  # 704 chunks before, each for the embedder
    assert chunks[0].text.endswith("![shot](data:image/png;base64,) then #fixed by [[Cache]] clearing\n\nLast line.")
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 7)
    assert note.tags == ["fixed"] and [link.target for link in note.links] == ["Cache"]


def test_an_excalidraw_drawing_keeps_its_text_elements_only():
    data = base64.b64encode(random.Random(8).randbytes(30_000)).decode()
    text = (
        "---\nexcalidraw-plugin: parsed\n---\n# Text Elements\nLoad balancer ^a1\n\n%%\n# Drawing\n"
        "```compressed-json\n" + "\n\n".join(data[i : i + 100] for i in range(0, len(data), 100)) + "\n```\n%%\n"
    )
    chunks = chunk_sections(parse_note("Drawing.excalidraw.md", text).sections)
    assert "Load balancer" in chunks[0].text
    assert not any(data[:100] in c.text or data[-50:] in c.text for c in chunks)
    assert chunks[-1].end_line == len(text.splitlines())


def test_long_text_that_is_not_data_is_kept():
    chinese = "借用检查器报错时先看不可变引用的作用域" * 20  # 380 characters, no space
    url = "https://example.com/" + "/".join(["Segment-2"] * 40) + ".html?q=1"
    words = " ".join(["word"] * 100)
    for line in (chinese, url, words, "x" * 255):
        assert parse_note("n.md", line).sections[0].lines == [line]


BILLION_LAUGHS = (
    "---\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(f"{k}: &{k} [{', '.join([f'*{p}'] * 9)}]\n" for p, k in zip("abcdefgh", "bcdefghi", strict=True))
    + "tags: *i\ntitle: *i\n---\n# Laughs\ntext #tag\n"
)


def test_a_yaml_alias_bomb_is_a_problem_not_a_hang():
    """Nine lists of nine aliases to the one before are ten objects to YAML and 9^9 values to `str`
    or JSON: the note's parse never ended (and held the scanner's reply for every note fetched
    beside it). Its frontmatter is now not read, and a problem says why; aliases as people use
    them (a block named again, a merge key) are read as before."""
    note = parse_note("x.md", BILLION_LAUGHS)
    assert note.title == "Laughs" and note.tags == ["tag"] and note.frontmatter == {}
    assert note.problems == [
        "frontmatter not read: its YAML aliases repeat values to 3,783,403,227 characters, from 415 characters of text"
    ]
    blob = "x" * 50_000
    repeated = parse_note("x.md", f"---\ns: &s {blob}\nb: [{', '.join(['*s'] * 20)}]\n---\n")
    assert repeated.frontmatter == {} and "repeat values to 1,050,004 characters" in repeated.problems[0]
    merged = parse_note(
        "x.md", "---\nbase: &base {owner: ana, tags: [ops]}\nrelease: {<<: *base, owner: bo}\ntags: *t\n---\n"
    )
    assert merged.problems and "YAML" in merged.problems[0]  # an unknown alias: invalid YAML, as before
    merged = parse_note(
        "x.md", "---\nbase: &base {owner: ana}\nrelease: {<<: *base, day: 1}\nlist: &l [a, b]\ntags: *l\n---\n"
    )
    assert merged.problems == [] and merged.tags == ["a", "b"]
    assert merged.frontmatter["release"] == {"owner": "ana", "day": 1}


def test_a_heading_keeps_a_hash_that_ends_a_word():
    """A closing sequence of `#`s is cut only when it is the whole text or follows a blank
    (CommonMark): `## Why C#` was "Why C"."""
    text = "# Why C#\n## Setup ##\n### F# and C# ###\n#### ####\n##### #hashtag\n"
    assert [s.heading_path[-1] for s in parse_note("x.md", text).sections] == [
        "Why C#", "Setup", "F# and C#", "", "#hashtag",
    ]  # fmt: skip


def test_lines_that_made_the_patterns_take_time_squared_parse_right():
    """Lines a generator or a paste can write, on which a pattern scanned from each start to the
    line's end: `[x](http://a.md` 20,000 times took 58 s to parse, a heading of 20,000 ` #` 4 s, a
    line of `[a](` 11 s. Each now parses in milliseconds (`bench/parse_adversarial.py`); here, what
    they hold is still found."""
    many = 20_000
    links = parse_note("x.md", "[x](http://a.md" * many + " [real](b.md) [[Wiki]]\n").links
    assert [(lk.target, lk.markdown) for lk in links] == [("Wiki", False), ("b", True)]
    heading = parse_note("x.md", "# Title" + " #" * many + " end\n")
    assert heading.title == "Title" + " #" * many + " end"
    assert parse_note("x.md", "# Title" + " #" * many + "\n").title == "Title" + " #" * (many - 1)  # one closing run
    opens = parse_note("x.md", "[a](" * many + "[b](c.md) #tag\n")
    assert [lk.target for lk in opens.links] == ["c"] and opens.tags == ["tag"]
    props = parse_note("x.md", "status:: " + "open" + " " * many + "\n# T\n")
    assert json.loads(props.frontmatter_json)["status"] == "open"


def test_code_fenced_in_a_list_item_is_code_and_a_list_items_heading_opens_a_section():
    """A numbered step's indented fence (24 dendron notes: a `### heading` inside one made a
    section), Logseq's blocks (`- ## Setup`, a fence in a nested block), ```inline``` code."""
    text = "\n".join(
        [
            "# Deploy",
            "",
            "1. Write the config:",
            "",
            "    ```yml",
            "    ### not a heading",
            "    tags: #nottag [[NotALink]]",
            "    ```",
            "",
            "1. Run it #realtag",
            "",
            "- ## Setup",
            "\t- Install the CLI",
            "\t- ```bash",
            "\t  #include <stdio.h> [[AlsoNoLink]]",
            "\t  ```",
            "- ```inline``` code, then #after",
            "\t- ### Rollback",
            "\t\t- Run it again",
        ]
    )
    note = parse_note("ops/deploy.md", text)
    assert note.tags == ["realtag", "after"]
    assert note.links == []
    assert [(s.heading_path, s.start_line) for s in note.sections] == [
        (["Deploy"], 1),
        (["Deploy", "Setup"], 12),
        (["Deploy", "Setup", "Rollback"], 18),
    ]
    chunks = chunk_sections(note.sections)
    assert [c.heading_path for c in chunks][-1] == ("Deploy", "Setup", "Rollback")
    assert "Run it again" in chunks[-1].text
    # a list item's `#` heading is a section, not the note's title
    assert parse_note("pages/My page.md", "- # Big heading\n- text\n").title == "My page"
    # a fence its author left open in a numbered step ends with the step (dendron's
    # lookup.modifiers note: its next sections were read as code), not at the next fence
    unclosed = parse_note(
        "m.md", '1. Pass it as an argument:\n\n    ```json\n    {"k": 1}\n\n## splitType\n\nsee #aftertag\n'
    )
    assert [s.heading_path for s in unclosed.sections][-1] == ["splitType"]
    assert unclosed.tags == ["aftertag"]
    top = parse_note("t.md", "```\nunindented\n## still code\n```\n")  # at the top level, as before
    assert [s.heading_path for s in top.sections] == [[]]


def test_links_in_properties_are_links_that_say_their_property():
    """Obsidian's properties link notes (`up: "[[Parent]]"`, a list of them, or unquoted, which
    YAML reads as a nested list), and so do `key:: [[x]]` lines (Logseq, Dataview) and an ADR's
    status line ("Superseded by [5. Use X](0005-use-x.md)"): each link says the property that
    holds it, so the retriever can tell a note that replaces another. Prose is no property."""
    text = (
        "---\n"
        "title: Auth v2\n"
        'supersedes: "[[Auth design]]"\n'
        "related:\n"
        '  - "[[Tokens]]"\n'
        "  - [[Sessions]]\n"
        "up: [[Parent]]\n"
        "count: 3\n"
        "---\n"
        "# Auth v2\n"
        "- Replaced-By:: [[Auth v3]]\n"
        "Superseded by [Use OIDC](0005-use-oidc.md)\n"
        "**Supersedes** [[0001 Record]]\n"
        "Replaces [[x]] in prose, as does a later [[y]].\n"
        "We never said supersedes [[z]] first.\n"
    )
    links = {(lk.target, lk.property, lk.line) for lk in parse_note("a.md", text).links}
    assert links == {
        ("Auth design", "supersedes", 3),
        ("Tokens", "related", 4),
        ("Sessions", "related", 4),
        ("Parent", "up", 7),
        ("Auth v3", "replaced-by", 11),
        ("0005-use-oidc", "superseded_by", 12),
        ("0001 Record", "supersedes", 13),
        ("x", "", 14),
        ("y", "", 14),
        ("z", "", 15),
    }
    assert not parse_note("b.md", "---\nup: Parent\n---\n[[Parent]]\n").links[0].property
    adr = (  # MADR's frontmatter status, log4brains' and Nygard's status lines
        '---\nstatus: "superseded by [ADR-0005](0005-example.md)"\n---\n# 3. Use X\n\n'
        "- Status: superseded by [ADR-0007](0007-y.md)\n**Status:** Superseded by [[0008 z]]\n"
        "Status: Supersedes [ADR-0002](0002-a.md)\nThe status is superseded by [[nothing]] here.\n"
    )
    assert [(lk.target, lk.property) for lk in parse_note("docs/adr/0003-x.md", adr).links] == [
        ("0005-example", "superseded_by"),
        ("0007-y", "superseded_by"),
        ("0008 z", "superseded_by"),
        ("0002-a", "supersedes"),
        ("nothing", ""),
    ]
    assert not parse_note("c.md", "---\nstatus: superseded\n---\n# C\n").links  # it names no successor


def test_links_and_tags_in_obsidian_comments_are_none_and_their_words_stay_searchable():
    """Obsidian hides `%% … %%`: a private remark's `[[Secret Note]]` and `#hiddentag` counted in the
    graph and the tags. Its words are still the note's text (Obsidian's own search finds them)."""
    note = parse_note(
        "a.md",
        "# A\n\nsee [[Shown]] %% and [[Secret]] #hidden %% #shown\n\n%%\nblock [[Block Secret]] #blocktag\n%%\n"
        "after [[After]] #after\n`%% no comment` [[In code too]]\n",
    )
    assert [link.target for link in note.links] == ["Shown", "After", "In code too"]
    assert note.tags == ["shown", "after"]
    assert "Block Secret" in "\n".join(c.text for c in chunk_sections(note.sections))


def test_aliases_written_as_one_string_are_split_at_commas_as_tags_are():
    note = parse_note("a.md", "---\naliases: PG tuning, pgtune\ntags: database, infra\n---\n# Postgres Tuning\n")
    assert note.aliases == ["PG tuning", "pgtune"] and note.tags == ["database", "infra"]
    assert parse_note("b.md", "---\naliases: Just one\n---\n# B\n").aliases == ["Just one"]


def test_an_obsidian_block_anchor_is_no_text_of_its_chunk():
    """`^rb42x1` named the block for links, and showed in snippets ("…48 hours. ^rb42x1 If…")."""
    note = parse_note("a.md", "# A\n\nKeep it warm for 48 hours. ^rb42x1\n\n| a |\n\n^tbl-1\n\nx^2 and 2 ^ 3 stay\n")
    text = "\n".join(c.text for c in chunk_sections(note.sections))
    assert "^" not in text.replace("x^2", "").replace("2 ^ 3", "")
    assert "Keep it warm for 48 hours." in text and "x^2 and 2 ^ 3 stay" in text
