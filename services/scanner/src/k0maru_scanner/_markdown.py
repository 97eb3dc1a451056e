"""Markdown notes → Document: frontmatter, title, tags, links and chunks.

Rules follow Obsidian where it has them: tags are not read from code spans, fences or
headings' leading hashes; `#a/b` nests; any Unicode letter may appear in a tag; wikilinks
`[[T]]`, `[[T|alias]]`, `[[T#heading]]`, `[[T#^block]]` (and `[[T^block]]`), embeds
`![[T]]`, and Markdown links to `.md` files. VCP's `Tag:` lines are read too, but anchored
at the start of a line (VCP's unanchored regex also matches "HashTag:").

Text is read in Unicode's composed form (NFC), the form editors type and queries come in: a
note pasted from a macOS file name, or written by a tool that decomposes (`e` + U+0301, Hangul
as jamo), would otherwise match no query (the BM25 analysis splits at the combining mark), and
its title, tags and links would differ from the same words typed. Paths stay as the file system
spells them: they name the file.

Opaque data is left out of what is indexed: a run of 256 or more base64 characters with the
capitals and digits of encoded data (an image pasted as a `data:` URI, as Typora, Joplin and
Notion exports write them; not a long URL) and the body of a
` ```compressed-json ` fence (an Excalidraw drawing). Nothing in it can be searched, and a
300 KB screenshot made 704 chunks for the embedder. Line numbers do not move.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote

import yaml

from k0maru_common import name_day, note_date, page_name, stated_day

from ._chunker import BLOCK_START, LIST_ITEM, Section, chunk_sections
from ._journals import JournalFormat

DEFAULT_JOURNALS = JournalFormat()  # Logseq's: journals/2026_12_04.md is "Dec 4th, 2026"

# bump when parse_note or chunk_sections change their output (2026-12-01.2: libyaml's messages,
# below; 2026-12-03.1: text read as NFC; .2: opaque data left out; 2026-12-04.1: Dendron's links,
# Logseq's page properties, `#[[tags]]`, namespace file names and journals; at most 256 tags and aliases;
# .2: frontmatter values YAML or JSON cannot hold are problems, a note's own date, Logseq's block
# references `((uuid))` no text; .3: the day a note's name gives, periodic notes' first day,
# Obsidian's daily notes' format; .4: a document says the day it was committed, in a vault in git;
# .5: a heading keeps a `#` that ends a word, `[![x](a.md)` is an image in a bracket; .6: a sync
# tool's conflicting copy, or git's conflict markers, are a problem of the note: `_conflicts.py`;
# `[[#Heading]]` and `href="#top"` are no tags; 2026-12-05.1: a note's description from its frontmatter,
# Dendron's `{{fm.key}}` as the frontmatter's value; .2: code fenced in a list item is code, a
# list item's heading (`- ## Setup`, as Logseq writes them) opens a section, ```x``` is no fence;
# 2026-12-07.1: wikilinks in frontmatter values are links, and a link says the property that holds it,
# an ADR's status (its line, MADR's frontmatter) `supersedes` or `superseded_by`)
# 2026-12-07.2: a decision record's "Date: 2026-03-01" line under its title dates it
# 2026-12-07.3: links and tags inside Obsidian's `%% comments %%` are none; `aliases: a, b` is two
# aliases (as `tags: a, b` is two tags); Document.conflict_of names a sync tool's copy's original;
# Obsidian's block anchors (`… ^rb42x1`) are no text of a chunk; Logseq's `((uuid))` references and
# `{{embed …}}` macros are embeds (read_note shows what they show)
PARSER_VERSION = "2026-12-07.3"
# libyaml's parser with PyYAML's safe constructor: the same values (1,015 frontmatters of the
# dendron and foam vaults), 8x faster (pure-Python parsing was 3/4 of dendron's parse stage);
# some invalid-YAML messages are worded differently
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# A frontmatter's values written out may hold this many times its text's characters, and this
# many more: YAML's aliases repeat a value where it is named again, and a few aliases naming
# aliases make billions of values ("billion laughs") that the parse would write out for ever
ALIAS_GROWTH, ALIAS_ALLOWANCE = 4, 100_000
_FENCE = re.compile(rf"^(?:{LIST_ITEM}|[ \t]*)(`{{3,}}|~{{3,}})")  # indented 4 or more: in a list item
OPAQUE_RUN = 256  # base64 characters in a row: data, not text (no word or identifier is this long)
_OPAQUE = re.compile(rf"[A-Za-z0-9+/=_-]{{{OPAQUE_RUN},}}")
_OPAQUE_FENCES = ("compressed-json",)  # info strings of fences that hold only data
# the text after the marker; its closing `#`s are cut in Python (`_heading_text`): the regex's lazy
# `(.*?)[ \t#]*$` took time squared in the length of a line of spaces and `#`s
_HEADING = re.compile(rf"^{BLOCK_START}(#{{1,6}})[ \t]+(.*)$")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
# a destination ends at `)`, and at a `]` (a bracket in it is rarer than a line of `](` without `)`,
# where scanning from each `](` to the line's end took time squared in its length)
_MD_LINK_DEST = re.compile(r"\]\([^)\]\n]*\)")
# not a heading linked in the same note (`[[#Heading]]`, Dendron's `[[#label|note]]`) nor an HTML
# anchor (`href="#top"`)
_INLINE_TAG = re.compile(r"(?<![\w/\\=&?#\-.])(?<!\[\[)(?<!=[\"'])#([\w\-/]+)")
_INLINE_PAGE_TAG = re.compile(r"(?<![\w/\\=&?#\-.])#\[\[([^\[\]\n]+)\]\]")  # Logseq: #[[two words]]
_TAG_LINE = re.compile(r"^\s*tag[:：](?![:：])[ \t]*(.+)$", re.IGNORECASE)
# Logseq's page properties (and Obsidian Dataview's fields): `key:: value` lines that open the page
_PROPERTY = re.compile(r"^[ \t]*([A-Za-z][\w-]*)::(?:[ \t]+(.*))?$")  # the value's trailing blanks cut in Python
# block properties Logseq writes and never shows (a referenced block's id, folding, PDF highlights):
# not a note's text (a uuid's hex made BM25 terms and embedder tokens of every referenced block)
_HIDDEN_PROPERTY = re.compile(
    r"^[ \t]*(?:-[ \t]+)?(?:id|collapsed|heading|ls-type|hl-type|hl-page|hl-stamp|hl-color)::"
)
_LINE_PROPERTY = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?([A-Za-z][\w-]*)::")  # `key:: [[x]]`, `- key:: …`
# an ADR's status line (adr-tools, MADR, log4brains, Nygard's): "Superseded by [5. Use X](0005-use-x.md)",
# "**Supersedes** [[0001 Record]]", "- Status: superseded by [ADR-0005](0005-x.md)", "**Status:** Superseded
# by …"; not "replaces", which prose opens sentences with
_SUCCESSION_LINE = re.compile(
    r"^[ \t]*(?:[-*+>][ \t]+)?(?:\*\*|__)?(?:status[ \t]*(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*)?"
    r"(superseded[ \t]+by|supersedes)\b",
    re.IGNORECASE,
)
# MADR's frontmatter: `status: "superseded by [ADR-0005](0005-example.md)"`
_SUPERSEDED_STATUS = re.compile(r"^[ \t]*superseded[ \t]+by\b", re.IGNORECASE)
_BLOCK_ANCHOR = re.compile(r"(?:^|(?<=[ \t]))\^[A-Za-z0-9-]+[ \t]*$")  # `… warm for 48 hours. ^rb42x1`
_BLOCK_ID = re.compile(r"^[ \t]*(?:-[ \t]+)?id::[ \t]*([0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})[ \t]*$")
# Logseq's block reference: ((64f1c2aa-1111-2222-3333-444455556666)), a link to the note holding it
_LOGSEQ_EMBED = re.compile(r"\{\{embed[ \t]*$")  # Logseq's `{{embed [[page]]}}`, up to the link it embeds
_BLOCK_REF = re.compile(r"\(\(([0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})\)\)")
_FM_VARIABLE = re.compile(r"\{\{\s*fm\.([\w.-]+?)\s*\}\}")  # Dendron's variable substitution
_DESCRIPTION_KEYS = ("description", "desc", "summary", "abstract", "excerpt")
FM_VARIABLE_MAX = 2000  # characters of a frontmatter value one `{{fm.key}}` shows
FM_VARIABLES_BUDGET = 20_000  # characters a note's `{{fm.key}}` variables add in all
DESCRIPTION_MAX = 1000  # characters of a frontmatter's description kept (searched with the first chunk)
_NOTE_EXTENSION = re.compile(r"\.(md|markdown)$", re.IGNORECASE)
_TAG_LINE_SPLIT = re.compile(r"[,，、;；|｜]")
# an embed's `!` is read before the match: a pattern that starts with a literal is found by a
# fast literal search, where a leading `(!?)` made the engine try a match at every character
# (the two link regexes were a fifth of parsing a linked vault's long lines)
_WIKILINK = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
# Dendron names a note of another vault of its workspace `dendron://<vault>/<note>`, and writes a
# link with a label `[[label|dendron://vault/note]]` or `[[label|note]]`: the label first, the
# reverse of Obsidian's `[[note|label]]`. A `dendron://` after the `|` settles which side is the
# note; without one the retriever's graph tries the other side when the first names no note.
_DENDRON_VAULT = re.compile(r"^\s*dendron://[^/\]|]*/")
# a destination in <angle brackets> may hold spaces (`[x](<my note.md#Some heading>)`: CommonMark,
# and what VS Code and some Obsidian versions write); a bare one is percent-encoded (`my%20note.md`).
# Neither the text nor a bare destination holds a bracket: each scan then ends at the next one, and a
# line of `[x](http://a.md` repeated (no `)`) no longer takes time squared in its length (58 s at 300 KB)
_MD_LINK = re.compile(
    r"\[([^\[\]\n]*)\]\((?:<([^<>\n]+?\.(?:md|markdown))(#[^<>\n]*)?>|([^)<>\s\[\]]+?\.(?:md|markdown))(#[^)\s>\[\]]*)?)"
    r"(?:\s+\"[^\"]*\")?\)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ParsedLink:
    target: str
    alias: str = ""
    heading: str = ""
    block: str = ""
    embed: bool = False
    markdown: bool = False
    line: int = 0
    # the property that holds the link: a frontmatter key (`supersedes: "[[Old plan]]"`), a
    # `key:: [[x]]` line's key (Logseq, Dataview), `superseded_by` / `supersedes` on an ADR's
    # "Superseded by [[x]]" / "Supersedes [[x]]" line; "" for a link in the text
    property: str = ""


@dataclass
class ParsedNote:
    path: str
    title: str
    diary: str
    frontmatter: dict[str, Any]
    tags: list[str]
    aliases: list[str]
    links: list[ParsedLink]
    sections: list[Section]
    problems: list[str] = field(default_factory=list)
    block_ids: list[str] = field(default_factory=list)  # Logseq's `id::` of blocks others reference
    date: str = ""  # the note's own date, YYYY-MM-DD (`note_date`); "" when its text names none
    description: str = ""  # the note's own summary from its frontmatter (`note_description`)
    frontmatter_json: str = "{}"  # the frontmatter as a JSON object (`_frontmatter_json`)


def _expanded_size(value: Any) -> int:
    """How many characters `value`'s scalars hold once YAML's aliases are written out (keys
    counted, a container 1), without writing them out: an alias is one object shared, so nine
    lists each of nine aliases to the last are 9^9 values to `str` or JSON, but ten objects in
    memory. A value that holds itself counts once (`_frontmatter_json` says so)."""
    sizes: dict[int, int] = {}

    def size(node: Any) -> int:
        if not isinstance(node, list | dict):
            return len(node) if isinstance(node, str) else 8
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = 1  # while it is counted: a value that holds itself
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        total = 1 + sum(size(child) for child in children)
        sizes[id(node)] = total
        return total

    try:
        return size(value)
    except RecursionError:
        return 0  # nested too deep to count: JSON cannot hold it either, and says so


def _json_default(value: object) -> str:
    if isinstance(value, date | datetime):
        return value.isoformat()
    return str(value)


def diary_of(path: str) -> str:
    parts = PurePosixPath(path).parts
    return parts[0] if len(parts) >= 2 else "Root"


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """(yaml text or None, body, number of lines the frontmatter block takes)."""
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return None, text, 0
    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1 :]), i + 1
    return None, text, 0


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in re.split(r"[,\s]+", value) if v]
    if isinstance(value, list | tuple):
        return [str(v) for v in value if v is not None and str(v).strip()]
    return [str(value)]


def _clean_tag(tag: str) -> str:
    return tag.strip().lstrip("#").strip().rstrip("/")


def parse_note(path: str, text: str, journals: JournalFormat = DEFAULT_JOURNALS) -> ParsedNote:
    """Parse one note. Never raises on content: problems are recorded instead."""
    problems: list[str] = []
    text = unicodedata.normalize("NFC", text.removeprefix("\ufeff"))  # ASCII text: returned at once
    fm_text, body, fm_lines = split_frontmatter(text)
    frontmatter: dict[str, Any] = {}
    if fm_text is not None:
        try:
            loaded = yaml.load(fm_text, Loader=_YAML_LOADER)  # a safe loader
        except yaml.YAMLError as exc:
            problems.append(f"frontmatter is not valid YAML: {str(exc).splitlines()[0]}")
        # values YAML's grammar takes and its constructors refuse: `date: 2026-02-30` (ValueError),
        # `!!int x`, `!!timestamp x` (AttributeError); each once failed the scanner's whole reply
        except (ValueError, TypeError, AttributeError, OverflowError, RecursionError) as exc:
            problems.append(f"frontmatter has a value YAML cannot read: {exc}")
        else:
            expanded = _expanded_size(loaded) if "*" in fm_text else 0  # an alias is `*name`
            if expanded > ALIAS_GROWTH * len(fm_text) + ALIAS_ALLOWANCE:  # a "billion laughs"
                problems.append(
                    f"frontmatter not read: its YAML aliases repeat values to {expanded:,} characters, "
                    f"from {len(fm_text):,} characters of text"
                )
            elif isinstance(loaded, dict):
                frontmatter = {str(k): v for k, v in loaded.items()}
            elif loaded is not None:
                problems.append("frontmatter is not a mapping")

    # before the page's `key:: value` lines join it: their links are read with the text's
    property_links = (
        _property_links(frontmatter, fm_text or "")
        if frontmatter and ("[[" in (fm_text or "") or "upersede" in (fm_text or ""))
        else []
    )
    for key, value in _page_properties(body).items():
        frontmatter.setdefault(key, value)  # the YAML frontmatter's own value wins
    tags: list[str] = []
    for raw in _as_list(frontmatter.get("tags", frontmatter.get("tag"))):
        tags.append(_clean_tag(raw))
    aliases = [a.strip() for a in _as_list_keep_spaces(frontmatter.get("aliases", frontmatter.get("alias")))]

    links = property_links
    block_ids: list[str] = []
    sections: list[Section] = []
    heading_stack: list[tuple[int, str]] = []
    first_h1 = ""
    in_fence: str | None = None
    fence_item = 0  # the open fence's column when it is in a list item (0: at the top level)
    current = Section(heading_path=[], start_line=fm_lines + 1, lines=[])
    opaque_fence = False
    in_comment = False  # inside an Obsidian `%% comment %%` that spans lines
    variables = _FrontmatterVariables(frontmatter)
    for offset, raw_line in enumerate(body.splitlines()):
        line_no = fm_lines + offset + 1
        if len(raw_line) >= OPAQUE_RUN:
            raw_line = without_opaque_data(raw_line)
        fence = _FENCE.match(raw_line)
        if in_fence is not None and fence_item and raw_line.strip() and _indent(raw_line) < fence_item:
            in_fence = None  # its list item ended, an unclosed fence with it (as CommonMark renders it)
            opaque_fence = False
        if in_fence is not None:
            if fence and fence.group(1)[0] == in_fence[0] and len(fence.group(1)) >= len(in_fence):
                in_fence = None
                opaque_fence = False
            current.lines.append("" if opaque_fence else raw_line)
            continue
        if fence and not (fence.group(1)[0] == "`" and "`" in raw_line[fence.end() :]):  # not ```inline```
            in_fence = fence.group(1)
            opaque_fence = raw_line[fence.end() :].strip().lower().startswith(_OPAQUE_FENCES)
            # in a list item (after its marker, or indented 4 or more): the item's lines are indented
            # as far as the fence; a line indented less ends the item, and the code
            prefix = raw_line[: fence.start(1)]
            column = len(prefix.expandtabs(4))
            fence_item = column if prefix.strip() or column >= 4 else 0
            current.lines.append(raw_line)
            continue
        # a property's key opens its line: looked for in 40 characters, not along a long paragraph
        if raw_line.find("::", 0, 40) >= 0 and _HIDDEN_PROPERTY.match(raw_line):
            if block_id := _BLOCK_ID.match(raw_line):
                block_ids.append(block_id.group(1).lower())
            current.lines.append("")
            continue
        if "{{" in raw_line and frontmatter:  # Dendron shows `{{fm.desc}}` as the frontmatter's desc
            raw_line = _FM_VARIABLE.sub(variables.value, raw_line)
        heading = _HEADING.match(raw_line)
        if heading:
            level, heading_text = len(heading.group(1)), _heading_text(heading.group(2))
            if level == 1 and not first_h1 and not raw_line[: heading.start(1)].strip():  # a list item's is no title
                first_h1 = heading_text
            if current.lines:
                sections.append(current)
            while heading_stack and heading_stack[-1][0] >= level:
                heading_stack.pop()
            heading_stack.append((level, heading_text))
            current = Section(heading_path=[h for _, h in heading_stack], start_line=line_no, lines=[raw_line])
        elif "^" in raw_line:  # Obsidian's block anchor names the block for links; no words of it
            current.lines.append(_BLOCK_ANCHOR.sub("", raw_line))
        else:
            current.lines.append(raw_line)
        code_free = _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), raw_line) if "`" in raw_line else raw_line
        if in_comment or "%%" in code_free:
            code_free, in_comment = _outside_comments(code_free, in_comment)
        found = _links_in(code_free, line_no)
        if found:
            if held_by := _line_property(code_free):
                found = [replace(link, property=held_by) for link in found]
            links.extend(found)
            if any(link.target.startswith("((") for link in found):  # a block's uuid is no text to search
                current.lines[-1] = _BLOCK_REF.sub("", current.lines[-1])
        tag_line = _TAG_LINE.match(code_free) if ":" in code_free or "：" in code_free else None
        if tag_line:
            tags.extend(t.strip().rstrip("。.").strip() for t in _TAG_LINE_SPLIT.split(tag_line.group(1)))
        tag_text = _MD_LINK_DEST.sub(lambda m: " " * len(m.group(0)), code_free) if "](" in code_free else code_free
        if "#" in tag_text:
            for match in _INLINE_TAG.finditer(tag_text):
                tag = match.group(1).rstrip("/")
                if tag and not tag.startswith("/") and not tag.isdigit():
                    tags.append(tag)
            for match in _INLINE_PAGE_TAG.finditer(tag_text) if "#[[" in tag_text else ():
                tags.append(_clean_tag(match.group(1)))
    if current.lines:
        sections.append(current)

    journal = journals.names(path)
    aliases += journal[1:]
    day = note_date(
        frontmatter, journal[1] if journal else journals.daily_day(path) or stated_day(body) or name_day(path)
    )
    title = (
        str(frontmatter.get("title") or "").strip()
        or first_h1
        or (journal[0] if journal else "")
        or unicodedata.normalize("NFC", page_name(PurePosixPath(path).stem))
    )
    return ParsedNote(
        path=path,
        title=title,
        diary=diary_of(path),
        frontmatter=frontmatter,
        tags=_at_most(list(dict.fromkeys(t for t in tags if t)), "tags", problems),
        aliases=_at_most([a for a in aliases if a], "aliases", problems),
        links=links,
        sections=sections,
        problems=problems,
        block_ids=block_ids,
        date=day,
        description=note_description(frontmatter),
        frontmatter_json=_frontmatter_json(frontmatter, problems),
    )


def _frontmatter_json(frontmatter: dict[str, Any], problems: list[str]) -> str:
    """The frontmatter as a JSON object. YAML can say what JSON cannot: a value holding itself
    (`a: &x [*x]`), keys of mixed types in one mapping (`{1: a, b: c}` cannot be sorted); such a
    frontmatter is kept with its values as text, and a problem says so."""
    try:
        return json.dumps(frontmatter, ensure_ascii=False, default=_json_default, sort_keys=True)
    except (ValueError, TypeError, RecursionError) as exc:
        problems.append(f"frontmatter kept as text: JSON cannot hold it ({exc})")
    try:
        return json.dumps({k: str(v) for k, v in frontmatter.items()}, ensure_ascii=False, sort_keys=True)
    except RecursionError:
        return "{}"


class _FrontmatterVariables:
    """Dendron's variables `{{fm.key}}` (`{{fm.a.b}}` nested) as it shows them: the frontmatter's
    value when it is text or a number, on one line, at most `FM_VARIABLE_MAX` characters; the
    variable as written otherwise. A note's variables add at most `FM_VARIABLES_BUDGET` characters
    in all, after which they stay as written: a line of a thousand `{{fm.big}}` would otherwise
    grow a note by a thousand values."""

    def __init__(self, frontmatter: dict[str, Any]) -> None:
        self._frontmatter = frontmatter
        self._left = FM_VARIABLES_BUDGET

    def value(self, variable: re.Match[str]) -> str:
        value: Any = self._frontmatter
        for part in variable.group(1).split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return variable.group(0)
        text = " ".join(str(value).split())[:FM_VARIABLE_MAX]
        if len(text) > self._left:
            return variable.group(0)
        self._left -= len(text)
        return text


def note_description(frontmatter: dict[str, Any]) -> str:
    """The note's own summary: the first of its `description`, `desc` (Dendron's, on every note,
    often filled where the body says only `{{fm.desc}}`), `summary`, `abstract`, `excerpt` keys
    (any case) that holds text, its whitespace collapsed, at most `DESCRIPTION_MAX` characters;
    "" when none does."""
    if not frontmatter:
        return ""
    keyed = {str(k).lower(): v for k, v in frontmatter.items()}
    for key in _DESCRIPTION_KEYS:
        value = keyed.get(key)
        if isinstance(value, str) and (text := " ".join(value.split())):
            return text[:DESCRIPTION_MAX]
    return ""


def without_opaque_data(line: str) -> str:
    """`line` without its runs of `OPAQUE_RUN` or more base64 characters.

    A run that long holds one of the aligned windows of half its length in full, and a line of
    prose has a space or a character outside ASCII in each (a SciFact note is one 1,500-character
    line; Chinese has no spaces): the regex runs only on lines where some window has neither.
    Searching every long line cost 40 µs a SciFact note, a fifth of parsing."""
    half = OPAQUE_RUN // 2
    windows = (line[i : i + half] for i in range(0, len(line) - half + 1, half))
    if all(" " in window or not window.isascii() for window in windows):
        return line
    return _OPAQUE.sub(_unless_words, line)


def opaque_size(text: str) -> int:
    """Characters (and bytes: base64 is ASCII) of the opaque data runs in `text`."""
    return sum(len(run.group()) for run in _OPAQUE.finditer(text) if _is_data(run.group()))


def _unless_words(run: re.Match[str]) -> str:
    return "" if _is_data(run.group()) else run.group()


def _is_data(run: str) -> bool:
    """True for encoded data; False for a run that reads like a path or a slug (a URL's folders):
    base64 of compressed or binary data is about 40 % capitals, with digits, where words are not."""
    sample = run[:OPAQUE_RUN]
    return sum(c.isupper() for c in sample) >= OPAQUE_RUN // 5 and any(c.isdigit() for c in sample)


# a note names at most this many tags and aliases. The retriever counts a note's tag pairs
# (TagMemo's co-occurrence: 4,000 tags on one note took 6.6 s, 256 take 0.02 s; 100k `#t1 #t2 …`
# would hold its index for about an hour) and embeds each distinct tag; each alias is a name links
# resolve by. No real note comes near: tagged_android has ≤ 5 tags a note, dendron ≤ 11.
MAX_NAMES = 256


def _at_most(names: list[str], what: str, problems: list[str]) -> list[str]:
    if len(names) > MAX_NAMES:
        problems.append(f"{len(names)} {what}: only the first {MAX_NAMES} are kept")
        return names[:MAX_NAMES]
    return names


def without_note_extension(target: str) -> str:
    """A link's target without `.md` / `.markdown` (any case), as links name notes."""
    return _NOTE_EXTENSION.sub("", target)


def _indent(line: str) -> int:
    """The columns of a line's leading blanks, a tab to the next multiple of 4."""
    return len(line[: len(line) - len(line.lstrip(" \t"))].expandtabs(4))


def _heading_text(raw: str) -> str:
    """An ATX heading's text: without its closing sequence, a run of `#` that is the whole text or
    follows a blank (CommonMark), so `## Why C#` is "Why C#" and `## Setup ##` is "Setup"."""
    text = raw.rstrip(" \t")
    bare = text.rstrip("#")
    if bare != text and (not bare or bare[-1] in " \t"):
        text = bare
    return text.strip()


def _page_properties(body: str) -> dict[str, Any]:
    """The `key:: value` lines a Logseq page opens with (the first may be a bullet's: `- key::`).
    `tags`, `alias` and `aliases` hold lists (`a, [[b c]], #d`); keys are lower-cased."""
    found: dict[str, Any] = {}
    if body.find("::", 0, 64) < 0:  # the first line holds one, or the page has none
        return found
    for i, line in enumerate(body.splitlines()):
        match = _PROPERTY.match(line[2:] if i == 0 and line.startswith("- ") else line)
        if not match:
            break
        key, value = match.group(1).lower(), (match.group(2) or "").rstrip(" \t")
        if key in ("tags", "tag", "alias", "aliases"):
            refs = _WIKILINK.findall(value)
            rest = _WIKILINK.sub(",", value)
            items = [r.strip() for r in refs] + [v.strip().lstrip("#").strip() for v in rest.split(",")]
            found.setdefault(key, [v for v in items if v])
        else:
            found.setdefault(key, value)
    return found


def _outside_comments(line: str, inside: bool) -> tuple[str, bool]:
    """`line` with what Obsidian's `%% comments %%` hide blanked, given whether one is open at its
    start; and whether one is open at its end. A comment's words stay searchable (Obsidian's own
    search finds them), but links and tags in it are none: a private remark's `[[Secret Note]]`
    and `#hiddentag` counted in the graph and the tags."""
    out: list[str] = []
    for i, part in enumerate(line.split("%%")):
        if i:
            inside = not inside
            out.append("  ")
        out.append(" " * len(part) if inside else part)
    return "".join(out), inside


def _as_list_keep_spaces(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):  # `aliases: PG tuning, pgtune`, as Obsidian read a string of them
        return [v for v in value.split(",") if v.strip()]
    return _as_list(value)


def _line_property(line: str) -> str:
    """The property a line's links are held by: `key` on a `key:: [[x]]` line (lower-cased), the
    ADR's `superseded_by` / `supersedes` on its status line; "" otherwise."""
    if line.find("::", 0, 64) >= 0 and (match := _LINE_PROPERTY.match(line)):
        return match.group(1).lower()
    if "upersede" in line[:48] and (match := _SUCCESSION_LINE.match(line)):
        return "supersedes" if match.group(1).lower() == "supersedes" else "superseded_by"
    return ""


def _link_texts(value: Any, depth: int = 0) -> list[str]:
    """The strings of a frontmatter value that hold wikilinks: the value, a list's items, and
    a link YAML read as a list, `up: [[Parent]]` unquoted being `[["Parent"]]`."""
    if isinstance(value, str):
        return [value] if "[[" in value else []
    if not isinstance(value, list) or depth > 1:
        return []
    if len(value) == 1 and isinstance(value[0], list) and len(value[0]) == 1 and isinstance(value[0][0], str):
        return [f"[[{value[0][0]}]]"]
    return [text for item in value for text in _link_texts(item, depth + 1)]


def _property_links(frontmatter: dict[str, Any], fm_text: str) -> list[ParsedLink]:
    """The wikilinks in the frontmatter's values (Obsidian's properties: `up: "[[Parent]]"`,
    `related: ["[[A]]", "[[B]]"]`), each held by its key, at the line that opens the key; and
    the links of a MADR `status: "superseded by [ADR-0005](0005-example.md)"`, as `superseded_by`."""
    lines = fm_text.splitlines()
    found: list[ParsedLink] = []
    for key, value in frontmatter.items():
        status = key.lower() == "status" and isinstance(value, str) and _SUPERSEDED_STATUS.match(value)
        texts = [value] if status else _link_texts(value)
        if not texts:
            continue
        opens = (f"{key}:", f'"{key}":', f"'{key}':")
        line_no = next((i + 2 for i, line in enumerate(lines) if line.startswith(opens)), 1)  # after the `---` line
        held_by = "superseded_by" if status else key
        for text in texts:
            found.extend(replace(link, property=held_by) for link in _links_in(text, line_no))
    return found


def _links_in(line: str, line_no: int) -> list[ParsedLink]:
    found: list[ParsedLink] = []
    # the regex's search for its `((` prefix: 0.7 µs on a SciFact abstract, `"((" in line` 1.5 µs
    blocks = _BLOCK_REF.findall(line)
    if "[" not in line and not blocks:
        return found
    for match in _WIKILINK.finditer(line) if "[[" in line else ():
        start = match.start()
        inner = match.group(1).replace("\\|", "|")
        target, _, alias = inner.partition("|")
        if alias.lstrip().startswith("dendron://"):
            target, alias = alias, target
        target, _, heading = _DENDRON_VAULT.sub("", target).partition("#")
        block = ""
        if heading.startswith("^"):
            block, heading = heading[1:], ""
        elif "^" in target:
            target, _, block = target.partition("^")
        target = target.strip().removesuffix(".md")
        if target or heading or block:
            found.append(
                ParsedLink(
                    target,
                    alias.strip(),
                    heading.strip(),
                    block.strip(),
                    line[start - 1 : start] == "!" or _LOGSEQ_EMBED.search(line, 0, start) is not None,
                    False,
                    line_no,
                )
            )
    for block in map(str.lower, blocks):  # Logseq shows the block in its place, as an embed
        found.append(ParsedLink(f"(({block}))", "", "", block, True, False, line_no))
    for match in _MD_LINK.finditer(line) if "](" in line else ():
        dest = unquote(match.group(2) or match.group(4))
        if "://" in dest:
            continue
        heading = unquote(match.group(3) or match.group(5) or "").lstrip("#")
        start = match.start()
        found.append(
            ParsedLink(
                without_note_extension(dest),
                match.group(1).strip(),
                heading,
                "",
                line[start - 1 : start] == "!",
                True,
                line_no,
            )
        )
    return found


__all__ = ["ParsedLink", "ParsedNote", "chunk_sections", "diary_of", "parse_note", "split_frontmatter"]
