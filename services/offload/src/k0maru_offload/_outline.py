"""Markdown as Logseq writes a page: an outline of blocks.

Logseq keeps every page as blocks (`- text`), a child block one tab deeper than its parent, a
block's further lines indented two spaces past its `- `. A page written as plain paragraphs is
shown as one block until someone edits it. So a note for a Logseq graph is written as Logseq
would have written it:

- a heading is a block (`- ## Context`), and what follows it, down to the next heading of its
  level or above, its children;
- a paragraph is a block, its lines kept (the further ones indented);
- a list item is a block, nested as deep as the list is (two spaces or a tab per level), `- `,
  `* ` and `+ ` dropped (Logseq's own bullet), a number kept (`- 1. Step`);
- a fenced code block is one block, blank lines and all, its fence on the bullet's line;
- the page's `# title` line is left out: Logseq shows the page's name (and `title::`) as its title.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADING = re.compile(r"^(#{1,6})[ \t]+\S")
_ITEM = re.compile(r"^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")


@dataclass
class _Block:
    depth: int
    lines: list[str] = field(default_factory=list)
    kind: str = "text"  # text | item | code | heading


def _item_level(indent: str) -> int:
    return len(indent.expandtabs(2)) // 2


def logseq_outline(markdown: str, title: str = "") -> str:
    """`markdown` (a note's body) as a Logseq outline; a first `# title` line equal to `title`
    is left out."""
    lines = markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # Logseq writes LF
    if title and lines and lines[0].strip() == f"# {title.strip()}":
        lines = lines[1:]
    blocks: list[_Block] = []
    levels: list[int] = []  # the heading levels open above the current line
    current: _Block | None = None
    fence = ""
    for line in lines:
        if fence:  # inside a code block: everything is its text, up to the closing fence
            assert current is not None
            current.lines.append(line)
            closing = _FENCE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence, current = "", None
            continue
        if not line.strip():
            if current is not None and current.kind != "item":  # an item takes its indented lines after a blank
                current = None
            continue
        if opened := _FENCE.match(line):
            within = current is not None and current.kind == "item" and line[:1] in " \t"
            depth = current.depth + 1 if within and current is not None else len(levels)
            current = _Block(depth, [line.strip()], "code")
            blocks.append(current)
            fence = opened.group(1)
        elif heading := _HEADING.match(line):
            level = len(heading.group(1))
            while levels and levels[-1] >= level:
                levels.pop()
            blocks.append(_Block(len(levels), [line.strip()], "heading"))
            levels.append(level)
            current = None
        elif item := _ITEM.match(line):
            indent, marker, text = item.groups()
            text = text if marker in "-*+" else f"{marker} {text}"
            nested = _item_level(indent)  # one level below the item before at most
            last = blocks[-1] if blocks and blocks[-1].kind == "item" else None
            nested = min(nested, last.depth - len(levels) + 1) if last is not None else 0
            current = _Block(len(levels) + nested, [text], "item")
            blocks.append(current)
        elif current is not None and (current.kind == "text" or line[:1] in " \t"):
            current.lines.append(line.strip())  # the paragraph's next line, or the item's
        else:
            current = _Block(len(levels), [line.strip()])
            blocks.append(current)
    out: list[str] = []
    for block in blocks:
        tabs = "\t" * block.depth
        first, *rest = block.lines
        out.append(f"{tabs}- {first}")
        if block.kind == "code":  # the code's own indentation kept, under the bullet
            base = min((len(ln) - len(ln.lstrip()) for ln in rest if ln.strip()), default=0)
            out.extend(f"{tabs}  {ln[base:]}" if ln.strip() else f"{tabs}  " for ln in rest)
        else:
            out.extend(f"{tabs}  {ln}" for ln in rest)
    return "\n".join(out)
