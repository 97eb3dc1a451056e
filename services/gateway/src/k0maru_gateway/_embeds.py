"""What a note's `![[...]]` embeds show: the part of the embedded note that Obsidian or Dendron
renders in its place, for `read_note`.

A note made of embeds (Dendron's `![[note#summary,1:#*]]`, Obsidian's `![[note#Heading]]` and
`![[note#^block]]`) says little on its own; an agent reading it would have to find and read each
embedded note, and cut out the part itself. One level: embeds inside an embedded part stay as
written.

The headings are read from the file here, not taken from the note's chunks as indexed: the
chunker merges a heading with no text of its own into the section after it, so the chunks'
heading paths lack the very headings Dendron's ranges often start or end at (`## 0.62` of its
changelog, right above `## 0.61.2`): of the dendron vault's 647 embeds of its own notes, 5 came
out differently when placed by the chunks, 3 of them empty where Dendron shows a range.
"""

from __future__ import annotations

import re

HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n.*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")


def anchor_key(text: str) -> str:
    """A heading, or an anchor naming one, as they are compared: lower case, letters and digits
    only. Dendron writes the heading's GitHub slug (`## How is Dendron different?` is
    `#how-is-dendron-different`, `## 0.52` is `#052`), Obsidian the heading itself."""
    return re.sub(r"[\W_]+", "", text.lower())


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, anchor key) of each heading outside fenced code."""
    out = []
    fenced = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and (m := HEADING.match(line)):
            out.append((i, len(m.group(1)), anchor_key(m.group(2))))
    return out


def embedded_part(markdown: str, heading: str = "", block: str = "") -> str | None:
    """The part of `markdown` that `![[note#heading]]` or `![[note#^block]]` shows; the whole note
    (without its frontmatter) for neither. None when the heading or block is not in the note.

    Dendron's ranges: `#start,1` leaves out the heading line itself; `#start:#end` runs up to the
    heading `end`, `#start:#*` to the end of the note; without a range, the heading's section (up
    to the next heading of its level or higher)."""
    body = FRONTMATTER.sub("", markdown, count=1)
    lines = body.splitlines()
    if block:
        marker = re.compile(rf"(?:^|\s)\^{re.escape(block)}\s*$")
        for i, line in enumerate(lines):
            if marker.search(line):
                start = i
                while start > 0 and lines[start - 1].strip() and not lines[i].lstrip().startswith(("-", "*", "+")):
                    start -= 1  # the paragraph the marker ends (a list item: its line alone)
                return "\n".join([*lines[start:i], marker.sub("", line).rstrip()]).strip()
        return logseq_block(lines, block)
    if not heading:
        return body.strip()
    start_part, _colon, end_part = heading.partition(":")
    start_name, _comma, offset = start_part.partition(",")
    headings = _headings(lines)
    found = next((h for h in headings if h[2] == anchor_key(start_name)), None)
    if found is None:
        return None
    at, level, _key = found
    first = at + 1 if offset.strip() == "1" else at
    end_name = end_part.strip().removeprefix("#")
    if end_name == "*":
        last = len(lines)
    elif end_name:
        last = next((i for i, _l, key in headings if i > at and key == anchor_key(end_name)), len(lines))
    else:
        last = next((i for i, lv, _s in headings if i > at and lv <= level), len(lines))
    return "\n".join(lines[first:last]).strip()


_HIDDEN_PROPERTY = re.compile(r"^[ \t]*(?:id|collapsed)::")
_BULLET = re.compile(r"^([ \t]*)- ")


def _indent(line: str) -> int:
    """A line's indentation in columns (Logseq indents children with tabs, or spaces)."""
    expanded = line.expandtabs(2)
    return len(expanded) - len(expanded.lstrip())


def logseq_block(lines: list[str], uuid: str) -> str | None:
    """The block a Logseq page names `id:: uuid` (what `((uuid))` and `{{embed ((uuid))}}` show):
    its bullet, the lines that continue it and its children, without the hidden properties.
    None when no block of the page has that id."""
    prop = re.compile(rf"^[ \t]*id::[ \t]*{re.escape(uuid)}[ \t]*$", re.IGNORECASE)
    at = next((i for i, line in enumerate(lines) if prop.match(line)), None)
    if at is None:
        return None
    start = next((i for i in range(at - 1, -1, -1) if _BULLET.match(lines[i])), None)
    if start is None:  # the page's first block holds the id: the page itself
        start = 0
    depth = _indent(lines[start])
    end = next(
        (i for i in range(start + 1, len(lines)) if _BULLET.match(lines[i]) and _indent(lines[i]) <= depth),
        len(lines),
    )
    prefix = lines[start][: len(lines[start]) - len(lines[start].lstrip())]  # the block's own indentation
    kept = [line.removeprefix(prefix) for line in lines[start:end] if not _HIDDEN_PROPERTY.match(line)]
    return "\n".join(kept).strip()
