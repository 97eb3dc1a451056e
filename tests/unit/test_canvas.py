"""Obsidian's canvases (JSON Canvas): the cards on a board are read as notes."""

from __future__ import annotations

import json

from k0maru_gateway._console import canvas_markdown
from k0maru_scanner._canvas import parse_canvas
from k0maru_scanner._chunker import chunk_sections

BOARD = json.dumps(
    {
        "nodes": [
            {"id": "g1", "type": "group", "x": -100, "y": -100, "width": 800, "height": 600, "label": "Release plan"},
            {
                "id": "a1b2",
                "type": "text",
                "text": "# Canary\n\nThe canary runs two hours before the [[Release train]] moves. #release",
                "x": 0,
                "y": 0,
                "width": 250,
                "height": 60,
            },
            {"id": "c3d4", "type": "file", "file": "notes/Runbook.md", "subpath": "#Rollback", "x": 300, "y": 0},
            {"id": "e5f6", "type": "link", "url": "https://example.com/status", "x": 0, "y": 900},
            {"id": "f7", "type": "text", "text": "Outside any group", "x": 2000, "y": 2000, "width": 9, "height": 9},
        ],
        "edges": [{"id": "x", "fromNode": "a1b2", "toNode": "c3d4"}],
    }
).replace('{"id"', '\n{"id"')  # one node per line, as Obsidian writes a canvas


def test_cards_are_sections_file_cards_are_links_groups_are_headings():
    note = parse_canvas("boards/release.canvas", BOARD)
    assert (note.title, note.diary, note.tags, note.problems) == ("release", "boards", ["release"], [])
    assert [(lk.target, lk.heading, lk.line) for lk in note.links] == [
        ("Release train", "", 3),  # a card's link, on the card's line of the file
        ("notes/Runbook", "Rollback", 4),
    ]
    chunks = chunk_sections(note.sections)
    assert [(c.heading_path, c.start_line) for c in chunks] == [(("Release plan", "Canary"), 3), ((), 6)]
    assert "canary runs two hours" in chunks[0].text and chunks[1].text == "Outside any group"


def test_a_file_that_is_no_canvas_is_indexed_with_a_problem():
    assert parse_canvas("x.canvas", "{not json").problems[0].startswith("canvas is not valid JSON")
    assert parse_canvas("x.canvas", "[1, 2]").problems == ["canvas has no list of nodes"]
    assert parse_canvas("x.canvas", '{"nodes": [1, {"type": "text"}, {"type": "text", "text": 5}]}').sections == []
    assert parse_canvas("x.canvas", "").problems == []  # a new, empty canvas
    hostile = '{"nodes": ' + "[" * 100_000 + "]" * 100_000 + "}"  # deeper than Python's stack
    assert parse_canvas("x.canvas", hostile).problems == ["canvas is nested too deeply to read"]
    assert canvas_markdown(hostile) == hostile


def test_the_console_shows_a_canvas_as_its_cards():
    shown = canvas_markdown(BOARD)
    assert shown.split("\n\n")[0] == "## Release plan"
    assert "[[notes/Runbook.md]]" in shown and "https://example.com/status" in shown
    assert canvas_markdown("{not json") == "{not json"
