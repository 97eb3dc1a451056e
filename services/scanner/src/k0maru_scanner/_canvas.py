"""Obsidian's canvases (`.canvas`, JSON Canvas 1.0): the cards people write on a board are notes.

A canvas holds nodes: `text` cards (Markdown), `file` cards (a vault file, a link), `link` cards
(a URL) and `group`s (a label around other nodes). Each text card is read as Markdown by
`parse_note` (its tags, links, headings), at the line of the canvas file that holds the card
(Obsidian writes one node per line); a file card is a link to that file; a
group's label is the heading of the cards inside it. The title is the file name. A file that is
not a canvas (invalid JSON, no `nodes` list) is indexed with a problem saying so, and no text.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from ._chunker import Section
from ._markdown import ParsedLink, ParsedNote, diary_of, parse_note, without_note_extension


def parse_canvas(path: str, text: str) -> ParsedNote:
    title = PurePosixPath(path).stem
    note = ParsedNote(path, title, diary_of(path), {}, [], [], [], [])
    try:
        canvas = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        note.problems.append(f"canvas is not valid JSON: {exc}")
        return note
    except RecursionError:  # `[[[[…` deeper than Python's stack: a hostile file, not a board
        note.problems.append("canvas is nested too deeply to read")
        return note
    nodes = canvas.get("nodes") if isinstance(canvas, dict) else None
    if not isinstance(nodes, list):
        if text.strip():
            note.problems.append("canvas has no list of nodes")
        return note
    lines = _node_lines(text)
    groups = [n for n in nodes if isinstance(n, dict) and n.get("type") == "group" and isinstance(n.get("label"), str)]
    tags: dict[str, None] = {}
    for node in nodes:
        if not isinstance(node, dict):
            continue
        line = lines.get(str(node.get("id")), 1)
        if node.get("type") == "file" and isinstance(node.get("file"), str) and node["file"].strip():
            heading = str(node.get("subpath") or "").lstrip("#")
            note.links.append(
                ParsedLink(without_note_extension(node["file"].strip()), "", heading, "", False, False, line)
            )
        elif node.get("type") == "text" and isinstance(node.get("text"), str) and node["text"].strip():
            card = parse_note(path, node["text"])
            group = [g["label"] for g in groups if _inside(node, g)][:1]
            for section in card.sections:  # all of a card is on its line of the file
                note.sections.append(Section([*group, *section.heading_path], line, section.lines))
            note.links.extend(replace(link, line=line) for link in card.links)
            tags.update(dict.fromkeys(card.tags))
    note.tags = list(tags)
    return note


_ID = re.compile(r'"id"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _node_lines(text: str) -> dict[str, int]:
    """Each node id → the 1-based line of the file where it first appears (nodes come before
    edges, and Obsidian writes one node per line)."""
    found: dict[str, int] = {}
    for i, line in enumerate(text.splitlines(), start=1):
        for match in _ID.finditer(line) if '"id"' in line else ():
            with contextlib.suppress(ValueError):  # not a JSON string after all: that node gets line 1
                found.setdefault(json.loads(f'"{match.group(1)}"'), i)
    return found


def _inside(node: dict[str, Any], group: dict[str, Any]) -> bool:
    """Whether the node's box lies within the group's (how Obsidian groups cards)."""
    try:
        x, y, w, h = (float(node[k]) for k in ("x", "y", "width", "height"))
        gx, gy, gw, gh = (float(group[k]) for k in ("x", "y", "width", "height"))
    except (KeyError, TypeError, ValueError):
        return False
    return gx <= x and gy <= y and x + w <= gx + gw and y + h <= gy + gh
