"""Offload, inspect, flush and distill on real logs recorded by tests/fixtures/logs/record.sh."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import threading
from pathlib import Path

import pytest

from k0maru_common import InvalidInput, NotFound, OutsideVault
from k0maru_offload._conventions import sniff
from k0maru_offload._distill import distill
from k0maru_offload._engine import OffloadEngine
from k0maru_offload._flush import FlushEngine, FlushNote
from k0maru_offload._logscan import scan_log
from tests.conftest import write_notes

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"

# fixture → (language, text in the first error, location suffix)
EXPECTED = {
    "rust_e0502": ("rust", "error[E0502]", "src/main.rs:64:5"),
    "rust_panic": ("rust", "index out of bounds", "src/lib.rs:602:67"),
    "python_traceback": ("python", "KeyError: 'token'", "app.py:2"),
    "pytest_failure": ("python", "assert 6 == 7", "test_many.py:7"),
    "gcc_error": ("c/c++", "undeclared", "main.c:121:44"),
    "javac_error": ("java", "incompatible types", "Main.java:3"),
    "java_exception": ("java", "IllegalStateException: queue drained twice", "Main.java:3"),
    "node_typeerror": ("node", "TypeError: Cannot read properties of undefined", "app.js:3:18"),
    "tsc_errors": ("typescript", "TS2322", "a.ts:1:7"),
    "go_deadlock": ("go", "all goroutines are asleep", "main.go:10"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_first_error_and_location_on_real_logs(name: str):
    path = LOGS / f"{name}.log"
    if not path.exists():
        pytest.fail(f"fixture {path.name} missing: run tests/fixtures/logs/record.sh")
    language, error, location = EXPECTED[name]
    findings = scan_log(path.read_text().splitlines())
    assert findings.language == language
    assert error in findings.first_error
    assert findings.location.endswith(location)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_long_logs_shrink_by_97_percent(name: str, vault: Path):
    text = (LOGS / f"{name}.log").read_text()
    result = OffloadEngine(vault, 50, 10**8).offload(text, task_id="t1", command=name, exit_code=1)
    if result.line_count <= 50:
        assert not result.offloaded and result.summary == text
        return
    assert result.offloaded and (vault / result.ref_path).read_text() == "\n".join(text.splitlines()) + "\n"
    assert result.ref_path == f".k0maru/refs/t1_{result.node_id}.log"
    assert EXPECTED[name][2] in result.summary and result.node_id in result.ref_path
    assert result.mermaid.startswith("flowchart LR") and len(result.mermaid.splitlines()) <= 3
    if result.line_count >= 500:
        assert result.summary_tokens <= 0.03 * result.original_tokens


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_logs_never_go_out_of_the_vault_and_killed_writes_leave_nothing(vault: Path, tmp_path: Path):
    """A `.k0maru/refs` symlinked out of the vault (a cloned repo's) took the logs with it; a write
    killed mid-way left its temp file (a 2 MB partial log, a `.k0-flush-` note) for good."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault / ".k0maru").mkdir()
    (vault / ".k0maru" / "refs").symlink_to(outside)
    text = "\n".join(f"line {i}" for i in range(200))
    with pytest.raises(OutsideVault):
        OffloadEngine(vault, 50).offload(text, "t")
    assert not any(outside.iterdir())
    (vault / ".k0maru" / "refs").unlink()
    refs = vault / ".k0maru" / "refs"
    refs.mkdir()
    old, fresh = refs / ".tmp-abc.log", refs / ".tmp-now.log"  # a killed write's, and one being written
    (vault / "notes").mkdir()
    stale_note = vault / "notes" / ".k0-flush-0123.tmp"
    for path in (old, fresh, stale_note):
        path.write_text("partial")
    for path in (old, stale_note):
        os.utime(path, (1_700_000_000, 1_700_000_000))
    assert OffloadEngine(vault, 50).offload(text, "t").offloaded
    assert not old.exists() and fresh.exists()
    FlushEngine(vault).flush(FlushNote("Kept", "x", "notes"))
    assert not stale_note.exists()


def test_offloaded_logs_stay_out_of_a_vault_kept_in_git(vault: Path):
    """Raw build logs (tokens, hosts) were one `git add -A` from a commit in a vault kept in git;
    the team's `.k0maru/rules.md` beside them still is the team's, and a `.gitignore` the user
    wrote is theirs."""
    import subprocess

    def untracked() -> str:
        return subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"], cwd=vault, capture_output=True, text=True
        ).stdout

    subprocess.run(["git", "init", "-q"], cwd=vault, check=True)
    write_notes(vault, {".k0maru/rules.md": "# Rules\n"})
    text = (LOGS / "rust_panic.log").read_text()
    assert OffloadEngine(vault, 50, 10**8).offload(text, task_id="t1").offloaded
    assert untracked() == "?? .k0maru/rules.md\n"
    (vault / ".k0maru/refs/.gitignore").write_text("*.json\n")  # the user's own, kept
    assert OffloadEngine(vault, 50, 10**8).offload(text + "one more line\n", task_id="t2").offloaded
    assert (vault / ".k0maru/refs/.gitignore").read_text() == "*.json\n"


def test_under_threshold_passes_through(vault: Path):
    engine = OffloadEngine(vault, 50, 10**8)
    text = "\n".join(f"line {i}" for i in range(50))
    result = engine.offload(text)
    assert not result.offloaded and result.summary == text
    assert not (vault / ".k0maru").exists()


def test_inspect_slices_grep_and_first_error(vault: Path):
    engine = OffloadEngine(vault, 50, 10**8)
    node = engine.offload((LOGS / "python_traceback.log").read_text()).node_id
    lines, total = engine.inspect(node, 10, 12)
    assert [n for n, _ in lines] == [10, 11, 12] and total > 600
    grep, _ = engine.inspect(node, grep=r"KeyError", context=1)
    assert any("KeyError" in t for _, t in grep) and len(grep) == 2  # the last line: one line of context before it
    around, _ = engine.inspect(node, around_first_error=True, context=2)
    assert any("Traceback" in t for _, t in around)
    with pytest.raises(InvalidInput):
        engine.inspect(node, grep="(unclosed")


@pytest.mark.parametrize(
    "bad", ["../../etc/passwd", "node_../../x", "/etc/passwd", "node_123", "NODE_0123456789abcdef"]
)
def test_node_ids_are_validated(vault: Path, bad: str):
    with pytest.raises(InvalidInput):
        OffloadEngine(vault, 50, 10**8).inspect(bad)


def test_unknown_node_is_not_found(vault: Path):
    with pytest.raises(NotFound):
        OffloadEngine(vault, 50, 10**8).inspect("node_0123456789abcdef")


@pytest.mark.parametrize("task", ["../x", "a/b", "x" * 65, "semi;colon"])
def test_task_ids_are_validated(vault: Path, task: str):
    with pytest.raises(InvalidInput):
        OffloadEngine(vault, 50, 10**8).offload("x\n" * 60, task_id=task)


def test_flush_outcomes_and_conventions(vault: Path):
    (vault / "AGENTS.md").write_text("- decisions: docs/adr\n- logs: journal\n")
    (vault / "journal").mkdir()
    (vault / "journal" / "2026-01-01-old.md").write_text("x")
    engine = FlushEngine(vault)
    note = FlushNote("Use WAL mode", "We chose WAL.", "decision", ("sqlite",), ("SQLite busy",))
    path, outcome = engine.flush(note)
    assert outcome == "created" and path.startswith("docs/adr/") and path.endswith("-use-wal-mode.md")
    text = (vault / path).read_text()
    assert text.startswith("---\ntitle: Use WAL mode\n") and "- [[SQLite busy]]" in text and "tags:\n- sqlite" in text
    assert engine.flush(note) == (path, "up_to_date")
    other, outcome = engine.flush(FlushNote("Use WAL mode", "Different body.", "decision"))
    assert outcome == "versioned" and other.endswith("-use-wal-mode-v2.md")
    log_path, _ = engine.flush(FlushNote("Session", "did things"))
    assert log_path.startswith("journal/")


def test_a_flushed_body_keeps_its_first_lines_indentation_and_its_last_lines_spaces(vault: Path):
    """Only the blank lines around what an agent wrote go: `strip()` took the indentation of an
    indented code block that opened it (command output became a paragraph) and the hard break
    that ended it."""
    body = "    $ kubectl -n orbit get pods\n    api-7d9 1/1 Running\n\nThat was the state before.  "
    path, outcome = FlushEngine(vault).flush(FlushNote("Pod state", f"\n  \n{body}\n\n \n", "notes"))
    assert outcome == "created"
    assert (vault / path).read_text().endswith(f"\n\n{body}\n")
    crlf = "\r\n  indented\r\nlast  \r\n\r\n"
    path, _ = FlushEngine(vault).flush(FlushNote("Windows paste", crlf, "notes"))
    assert (vault / path).read_bytes().decode().endswith("\n\n  indented\r\nlast  \n")


def test_two_titles_without_words_are_two_notes_not_a_version(vault: Path):
    """Both were `note.md`: the second, another note, was written as its `-v2` and said "versioned"."""
    engine = FlushEngine(vault)
    first, said = engine.flush(FlushNote("!!!???...", "one thing", "notes"))
    second, also = engine.flush(FlushNote("🚀🚀", "another thing", "notes"))
    assert (said, also) == ("created", "created") and first != second
    assert "note-" in first and "note-" in second  # `note-` and 8 hex digits of the title
    assert engine.flush(FlushNote("!!!???...", "one thing, revised", "notes"))[1] == "versioned"


def test_a_decision_of_a_title_a_numbered_record_has_is_said_to_be_another_version(vault: Path):
    """In an adr-tools folder the next number made the name free, and a changed decision of the
    same title was said "created": two records of one name, and the agent not told."""
    adr = "# {n}. Cache rule\n\nDate: 2026-01-01\n\n## Status\n\nAccepted\n\n## Decision\n\n{body}\n"
    (vault / "docs" / "adr").mkdir(parents=True)
    (vault / "docs/adr/0001-record-architecture-decisions.md").write_text(adr.format(n=1, body="x"))
    (vault / "docs/adr/0002-cache-rule.md").write_text(adr.format(n=2, body="Invalidate on write."))
    engine = FlushEngine(vault)
    path, outcome = engine.flush(FlushNote("Cache rule", "Invalidate on read.", "decision"))
    assert (path, outcome) == ("docs/adr/0003-cache-rule.md", "versioned")
    path, outcome = engine.flush(FlushNote("Queue rule", "Retry thrice.", "decision"))
    assert (path, outcome) == ("docs/adr/0004-queue-rule.md", "created")


def test_twenty_concurrent_flushes_lose_nothing(vault: Path):
    engine = FlushEngine(vault)
    results: list[tuple[str, str]] = []
    lock = threading.Lock()

    def flush(i: int, same: bool) -> None:
        r = engine.flush(FlushNote("Race", "same body" if same else f"body {i}"))
        with lock:
            results.append(r)

    threads = [threading.Thread(target=flush, args=(i, False)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    paths = {p for p, _ in results}
    assert len(paths) == 20
    bodies = {(vault / p).read_text().split("\n\n", 2)[-1] for p in paths}
    assert bodies == {f"body {i}\n" for i in range(20)}
    results.clear()
    threads = [threading.Thread(target=flush, args=(i, True)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({p for p, _ in results}) == 1


@pytest.mark.parametrize("title,category", [("../../escape", ""), ("ok", "../outside"), ("ok", "/abs")])
def test_flush_refuses_escaping_names(vault: Path, title: str, category: str):
    with pytest.raises(OutsideVault):
        FlushEngine(vault).flush(FlushNote(title, "x", category))
    assert not any(vault.parent.glob("*.md"))


def test_content_the_index_could_not_hold_is_refused_before_it_is_written(vault: Path):
    """970,000 Chinese characters were written (2.9 MB, under the 1,000,000-character limit), and
    the scanner never indexed the note (2 MB at most): the agent waited for a search that never came."""
    from k0maru_common import TooLarge

    with pytest.raises(TooLarge, match="larger than 1,000,000 bytes"):
        FlushEngine(vault).flush(FlushNote("Big", "数据" * 200_000, "notes"))
    assert not (vault / "notes").exists() or not any((vault / "notes").iterdir())
    _path, outcome = FlushEngine(vault).flush(FlushNote("Fits", "数据" * 150_000, "notes"))  # 900 KB
    assert outcome == "created"


@pytest.mark.parametrize("title,category", [("a\x00b", ""), ("ok", "notes\x00")])
def test_a_nul_in_a_name_is_said_to_be_one(vault: Path, title: str, category: str):
    with pytest.raises(InvalidInput, match="contains a NUL character"):  # it said "would leave the vault"
        FlushEngine(vault).flush(FlushNote(title, "x", category))


def test_conventions_detect_johnny_decimal_and_dated_names(vault: Path):
    for folder in ("00_Inbox", "10_Projects", "20_Cards"):
        (vault / folder).mkdir()
    (vault / "decisions").mkdir()
    for name in ("2026-01-01-a.md", "2026-01-02-b.md"):
        (vault / "decisions" / name).write_text("x")
    conv = sniff(vault)
    assert conv.folder_scheme == "johnny-decimal"
    assert conv.folders["decision"] == "decisions"
    assert conv.naming_style == "date-slug"


def test_a_decision_flushed_into_a_decision_record_folder_is_the_next_record(vault: Path):
    """adr-tools' layout: the decision was written under `## Status` (the folder's first section),
    `## Decision` said "_Not recorded in this session._", and the note was named without the next
    number. Now it is `0004-…`, titled "# 4. …" with its "Date:" line as the folder's records are,
    its status "Accepted", its content under `Decision`, the sections in the folder's order."""
    adr = "# {n}. {title}\n\nDate: 2026-0{n}-01\n\n## Status\n\nAccepted\n\n## Context\n\nc\n\n## Decision\n\nd\n\n## Consequences\n\nq\n"
    for n, title in ((1, "Record architecture decisions"), (2, "Use Postgres"), (3, "Use Redis")):
        write_notes(vault, {f"docs/adr/{n:04d}-{title.lower().replace(' ', '-')}.md": adr.format(n=n, title=title)})
    engine = FlushEngine(vault)
    decision = FlushNote(title="Use gRPC between services", content="We call services over gRPC.", category="decision")
    path, outcome = engine.flush(decision, dt.date(2026, 8, 5))
    assert (path, outcome) == ("docs/adr/0004-use-grpc-between-services.md", "created")
    text = (vault / path).read_text()
    assert text.startswith("# 4. Use gRPC between services\n\nDate: 2026-08-05\n\n## Status")
    assert (
        "## Status\n\nAccepted\n\n## Context\n\n_Not recorded in this session._\n\n## Decision\n\nWe call services over gRPC."
        in text
    )
    assert text.index("## Decision") < text.index("## Consequences")
    # the same decision again, another day: found by its words, whatever its number and date line
    assert engine.flush(decision, dt.date(2026, 8, 6)) == (path, "up_to_date")
    assert sniff(vault).rules_for("decision", "docs/adr").naming.describe() == "NNNN-example-note"
    assert sniff(vault).rules_for("skill", "skills").naming.prefix == ""  # a new folder numbers nothing


def test_decisions_flushed_at_once_each_get_their_own_number(vault: Path):
    """Two agents' decisions at the same moment both took 0010, one headed "# 9."."""
    import threading

    adr = "# {n}. D{n}\n\nDate: 2026-01-01\n\n## Status\n\nAccepted\n\n## Decision\n\nd\n"
    for n in (1, 2):
        write_notes(vault, {f"docs/adr/{n:04d}-d{n}.md": adr.format(n=n)})
    engine = FlushEngine(vault)
    paths: list[str] = []
    threads = [
        threading.Thread(target=lambda i=i: paths.append(engine.flush(FlushNote(f"Race {i}", "x", "decision"))[0]))
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    numbers = sorted(int(Path(p).name[:4]) for p in paths)
    assert numbers == list(range(3, 11))
    for p in paths:  # each heading says its file's number
        assert (vault / p).read_text().startswith(f"# {int(Path(p).name[:4])}. Race ")


def test_notes_are_written_where_the_file_system_has_no_hard_links(vault: Path, monkeypatch: pytest.MonkeyPatch):
    """exFAT and FAT drives, some SMB and FUSE mounts refuse link(2): every flush failed with
    "Operation not permitted". The name is claimed with O_EXCL and the text renamed over it."""
    import errno

    def no_links(_src: object, _dst: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    write_notes(vault, {"notes/Human.md": "# Human\n\nmine\n"})
    engine = FlushEngine(vault)
    first = engine.flush(FlushNote("Human", "the agent's", "notes"))
    assert first == ("notes/Human-v2.md", "versioned") and "the agent's" in (vault / first[0]).read_text()
    assert (vault / "notes/Human.md").read_text() == "# Human\n\nmine\n"  # the human's note untouched
    assert engine.flush(FlushNote("Human", "the agent's", "notes")) == (first[0], "up_to_date")
    assert not [n for n in os.listdir(vault / "notes") if n.startswith(".k0-flush-")]


def test_rules_lines_that_name_no_folder_send_no_note_anywhere(vault: Path):
    """`Wiki: https://…` made a folder `https:/wiki.example.com/team/`, `Logs: stdout` a folder
    `stdout/`, and `Decisions: docs/DECISIONS.md` (a file) failed every decision with "File exists"."""
    write_notes(
        vault,
        {
            "AGENTS.md": (
                "# Agents\n\n- Wiki: https://wiki.example.com/team\n- Logs: stdout\n"
                "- Decisions: docs/DECISIONS.md\n- Skills: playbooks/\n- Concepts: docs/concepts\n"
            ),
            "docs/DECISIONS.md": "# Decisions\n",
        },
    )
    conv = sniff(vault)
    assert conv.folders.get("skill") == "playbooks" and conv.folders.get("concept") == "docs/concepts"
    assert all(f not in ("https://wiki.example.com/team", "stdout", "docs/DECISIONS.md") for f in conv.folders.values())
    path, outcome = FlushEngine(vault).flush(FlushNote("Use WAL", "We use WAL.", "decision"))
    assert outcome == "created" and not path.startswith(("https", "stdout", "docs/DECISIONS.md"))
    assert not (vault / "https:").exists() and not (vault / "stdout").exists()


def test_conventions_read_past_frontmatter_values_yaml_cannot_build(vault: Path):
    """`date: 2026-02-30` raised out of the sniffer (loadout and flush_session failed); such a note
    is one whose keys are unknown, and the folder's other notes still teach its frontmatter."""
    (vault / "decisions").mkdir()
    for i, day in enumerate(("2026-02-30", "2026-03-01", "2026-03-02")):
        (vault / "decisions" / f"{day}-d{i}.md").write_text(f"---\ndate: {day}\nstatus: done\n---\n# D{i}\n")
    conv = sniff(vault)
    assert conv.folders["decision"] == "decisions"
    assert "decision → decisions/: 2026-08-01-example-note.md; keys date, status" in conv.describe()
    # where skill cards would go, which this vault has not got: the loadout says so, not that it has one
    assert "skill → skills/ (a new folder): 2026-08-01-example-note.md" in conv.describe()
    path, outcome = FlushEngine(vault).flush(FlushNote("Pick a queue", "We chose Redis streams.", "decision"))
    assert outcome == "created" and (vault / path).read_text().startswith("---\ndate: ")


def test_distill_writes_one_frontmatter_skill_card(vault: Path):
    trace = (
        "$ cargo build\n"
        + (LOGS / "rust_e0502.log").read_text()
        + "\n$ sed -i 's/&v\\[0\\]/v[0]/' src/main.rs\n$ cargo test\n"
    )
    card = distill(trace)
    assert "E0502" in card.title and "src/main.rs:64:5" in card.markdown
    assert "sed -i" in card.markdown.split("## Fix", 1)[1] and "cargo test" in card.markdown.split("## Verify", 1)[1]
    path, outcome = FlushEngine(vault).flush(FlushNote(card.title, card.markdown, "skill", card.tags))
    text = (vault / path).read_text()
    assert path.startswith("skills/") and outcome == "created" and text.count("\n---\n") == 1


def test_pytest_marks_no_command_of_a_skill_card():
    """pytest marks the failing source line with `>` (`>       assert total == 7`): read as a
    shell prompt, it was the card's "How it was located" command, fenced as bash."""
    card = distill("$ pytest -x tests\n" + (LOGS / "pytest_failure.log").read_text())
    located = card.markdown.split("## How it was located", 1)[1].split("```text", 1)[0]
    assert "pytest -x tests" in located and "assert total == 7" not in located


def test_skill_export_in_hermes_format(tmp_path: Path):
    import yaml

    from k0maru_offload._distill import export_hermes

    card = distill((LOGS / "python_traceback.log").read_text())
    path = export_hermes(card, tmp_path / "skills", "fix-keyerror-token")
    text = path.read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["name"] == "fix-keyerror-token" and meta["description"] == card.title
    assert meta["parameters"] == {"type": "object", "properties": {}} and "type/skill" in meta["tags"]
    assert "KeyError" in text.split("---\n", 2)[2]


_EVIL_GREP = """
import sys, threading
from pathlib import Path
from k0maru_common import InvalidInput
from k0maru_offload._engine import OffloadEngine
engine = OffloadEngine(Path(sys.argv[1]), 50, 10**8)
node = engine.offload("\\n".join(["a" * 3000 + "!"] * 60)).node_id
outcome = []
def evil():
    try:
        engine.inspect(node, grep="(a+)+$")
    except InvalidInput as exc:
        outcome.append(str(exc))
worker = threading.Thread(target=evil, daemon=True)
worker.start()
lines, total = engine.inspect(node, 1, 2)  # served while the evil grep runs
print("other call:", total, len(lines), flush=True)
worker.join()
print("grep:", outcome)
"""


def test_catastrophic_grep_stops_with_invalid_argument_and_other_calls_go_on(vault: Path):
    import subprocess
    import sys

    # In a child process: a grep that never returns holds the GIL and cannot be interrupted
    # from inside; the bound here (far above the 2 s budget) turns that into a failure.
    try:
        out = subprocess.run(
            [sys.executable, "-c", _EVIL_GREP, str(vault)], capture_output=True, text=True, timeout=120
        ).stdout
    except subprocess.TimeoutExpired:
        pytest.fail("grep with catastrophic backtracking never stopped")
    assert "other call: 60 2" in out
    assert "simpler pattern" in out.split("grep:", 1)[1]


@pytest.mark.parametrize("field", ["start_line", "end_line", "context"])
def test_line_numbers_beyond_32_bits_are_invalid_argument(vault: Path, field: str):
    engine = OffloadEngine(vault, 50, 10**8)
    node = engine.offload("x\n" * 60).node_id
    args = {"start": 0, "end": 0, "context": 0}
    args[{"start_line": "start", "end_line": "end", "context": "context"}[field]] = 2**32 + 1
    with pytest.raises(InvalidInput, match=field):
        engine.inspect(node, args["start"], args["end"], context=args["context"])


@pytest.mark.parametrize(
    "note",
    [
        FlushNote("Title", "body with a NUL \x00 inside"),
        FlushNote("Title", "body", tags=("ok", "b\x00d")),
        FlushNote("Title", "body", related=("x\x00y",)),
    ],
)
def test_notes_with_nul_characters_are_invalid_argument(vault: Path, note: FlushNote):
    with pytest.raises(InvalidInput, match="NUL"):
        FlushEngine(vault).flush(note)
    assert not list(vault.rglob("*.md"))


def test_a_2000_level_category_is_invalid_argument(vault: Path):
    with pytest.raises(InvalidInput, match="category"):
        FlushEngine(vault).flush(FlushNote("Deep", "body", "/".join(["a"] * 2000)))
    assert not list(vault.rglob("*.md"))


def test_notes_follow_the_umask(vault: Path):
    import os

    old = os.umask(0o022)
    try:
        path, _ = FlushEngine(vault).flush(FlushNote("Readable", "body"))
    finally:
        os.umask(old)
    assert (vault / path).stat().st_mode & 0o777 == 0o644
    assert not [p for p in vault.rglob(".k0-flush-*")]  # no temp file left behind


def test_hermes_export_never_overwrites(tmp_path: Path):
    from k0maru_offload._distill import export_hermes

    skills = tmp_path / "skills"
    skills.mkdir()
    (skills / "fix-keyerror.md").write_text("someone else's card\n")
    card = distill((LOGS / "python_traceback.log").read_text())
    first = export_hermes(card, skills, "fix-keyerror")
    assert first.name == "fix-keyerror-v2.md" and (skills / "fix-keyerror.md").read_text() == "someone else's card\n"
    assert export_hermes(card, skills, "fix-keyerror") == first  # the same card again: left as it is
    assert sorted(p.name for p in skills.iterdir()) == ["fix-keyerror-v2.md", "fix-keyerror.md"]


def test_a_task_id_in_any_script_names_the_log_and_a_path_in_it_is_refused(vault: Path):
    """A Chinese task id (`支付构建`: letters) refused the whole log, which the agent then held in its
    context; a task id is a file name, so a separator or `..` is still refused."""
    from k0maru_common import InvalidInput

    text = "".join(f"line {i}\n" for i in range(80))
    result = OffloadEngine(vault, 50, 10**8).offload(text, task_id="支付构建")
    assert result.offloaded and (vault / result.ref_path).name.startswith("支付构建_node_")
    for bad in ("../escape", "a/b", "x" * 65, "with space"):
        with pytest.raises(InvalidInput, match="task_id"):
            OffloadEngine(vault, 50, 10**8).offload(text, task_id=bad)
