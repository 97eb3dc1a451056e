"""Distill from any trace: plain transcripts with Fix:/Solution: lines, commands, stack traces."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from k0maru_offload._distill import code_span, distill
from k0maru_offload._flush import FlushEngine, FlushNote

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "corpus"


def section(card: str, name: str) -> str:
    return card.split(f"## {name}\n\n", 1)[1].split("\n## ", 1)[0]


def test_plain_text_trace_with_a_fix_line():
    trace = (
        "$ pytest tests/test_db.py\n"
        "sqlite3.OperationalError: database is locked\n"
        "Fix: enable WAL mode and set busy_timeout=5000 in db.connect()\n"
        "$ pytest tests/test_db.py\n"
        "1 passed in 0.12s\n"
    )
    card = distill(trace)
    assert card.title == "Fix: sqlite3.OperationalError: database is locked"
    assert card.language == "python" and "lang/python" in card.tags
    assert "enable WAL mode and set busy_timeout=5000" in section(card.markdown, "Fix")
    assert "pytest tests/test_db.py" in section(card.markdown, "Verify")
    assert "none recorded" not in card.markdown


def test_solution_and_cause_lines_and_a_java_stack_trace():
    trace = (
        "> mvn -q test\n"
        + (CORPUS / "maven_surefire_error.log").read_text()
        + "\nRoot cause: the window length can be 0 when the config is missing\n"
        + "Solution:\n  - treat a 0-second window as 'no limit'\n  - add a test for it\n"
        + "> mvn -q test\n"
    )
    card = distill(trace)
    assert card.language == "java" and "ArithmeticException" in card.title
    assert "RateLimiter.java:31" in section(card.markdown, "Failure signature")
    assert "window length can be 0" in section(card.markdown, "Root cause")
    fix = section(card.markdown, "Fix")
    assert "treat a 0-second window as 'no limit'" in fix and "add a test for it" in fix
    assert "mvn -q test" in section(card.markdown, "Verify")


@pytest.mark.parametrize(
    "trace,language",
    [
        ("$ go test ./...\n--- FAIL: TestSplit (0.00s)\nFix: round up\n", "go"),
        ("% cargo build\nsomething broke in src/lib.rs\nFix: pin the crate\n", "rust"),
        (
            "```sh\nnpm run build\n```\nbuild broke in src/app.ts, src/api.ts and src/db.ts\nFix: bump typescript\n",
            "typescript",
        ),
        ("PS> cmake --build build\nlink step broke for src/main.cpp\nSolution: link against pthread\n", "c/c++"),
    ],
)
def test_language_is_detected_from_the_trace(trace: str, language: str):
    assert distill(trace).language == language


def test_backticks_inside_code_survive():
    line = "error: expected `;`, found ``let`` in ```macro```"
    span = code_span(line)
    fence = re.match(r"`+", span)
    assert fence is not None and len(fence.group(0)) == 4  # longer than the longest run inside
    assert span == f"```` {line} ````"  # padded: the text ends with a backtick
    trace = f"$ cargo build\n{line}\n  --> src/main.rs:3:5\nFix: add the `;` after `let x = 1`\n"
    card = distill(trace)
    assert line in card.markdown and "`;`" in section(card.markdown, "Fix")
    body = section(card.markdown, "Failure signature")
    # the span opens and closes with the same 4-backtick run and nothing outside it is code
    assert body.count("````") == 2


def test_a_distilled_card_flushes_into_the_skills_folder_once(vault: Path):
    card = distill("$ pytest\nKeyError: 'token'\nFix: export API_TOKEN in .env\n$ pytest\n")
    engine = FlushEngine(vault)
    path, outcome = engine.flush(FlushNote(card.title, card.markdown, "skill", card.tags))
    assert path.startswith("skills/") and outcome == "created"
    assert engine.flush(FlushNote(card.title, card.markdown, "skill", card.tags)) == (path, "up_to_date")
