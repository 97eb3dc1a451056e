"""flush_session and the convention sniffer on vaults that write notes in different ways."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import shutil
from pathlib import Path

import pytest
import yaml

from k0maru_common import InvalidInput
from k0maru_offload._conventions import sniff
from k0maru_offload._flush import FlushEngine, FlushNote
from k0maru_scanner._markdown import parse_note
from tests.conftest import git, git_commit, write_notes

DAY = dt.date(2026, 8, 5)


def front(text: str) -> dict[str, object]:
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("---\n")[1])
    assert isinstance(meta, dict)
    return meta


def test_dated_decisions_with_sections_from_agents_md(vault: Path):
    write_notes(
        vault,
        {
            "AGENTS.md": "# Agents\n\n- Decision records use the sections Context, Decision and Consequences.\n",
            "decisions/2026-08-01-use-wal.md": "---\ntitle: Use WAL\ndate: 2026-08-01\ntags: [db]\n---\n# Use WAL\n",
            "decisions/2026-08-03-drop-redis.md": "---\ntitle: Drop Redis\ndate: 2026-08-03\ntags: []\n---\n# Drop Redis\n",
            "notes/misc.md": "# misc\n",
        },
    )
    engine = FlushEngine(vault)
    note = FlushNote("Export lock contention fix", "We serialise exports behind one lock.", "decision", ("export",))
    path, outcome = engine.flush(note, DAY)
    assert (path, outcome) == ("decisions/2026-08-05-export-lock-contention-fix.md", "created")
    text = (vault / path).read_text()
    assert list(front(text)) == ["title", "date", "tags"]
    body = text.split("---\n", 2)[2]
    assert (  # a decision's content is its Decision (it was under the first section, Context)
        body.index("## Context\n\n_Not recorded")
        < body.index("## Decision\n\nWe serialise exports")
        < body.index("## Consequences")
    )
    # the same content on another day is the same note, not a new one
    assert engine.flush(note, DAY + dt.timedelta(days=1)) == (path, "up_to_date")
    assert len(list((vault / "decisions").glob("*.md"))) == 3


def test_space_separated_title_case_names(vault: Path):
    write_notes(
        vault,
        {
            "Export Lock.md": "# Export Lock\n",
            "Release Checklist.md": "# Release Checklist\n",
            "Meeting With Design.md": "# x\n",
        },
    )
    conv = sniff(vault)
    assert conv.naming_style == "title-space"
    path, _ = FlushEngine(vault).flush(FlushNote("export lock contention fix", "body"), DAY)
    assert path == "Export Lock Contention Fix.md"


def test_para_vault_and_unknown_category_goes_to_the_root(vault: Path):
    for folder in ("1 Projects", "2 Areas", "3 Resources", "4 Archive"):
        (vault / folder).mkdir()
    write_notes(vault, {"1 Projects/alpha-launch.md": "# a\n", "1 Projects/beta-pricing.md": "# b\n"})
    conv = sniff(vault)
    assert conv.folder_scheme == "para"
    engine = FlushEngine(vault)
    path, _ = engine.flush(FlushNote("Gamma rollout", "plan", "projects"), DAY)
    assert path == "1 Projects/gamma-rollout.md"  # the folder's own naming: no date
    path, _ = engine.flush(FlushNote("Sourdough", "flour, water", "recipes"), DAY)
    assert "/" not in path and not (vault / "recipes").exists()  # B.7: unknown → generic → the root


def test_johnny_decimal_ids_continue(vault: Path):
    write_notes(
        vault,
        {
            "00-09 System/01 Inbox/01.01 Read Me.md": "# r\n",
            "10-19 Engineering/11 Decisions/11.01 Use WAL.md": "# Use WAL\n",
            "10-19 Engineering/11 Decisions/11.02 Drop Redis.md": "# Drop Redis\n",
        },
    )
    conv = sniff(vault)
    assert conv.folder_scheme == "johnny-decimal" and conv.folders["decision"] == "10-19 Engineering/11 Decisions"
    engine = FlushEngine(vault)
    note = FlushNote("Export lock contention fix", "We serialise exports.", "decision")
    path, _ = engine.flush(note, DAY)
    assert path == "10-19 Engineering/11 Decisions/11.03 Export Lock Contention Fix.md"
    assert engine.flush(note, DAY + dt.timedelta(days=3)) == (path, "up_to_date")


def test_folder_frontmatter_keys_and_sections_are_followed(vault: Path):
    log = "---\ncreated: 2026-07-0{0}\ntags: [session]\n---\n# Day {0}\n\n## Summary\n\nx\n\n## Next steps\n\ny\n"
    write_notes(vault, {f"journal/2026-07-0{i}.md": log.format(i) for i in range(1, 4)})
    engine = FlushEngine(vault)
    path, _ = engine.flush(FlushNote("Flaky export test", "Retried with a lock.", tags=("ci",)), DAY)
    assert path == "journal/2026-08-05-flaky-export-test.md"
    text = (vault / path).read_text()
    assert front(text) == {"created": "2026-08-05", "tags": ["ci", "session"]}  # and the tag every log carries
    assert "## Summary\n\nRetried with a lock." in text and "## Next steps" in text
    assert engine.flush(FlushNote("Flaky export test", "Retried with a lock.", tags=("ci",)), DAY + dt.timedelta(1))[
        1
    ] == ("up_to_date")


def test_a_note_carries_the_tags_its_folders_notes_share(vault: Path):
    """A skill distilled into `skills/`, whose notes are all tagged `skill`, was tagged `type/skill`
    alone: a search scoped to the vault's `skill` tag missed it. A tag more than half of a folder's
    notes carry (in frontmatter or inline) is carried by what is written there; others are not."""
    write_notes(
        vault,
        {
            "skills/retry.md": "---\ntags: [skill, http]\n---\n# Retry\n\nx\n",
            "skills/vacuum.md": "---\ntags: skill, sqlite\n---\n# Vacuum\n\ny\n",
            "skills/bisect.md": "# Bisect\n\n#skill #git, and `#not-a-tag` in code\n",
        },
    )
    path, _ = FlushEngine(vault).flush(FlushNote("Cargo lock", "Delete the lock.", "skill", ("type/skill",)), DAY)
    assert path.startswith("skills/") and front((vault / path).read_text())["tags"] == ["type/skill", "skill"]


def test_an_agents_own_frontmatter_joins_the_notes(vault: Path):
    """Content that opens with YAML frontmatter, as agents often send it, was written below the
    note's own: a second `---` block in its text. Its keys join the note's; the note's own win."""
    note = FlushNote("Pod state", "---\nowner: me\ntitle: Not this\n---\n\nBody.\n")
    text = (vault / FlushEngine(vault).flush(note, DAY)[0]).read_text()
    meta = front(text)
    assert (meta["title"], meta["owner"]) == ("Pod state", "me")
    assert text.count("---") == 2 and text.endswith("Body.\n")


def test_a_vault_without_frontmatter_gets_none(vault: Path):
    write_notes(vault, {"logs/a.md": "# A\n\ntext\n", "logs/b.md": "# B\n\ntext\n"})
    path, _ = FlushEngine(vault).flush(FlushNote("Third", "body"), DAY)
    assert path == "logs/third.md" and (vault / path).read_text() == "# Third\n\nbody\n"


def test_tags_survive_in_a_folder_without_frontmatter_as_hashtags(vault: Path):
    """The folder's notes have no frontmatter, so there was nowhere to put the tags asked for and they
    were dropped; now they are inline hashtags the scanner reads back, each once."""
    write_notes(vault, {"logs/a.md": "# A\n\ntext\n", "logs/b.md": "# B\n\ntext\n"})
    note = FlushNote("A/B testing", "We use #metrics.", tags=("ab test", "#metrics", "release/2.0", " "))
    path, _ = FlushEngine(vault).flush(note, DAY)
    text = (vault / path).read_text()
    assert not text.startswith("---") and text.endswith("We use #metrics.\n\n#ab-test #release/2-0\n")
    assert parse_note(path, text).tags == ["metrics", "ab-test", "release/2-0"]


def test_tags_survive_a_template_that_has_no_place_for_them(vault: Path):
    write_notes(
        vault,
        {"templates/decision.md": "---\nstatus: proposed\n---\n# {{title}}\n\n{{content}}\n", "decisions/.keep": ""},
    )
    path, _ = FlushEngine(vault).flush(FlushNote("Use WAL", "Readers block writers.", "decision", ("db",)), DAY)
    text = (vault / path).read_text()
    assert front(text) == {"status": "proposed"} and parse_note(path, text).tags == ["db"]


def test_a_template_symlinked_out_of_the_vault_is_not_copied_into_a_note(vault: Path, tmp_path: Path):
    secret = tmp_path / "credentials"
    secret.write_text("SECRET_TOKEN=outside-the-vault-12345\n{{content}}\n")
    write_notes(vault, {"decisions/.keep": ""})
    (vault / "templates").mkdir()
    (vault / "templates" / "decision.md").symlink_to(secret)
    path, _ = FlushEngine(vault).flush(FlushNote("Template escape", "a decision", "decision"), DAY)
    text = (vault / path).read_text()
    assert "SECRET_TOKEN" not in text and "a decision" in text


def test_a_template_is_filled(vault: Path):
    write_notes(
        vault,
        {
            "templates/decision.md": "---\ntitle: {{title}}\ndate: {{date}}\nstatus: proposed\n---\n# {{title}}\n\n## Why\n\n{{content}}\n\n## Status\n\nproposed\n",
            "decisions/.keep": "",
        },
    )
    path, _ = FlushEngine(vault).flush(FlushNote("Use WAL", "Readers block writers.", "decision"), DAY)
    text = (vault / path).read_text()
    assert front(text) == {"title": "Use WAL", "date": DAY, "status": "proposed"}
    assert "## Why\n\nReaders block writers.\n\n## Status" in text and text.count("---\n") == 2


def _vault_with_history(vault: Path) -> None:
    notes = {
        "README.md": "# Orders service\n\n> Takes orders from the shop and hands them to billing, exactly once.\n\nMore text.\n",
        "AGENTS.md": "# Rules\n\n- decisions: decisions\n- Never edit generated code in gen/.\n- Every decision record has the sections Context, Decision, Consequences.\n",
        "skills/retry-export.md": "# Retry export\n",
        "index.md": "# Index\n\n[[README]] [[decisions/2026-08-01-use-wal]]\n",
    }
    for i in range(1, 30):
        notes[f"decisions/2026-08-{i:02d}-decision-number-{i}-about-the-export-pipeline.md"] = f"# D{i}\n"
    write_notes(vault, notes)


def test_loadout_is_an_l0_to_l3_hierarchy_under_300_tokens(vault: Path):
    from k0maru_common import estimate_tokens
    from k0maru_offload._loadout import build_loadout

    _vault_with_history(vault)
    loadout = build_loadout(vault)
    text = loadout.markdown
    assert loadout.project == "Orders service" and estimate_tokens(text) <= 300
    assert "L0 project: Orders service — Takes orders from the shop" in text
    assert text.index("L0") < text.index("L1 conventions") < text.index("L2 recent") < text.index("L3 evergreen")
    assert "decision → decisions/: 2026-08-01-example-note.md; sections Context, Decision, Consequences" in text
    assert "[[decisions/2026-08-29-decision-number-29-about-the-export-pipeline]]" in text  # newest first
    assert "names: slug" not in text
    bigger = build_loadout(vault, max_tokens=2000)
    assert estimate_tokens(bigger.markdown) <= 2000 and len(bigger.markdown) > len(text)
    assert "Never edit generated code in gen/." in bigger.markdown and "[[skills/retry-export]]" in bigger.markdown


def test_loadout_names_the_newest_decisions_of_a_cloned_vault(vault: Path):
    """A git clone stamps files in whatever order: here the oldest decisions have the newest
    mtimes. L2 goes by the day in the names, so the newest decision is there; by mtime alone the
    30 kept were the 30 oldest."""
    import os

    from k0maru_offload._loadout import build_loadout

    days = [DAY + dt.timedelta(days=i) for i in range(40)]
    write_notes(vault, {f"decisions/{d.isoformat()}-choice-{i}.md": f"# Choice {i}\n" for i, d in enumerate(days)})
    for i, d in enumerate(days):
        stamp = 1_900_000_000 - i * 3600  # the later the name, the older the file
        os.utime(vault / "decisions" / f"{d.isoformat()}-choice-{i}.md", (stamp, stamp))
    text = build_loadout(vault, max_tokens=2000).markdown
    assert "[[decisions/2026-09-13-choice-39]]" in text and "[[decisions/2026-08-05-choice-0]]" not in text


def test_a_projects_packages_are_no_hubs_of_its_loadout(vault: Path):
    """node_modules and a virtual environment are walked by no part of k0maru: their READMEs,
    dense with links, were the loadout's hub notes of a JavaScript or Python project."""
    from k0maru_offload._loadout import build_loadout

    links = " ".join(f"[[page {i}]]" for i in range(30))
    write_notes(
        vault,
        {
            "docs/index.md": "# Index\n\n[[docs/setup]] [[docs/deploy]]\n",
            "node_modules/pkg/README.md": f"# pkg\n\n{links}\n",
            "venv/pyvenv.cfg": "home = /usr/bin\n",
            "venv/lib/site-packages/mod/README.md": f"# mod\n\n{links}\n",
        },
    )
    loadout = build_loadout(vault, max_tokens=2000)
    assert loadout.hubs == ["docs/index.md"]


def test_changelogs_and_journals_are_no_evergreen_hubs(vault: Path):
    """A changelog links every feature it shipped, a session log every note it touched: six of a
    Dendron vault's eight hubs were changelogs. The notes of the moment are L2's, not L3's."""
    from k0maru_offload._loadout import build_loadout

    links = " ".join(f"[[page {i}]]" for i in range(30))
    write_notes(
        vault,
        {
            "concepts/map.md": "# Map\n\n[[concepts/a]] [[concepts/b]] [[concepts/c]]\n",
            "changelog.past-versions.0-3-x.md": f"# 0.3\n\n{links}\n",
            "journal/2026-05-20-session.md": f"# Session\n\n{links}\n",
            "team.meetings.md": f"# Meetings\n\n{links}\n",
            "Release Notes.md": f"# Release notes\n\n{links}\n",
        },
    )
    assert build_loadout(vault, max_tokens=2000).hubs == ["concepts/map.md"]


def test_loadout_l2_goes_newest_first_whether_names_carry_a_day_or_not(vault: Path):
    """L2 merged decisions and logs by their file names, so an undated `pick-postgres.md` from
    January came before every dated note (`p` > `2`), whatever their days. A note's frontmatter
    date counts as the scanner counts it: a synced copy's files all carry the day of the copy."""
    import os

    from k0maru_offload._loadout import build_loadout

    write_notes(
        vault,
        {
            "decisions/pick-postgres.md": "# Pick Postgres\n",
            "decisions/2026-08-01-use-wal.md": "# Use WAL\n",
            "decisions/2026-03-01-drop-mongo.md": "# Drop Mongo\n",
            "decisions/choose-grpc.md": "---\ntitle: Choose gRPC\ndate: 2026-09-01\n---\n# Choose gRPC\n",
        },
    )
    january = dt.datetime(2026, 1, 10, tzinfo=dt.UTC).timestamp()
    for name in ("pick-postgres.md", "choose-grpc.md"):
        os.utime(vault / "decisions" / name, (january, january))
    text = build_loadout(vault, max_tokens=2000).markdown
    names = [
        "[[decisions/choose-grpc]]",
        "[[decisions/2026-08-01-use-wal]]",
        "[[decisions/2026-03-01-drop-mongo]]",
        "[[decisions/pick-postgres]]",
    ]
    assert [text.index(n) for n in names] == sorted(text.index(n) for n in names)


def test_a_month_of_daily_logs_leaves_room_for_the_newest_decisions(vault: Path):
    """L2 by recency alone: thirty daily logs newer than every decision filled the default 300
    tokens with six links to days, and the agent that reads the loadout first saw no decision.
    Decisions and logs now take turns, the newer first."""
    from k0maru_offload._loadout import build_loadout

    notes = {f"decisions/2026-0{m}-01-decision-{m}.md": f"# Decision {m}\n" for m in range(1, 4)}
    notes |= {f"daily/2026-11-{d:02d}.md": f"# {d} November\n\nworked\n" for d in range(1, 31)}
    write_notes(vault, notes)
    text = build_loadout(vault).markdown
    recent = text.split("L2 recent:\n", 1)[1].split("\n", 4)[:4]
    assert recent[:2] == ["- [[daily/2026-11-30]]", "- [[decisions/2026-03-01-decision-3]]"]
    assert recent[2:4] == ["- [[daily/2026-11-29]]", "- [[decisions/2026-02-01-decision-2]]"]


def test_a_logseq_graphs_loadout_tells_its_pages_by_their_category(vault: Path):
    """Logseq keeps every kind in pages/: each page was each kind, so L2 and L3 listed the same
    pages and no journal; a project named as Logseq names its page (`project/alpha`, a `title::`,
    an `alias::`) was "no note is named after"; links were `[[pages/X]]`, a new page in Logseq."""
    from k0maru_offload._loadout import build_loadout

    write_notes(
        vault,
        {
            "logseq/config.edn": "{:meta/version 1}\n",
            "pages/project___alpha.md": "title:: project/alpha\nalias:: Alpha\n\n- The alpha ledger service.\n",
            "pages/Use Raft.md": "category:: decision\n\n- We use Raft for [[project/alpha]].\n",
            "pages/Fix E0502.md": "category:: skill\n\n- Clone the key first.\n",
            "pages/Ledger.md": "- [[project/alpha]] [[Use Raft]] [[Fix E0502]] [[Alpha]]\n",
            "journals/2026_12_01.md": "- worked on [[project/alpha]]\n",
            "logseq/bak/pages/Use Raft/2026_11_01.md": "category:: decision\n\n- an old copy\n",
        },
    )
    for asked in ("project/alpha", "Alpha"):
        loadout = build_loadout(vault, max_tokens=2000, project=asked)
        assert loadout.scope == "The alpha ledger service.", asked
    text = loadout.markdown
    recent = text.split("L2 recent:\n", 1)[1].split("\nL3", 1)[0]
    evergreen = text.split("L3 evergreen:\n", 1)[1]
    assert recent.splitlines() == ["- [[journals/2026_12_01]]", "- [[Use Raft]]"] or recent.splitlines() == [
        "- [[Use Raft]]",
        "- [[journals/2026_12_01]]",
    ]
    assert "[[Fix E0502]]" in evergreen and "[[Ledger]]" in evergreen and "Use Raft" not in evergreen
    assert "[[pages/" not in text and "old copy" not in text and "bak" not in recent + evergreen


def test_loadout_dates_decision_records_by_their_date_lines(vault: Path):
    """adr-tools' records carry no frontmatter and no day in their names, only "Date: …" under the
    title: a clone stamps their files alike, so L2 went by the numbers' reverse order of names."""
    import os

    from k0maru_offload._loadout import build_loadout

    adr = "# {n}. {title}\n\nDate: {day}\n\n## Status\n\nAccepted\n\n## Decision\n\n{title}.\n"
    for n, title, day in (
        (1, "Use Postgres", "2026-05-01"),
        (2, "Use Redis", "2026-01-10"),
        (3, "Use Kafka", "2026-02-01"),
    ):
        write_notes(
            vault, {f"docs/adr/{n:04d}-{title.lower().replace(' ', '-')}.md": adr.format(n=n, title=title, day=day)}
        )
    for name in os.listdir(vault / "docs/adr"):
        os.utime(vault / "docs/adr" / name, (1_700_000_000, 1_700_000_000))
    text = build_loadout(vault, max_tokens=2000).markdown
    order = ["[[docs/adr/0001-use-postgres]]", "[[docs/adr/0003-use-kafka]]", "[[docs/adr/0002-use-redis]]"]
    assert [text.index(n) for n in order] == sorted(text.index(n) for n in order)


def test_a_loadout_names_the_decision_that_replaced_an_older_one_not_the_older_one(vault: Path):
    """The brief an agent reads first listed a revised decision beside its revision, and the old
    one first by its name: the agent built on sessions after the team moved to OIDC. Given the
    retriever's superseded notes, a listed note gives way to the notes that replace it, along a
    chain to the newest, each once; one outside the folder takes its place too, and a successor
    that is no file (deleted since the index saw it) changes nothing."""
    from k0maru_offload._loadout import build_loadout

    write_notes(
        vault,
        {
            "decisions/2026-08-01-auth-sessions.md": "# Auth: sessions\n",
            "decisions/2026-08-09-auth-oidc.md": "---\nsupersedes: '[[2026-08-01-auth-sessions]]'\n---\n# Auth: OIDC\n",
            "decisions/2026-08-05-cache-redis.md": "# Cache: redis\n",
            "decisions/2026-08-07-cache-none.md": "# Cache: none\n",
            "archive/cache-cdn.md": "# Cache: a CDN\n",
            "decisions/2026-08-03-queue-sqs.md": "# Queue: SQS\n",
        },
    )
    superseded = {
        "decisions/2026-08-01-auth-sessions.md": ["decisions/2026-08-09-auth-oidc.md"],
        "decisions/2026-08-05-cache-redis.md": ["decisions/2026-08-07-cache-none.md"],
        "decisions/2026-08-07-cache-none.md": ["archive/cache-cdn.md"],
        "decisions/2026-08-03-queue-sqs.md": ["decisions/queue-kafka-deleted.md"],
    }
    loadout = build_loadout(vault, max_tokens=2000, superseded=superseded)
    assert loadout.decisions == [
        "decisions/2026-08-09-auth-oidc.md",
        "archive/cache-cdn.md",
        "decisions/2026-08-03-queue-sqs.md",
    ]
    text = loadout.markdown
    assert "[[decisions/2026-08-09-auth-oidc]]" in text and "auth-sessions" not in text
    assert text.count("[[archive/cache-cdn]]") == 1 and "cache-redis" not in text and "cache-none" not in text
    cycle = {"decisions/2026-08-01-auth-sessions.md": ["decisions/2026-08-09-auth-oidc.md"]}
    cycle["decisions/2026-08-09-auth-oidc.md"] = ["decisions/2026-08-01-auth-sessions.md"]
    assert len(build_loadout(vault, max_tokens=2000, superseded=cycle).decisions) == 5  # ends, each once
    assert len(build_loadout(vault, max_tokens=2000).decisions) == 5  # no retriever to ask: as found
    assert loadout.hubs == []  # a decision's one link made it an evergreen hub too


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_loadout_names_the_newest_decisions_of_a_cloned_vault_by_their_commits(vault: Path):
    """Decisions named without a day, in a vault kept in git: the newest commits' are kept, whatever
    order the clone wrote the files in; one edited since goes by its file (today)."""
    import os

    from k0maru_common import CommitDays
    from k0maru_offload._loadout import build_loadout

    git(vault, "init", "-q")
    for i in range(40):
        git_commit(vault, (DAY + dt.timedelta(days=i)).isoformat(), {f"decisions/choice-{i}.md": f"# Choice {i}\n"})
    for i in range(40):
        stamp = 1_700_000_000 - i * 3600  # the later the commit, the older the file (mtime 2023)
        os.utime(vault / "decisions" / f"choice-{i}.md", (stamp, stamp))
    write_notes(vault, {"decisions/choice-0.md": "# Choice 0\n\nreopened today\n"})
    by_files = build_loadout(vault, max_tokens=2000).markdown
    assert "[[decisions/choice-39]]" not in by_files  # by mtime alone: the 30 oldest
    text = build_loadout(vault, max_tokens=2000, commit_days=CommitDays(vault)).markdown
    assert "[[decisions/choice-39]]" in text and "[[decisions/choice-0]]" in text
    assert "[[decisions/choice-1]]" not in text and "[[decisions/choice-9]]" not in text


def test_loadout_for_a_named_project(vault: Path):
    from k0maru_offload._loadout import build_loadout

    write_notes(
        vault,
        {
            "10_Projects/Billing Bridge.md": "---\ntype: project\n---\n# Billing Bridge\n\nSyncs invoices to the ledger nightly.\n",
            "10_Projects/Other.md": "# Other\n\n> Not this one.\n",
        },
    )
    loadout = build_loadout(vault, project="billing")
    assert "L0 project: billing — Syncs invoices to the ledger nightly." in loadout.markdown
    unknown = build_loadout(vault, project="kiwi").markdown  # was the vault's brief under that name, silently
    assert "L0 project: kiwi — no note is named after 'kiwi'; the vault's own:" in unknown


def test_a_named_projects_loadout_lists_its_own_decisions_and_hubs_first(vault: Path):
    """A vault of two projects: the brief asked for one leads with that one's notes (named in the
    path, linked to its note, or said in the frontmatter), then the rest, newest first in each."""
    from k0maru_offload._loadout import build_loadout

    write_notes(
        vault,
        {
            "projects/Kiwi.md": "# Kiwi\n\n> The fruit-stand app.\n\n[[decisions/kiwi-sqlite]] [[projects/kiwi/api]]\n",
            "projects/kiwi/api.md": "# Kiwi API\n\n[[Kiwi]] [[decisions/kiwi-sqlite]] [[projects/Kiwi]]\n",
            "projects/Mango.md": "# Mango\n\n> The juice app.\n\n[[decisions/mango-redis]] [[mango-map]] [[x]] [[y]]\n",
            "decisions/2026-01-02-kiwi-sqlite.md": "---\ndate: 2026-01-02\n---\n# Use SQLite\n",
            "decisions/2026-02-01-auth.md": "---\ndate: 2026-02-01\nproject: kiwi\n---\n# Auth with OIDC\n",
            "decisions/2026-03-01-mango-redis.md": "---\ndate: 2026-03-01\n---\n# Use Redis for [[Mango]]\n",
            "decisions/2026-04-01-kiwifruit-names.md": "---\ndate: 2026-04-01\n---\n# Name the kiwifruit SKUs\n",
        },
    )

    def level(markdown: str, name: str) -> list[str]:
        lines = markdown.splitlines()[markdown.splitlines().index(f"{name}:") + 1 :]
        return [ln[2:] for ln in itertools.takewhile(lambda ln: ln.startswith("- "), lines)]

    kiwi = build_loadout(vault, project="kiwi", max_tokens=2000).markdown
    recent = level(kiwi, "L2 recent")[:4]
    assert recent == [
        "[[decisions/2026-02-01-auth]]",
        "[[decisions/2026-01-02-kiwi-sqlite]]",
        "[[decisions/2026-04-01-kiwifruit-names]]",  # `kiwifruit` is another word
        "[[decisions/2026-03-01-mango-redis]]",
    ]
    assert level(kiwi, "L3 evergreen")[:2] == ["[[projects/kiwi/api]]", "[[projects/Kiwi]]"]
    whole = build_loadout(vault, max_tokens=2000).markdown  # no project: the vault's, newest first
    assert level(whole, "L2 recent")[0] == "[[decisions/2026-04-01-kiwifruit-names]]"
    assert level(whole, "L3 evergreen")[0] == "[[projects/Mango]]"
    papaya = {
        "apps/papaya/README.md": "# Docs\n\n> The smoothie app.\n",
        "decisions/2025-01-01-papaya-cdn.md": "# CDN\n",
    }
    write_notes(vault, papaya)
    by_folder = build_loadout(vault, project="Papaya", max_tokens=2000).markdown  # a folder's name: its front page
    assert "L0 project: Papaya — The smoothie app." in by_folder
    assert level(by_folder, "L2 recent")[0] == "[[decisions/2025-01-01-papaya-cdn]]"


def test_session_notes_do_not_go_into_a_folder_git_ignores(vault: Path):
    """A code repository's `logs/` is build output, ignored by git: session notes written there
    were never committed, and `git clean -X` would delete them. They go to `notes/` instead."""
    write_notes(vault, {".gitignore": "logs/\n", "logs/server.log.md": "x\n", "notes/first.md": "# First\n"})
    git(vault, "init", "-q")
    path, outcome = FlushEngine(vault).flush(FlushNote("Session summary", "what we learned today"), DAY)
    assert outcome == "created" and path.startswith("notes/"), path
    (vault / ".gitignore").write_text("")  # not ignored: the log folder it is
    assert FlushEngine(vault).flush(FlushNote("Another session", "more"), DAY)[0].startswith("logs/")


def test_a_file_name_that_is_no_utf8_leaves_the_loadout_whole(vault: Path):
    """One note named in GBK (a zip from Chinese Windows) in the decisions folder made every
    loadout an internal error: its name could not go into the answer."""
    from k0maru_offload._loadout import build_loadout

    write_notes(vault, {"decisions/2026-01-02-use-wal.md": "---\ndate: 2026-01-02\n---\n# Use WAL\n"})
    (vault / "decisions").joinpath(os.fsdecode(b"\xb2\xe2\xca\xd4.md")).write_text("# t\n")
    text = build_loadout(vault, max_tokens=2000).markdown
    text.encode("utf-8")  # what the answer carries
    assert "[[decisions/2026-01-02-use-wal]]" in text


def test_loadout_finds_the_summary_of_a_dendron_vault_and_of_a_readme_that_quotes_a_user(tmp_path: Path):
    """Dendron's front page is the root note of its biggest hierarchy (its root note only links
    the config), titled in its frontmatter, under badges and a logo; a README's summary is its
    first paragraph, not a user's words quoted further down (B.10's first blockquote anywhere)."""
    from k0maru_offload._loadout import build_loadout

    vault = tmp_path / "vault"
    write_notes(
        vault,
        {
            "root.md": "---\nid: root\ntitle: Root\n---\n[acme.yml](../acme.yml)\n",
            "acme.md": (
                "---\nid: 1\ntitle: Acme\nupdated: 1660951930114\n---\n\n"
                "[![chat](https://img.example/badge?x=1)](https://chat.example)\n"
                "[![installs](https://img.example/i)](https://market.example)\n\n"
                "![Acme logo](https://img.example/logo.png)\n\n"
                "Acme is a **local-first** tool for [[acme.topic.notes|notes]] that\nnever loses what you wrote.\n"
            ),
            "acme.topic.notes.md": "---\nid: 2\ntitle: Notes\n---\nNotes.\n",
            "acme.topic.vaults.md": "---\nid: 3\ntitle: Vaults\n---\nVaults.\n",
            "blog.md": "---\nid: 4\ntitle: Blog\n---\nOur blog.\n",
            "blog.first.md": "---\nid: 5\ntitle: First\n---\nA post.\n",
        },
    )
    loadout = build_loadout(vault)
    assert (
        "L0 project: Acme — Acme is a local-first tool for notes that never loses what you wrote." in loadout.markdown
    )
    (vault / "acme.md").unlink()  # small hierarchies and the root note, none with a summary: said plainly
    (vault / "blog.md").unlink()
    assert "L0 project: vault — no project summary in the vault yet" in build_loadout(vault).markdown
    write_notes(
        vault,
        {
            "README.md": (
                "# Orders\n\n<p align=center><img src=x.png></p>\n\n"
                "Takes orders from the shop.\n\n## Users say\n\n> It never lost an order.\n"
            )
        },
    )
    assert "L0 project: Orders — Takes orders from the shop." in build_loadout(vault).markdown


def test_rule_lines_that_are_not_mappings_or_sections_are_ignored(vault: Path):
    write_notes(
        vault,
        {
            "AGENTS.md": "- Logs: keep them short\n- Keep sections short and focused\n- skills: 30 Playbooks\n",
            "30 Playbooks/retry.md": "# Retry\n",
        },
    )
    conv = sniff(vault)
    assert "log" not in conv.folders and conv.rule_sections == {}
    assert conv.folders["skill"] == "30 Playbooks"


def test_a_distilled_card_follows_the_rules_file(vault: Path):
    from k0maru_offload._distill import distill

    write_notes(vault, {"AGENTS.md": "- skills: 30 Playbooks\n", "30 Playbooks/Retry Export.md": "# Retry Export\n"})
    card = distill("$ pytest\nKeyError: 'token'\nFix: export API_TOKEN\n")
    path, _ = FlushEngine(vault).flush(FlushNote(card.title, card.markdown, "skill", card.tags), DAY)
    assert path == "30 Playbooks/Fix KeyError Token.md"  # the folder and its Title Case, space-separated names


def test_a_logseq_graph_gets_pages_with_properties(vault: Path):
    """Logseq reads pages from pages/ only: a note written anywhere else would never show there."""
    write_notes(
        vault,
        {
            "logseq/config.edn": "{:meta/version 1}\n",
            "pages/Export pipeline.md": "tags:: infra\n\n- The nightly export.\n",
            # namespace pages: their underscores are no word separator
            "pages/Project___Beta.md": "- Beta.\n",
            "pages/Project___Gamma.md": "- Gamma.\n",
            "journals/2026_08_04.md": "- Met about [[Export pipeline]]\n",
        },
    )
    conv = sniff(vault)
    assert conv.tool == "logseq" and conv.folder_for("decision") == "pages"
    assert "decision → pages/: Example note.md; Logseq properties" in conv.describe()
    engine = FlushEngine(vault)
    note = FlushNote("Export lock contention fix", "We serialise exports behind one lock.", "decision", ("export",))
    path, outcome = engine.flush(note, DAY)
    assert (path, outcome) == ("pages/Export lock contention fix.md", "created")  # the pages' own naming
    text = (vault / path).read_text()
    assert text.startswith("title:: Export lock contention fix\ndate:: 2026-08-05\ncategory:: decision\n")
    assert "tags:: export\n" in text and not text.startswith("---")
    parsed = parse_note(path, text)  # read back as the scanner reads a Logseq page
    assert (parsed.title, parsed.tags) == ("Export lock contention fix", ["export"])
    assert engine.flush(note, DAY + dt.timedelta(days=1)) == (path, "up_to_date")  # its date:: aside
    assert engine.flush(FlushNote("Skill x", "Steps.", "playbook"), DAY)[0] == "pages/Skill x.md"
    assert engine.flush(FlushNote("Other", "Text.", "research/papers"), DAY)[0] == "pages/Other.md"
    # a page's file as Logseq names it: a namespace's `/` is `___`, its case as written
    namespaced = FlushNote("project/alpha/consensus jitter", "Jitter.", "decision")
    assert engine.flush(namespaced, DAY)[0] == "pages/project___alpha___consensus jitter.md"
    assert engine.flush(FlushNote("Kafka lag: DLQ rollout", "x", "log"), DAY)[0] == "pages/Kafka lag DLQ rollout.md"
    # the agent's own frontmatter becomes properties (it was the first block's text: `- ---`)
    path, _ = engine.flush(FlushNote("DLQ", "---\nowner: me\n---\nWe rolled out the DLQ.\n", "log"), DAY)
    text = (vault / path).read_text()
    assert "owner:: me\n" in text and "---" not in text and text.endswith("\n- We rolled out the DLQ.\n")


def test_a_logseq_page_is_written_as_an_outline_of_blocks(vault: Path):
    """Logseq keeps a page as blocks: paragraphs, list items, code and headings each a `- ` block,
    children a tab deeper; written as paragraphs, Logseq showed the whole note as one block."""
    write_notes(vault, {"logseq/config.edn": "{:meta/version 1}\n", "pages/Export pipeline.md": "- The export.\n"})
    content = "\n".join(
        [
            "We serialise exports",
            "behind one lock.",
            "",
            "## Steps",
            "",
            "- take the lock",
            "  before the export",
            "    - wait at most 5 s",
            "1. export",
            "",
            "```bash",
            "flock /tmp/export.lock ./export.sh",
            "",
            "# a comment, no heading",
            "```",
            "",
            "### Why",
            "",
            "Two exports wrote the same file.",
        ]
    )
    note = FlushNote("Export lock", content, "decision", ("export",), related=("Export pipeline",))
    path, _ = FlushEngine(vault).flush(note, DAY)
    text = (vault / path).read_text()
    assert text.split("\n\n", 1)[1] == "\n".join(
        [
            "- We serialise exports",
            "  behind one lock.",
            "- ## Steps",
            "\t- take the lock",
            "\t  before the export",
            "\t\t- wait at most 5 s",
            "\t- 1. export",
            "\t- ```bash",
            "\t  flock /tmp/export.lock ./export.sh",
            "\t  ",
            "\t  # a comment, no heading",
            "\t  ```",
            "\t- ### Why",
            "\t\t- Two exports wrote the same file.",
            "- ## Related",
            "\t- [[Export pipeline]]",
            "",
        ]
    )
    parsed = parse_note(path, text)  # read back as the scanner reads it: its sections, no title line
    assert parsed.title == "Export lock"
    assert [s.heading_path for s in parsed.sections] == [[], ["Steps"], ["Steps", "Why"], ["Related"]]
    assert [link.target for link in parsed.links] == ["Export pipeline"]
    crlf = FlushNote("Export lock windows", content.replace("\n", "\r\n"), "decision", ("export",))
    written = (vault / FlushEngine(vault).flush(crlf, DAY)[0]).read_bytes()
    assert b"\r" not in written and b"\t  flock /tmp/export.lock ./export.sh\n" in written


def test_a_dendron_vault_gets_hierarchy_names_in_its_root(vault: Path):
    """Dendron keeps every note in the vault's root, its place in the hierarchy in its name."""
    fm = "---\nid: abc123\ntitle: {t}\ndesc: ''\nupdated: 1700000000000\ncreated: 1700000000000\n---\n"
    write_notes(
        vault,
        {
            "root.md": fm.format(t="Root"),
            "adr.use-wal.md": fm.format(t="Use WAL") + "# Use WAL\n",
            "dendron.topic.lookup.md": fm.format(t="Lookup"),
            "dendron.topic.md": fm.format(t="Topic"),
        },
    )
    conv = sniff(vault)
    assert conv.tool == "dendron" and conv.hierarchy_for("decision") == "adr"  # the vault's own
    assert "decision → (root)/: adr.2026-08-01-example-note.md" in "\n".join(conv.describe())  # the loadout's L1
    engine = FlushEngine(vault)
    note = FlushNote("Export lock contention fix", "We serialise exports behind one lock.", "decision")
    path, outcome = engine.flush(note, DAY)
    assert (path, outcome) == ("adr.2026-08-05-export-lock-contention-fix.md", "created")
    meta = front((vault / path).read_text())
    assert list(meta) == ["id", "title", "desc", "updated", "created"]
    assert meta["title"] == "Export lock contention fix" and isinstance(meta["created"], int)
    assert len(str(meta["id"])) == 24 and meta["created"] > 1_700_000_000_000
    assert engine.flush(note, DAY) == (path, "up_to_date")  # a new id and time are no new content
    other = engine.flush(FlushNote("Export lock contention fix", "Another text.", "decision"), DAY)
    assert other == ("adr.2026-08-05-export-lock-contention-fix-v2.md", "versioned")
    assert engine.flush(FlushNote("Session", "Text.", "log"), DAY)[0] == "logs.2026-08-05-session.md"
    assert not [p for p in vault.iterdir() if p.is_dir()]  # no folder Dendron would not read


def test_a_dendron_note_of_the_same_name_is_compared_whatever_its_encoding(vault: Path):
    """A flush reads the Dendron note that already has its name to compare them: one in Latin-1
    (not UTF-8) failed the flush with UnicodeDecodeError, and one a Windows tool saved again as
    UTF-16 is the same text."""
    fm = "---\nid: abc123\ntitle: {t}\ndesc: ''\nupdated: 1700000000000\ncreated: 1700000000000\n---\n"
    write_notes(vault, {"root.md": fm.format(t="Root"), "adr.use-wal.md": fm.format(t="Use WAL"), "a.b.md": "x"})
    (vault / "adr.2026-08-01-export-lock.md").write_bytes("---\ntitle: Export lock\n---\ncaf\xe9\n".encode("latin-1"))
    engine = FlushEngine(vault)
    note = FlushNote("Export lock", "We serialise exports behind one lock.", "decision")
    assert engine.flush(note, DAY) == ("adr.2026-08-05-export-lock.md", "created")
    written = vault / "adr.2026-08-05-export-lock.md"
    written.write_bytes(written.read_text().encode("utf-16"))  # with its byte order mark
    assert engine.flush(note, DAY) == ("adr.2026-08-05-export-lock.md", "up_to_date")


@pytest.mark.parametrize(
    "files",
    [
        {"decisions/old.md": "---\ntitle: Old\nstatus: accepted\n---\n# Old\n"},  # a folder with frontmatter
        {"decisions/old.md": "# Old\n\ntext\n"},  # one without: an ADR's status line under the title
        {"templates/decision.md": "---\nstatus: proposed\n---\n# {{title}}\n\n{{content}}\n", "decisions/.keep": ""},
        {"logseq/config.edn": "{:meta/version 1}\n", "pages/Old.md": "- Old.\n"},  # Logseq's `supersedes::`
    ],
    ids=["frontmatter", "no-frontmatter", "template", "logseq"],
)
def test_a_note_that_replaces_others_says_so_where_the_scanner_reads_it(vault: Path, files: dict[str, str]):
    """An agent that revises a decision names the notes the new one replaces; however the folder
    writes its notes, the scanner reads each of them back as a `supersedes` link (frontmatter
    property, Logseq property, or "Supersedes [[x]]." under the title), which the retriever
    turns into `superseded_by` on the old notes."""
    write_notes(vault, files)
    note = FlushNote("Use OIDC", "Sessions move to OIDC.", "decision", supersedes=("[[Old]]", "auth/old plan", " "))
    path, _ = FlushEngine(vault).flush(note, DAY)
    text = (vault / path).read_text()
    held = [(lk.target, lk.property) for lk in parse_note(path, text).links]
    assert held == [("Old", "supersedes"), ("auth/old plan", "supersedes")], text
    assert "Sessions move to OIDC." in text


@pytest.mark.parametrize(
    "field,names",
    [
        ("supersedes", ("old\nplan",)),  # a link cannot span lines: half of it would be text
        ("supersedes", ("a]] and [[b",)),
        ("related", ("x]]y",)),
        ("related", ("n" * 1001,)),
    ],
)
def test_a_note_name_that_no_link_can_hold_is_refused_and_nothing_is_written(vault: Path, field: str, names: tuple):
    write_notes(vault, {"decisions/old.md": "# Old\n"})
    with pytest.raises(InvalidInput, match="is no note name"):
        FlushEngine(vault).flush(FlushNote("Use OIDC", "Sessions move to OIDC.", "decision", **{field: names}), DAY)
    assert sorted(p.name for p in (vault / "decisions").iterdir()) == ["old.md"]


def test_a_chinese_vaults_decision_and_log_folders_are_found(vault: Path):
    """A vault with 决策/ (numbered records) and 日志/: an agent's decision and its session note went
    unnumbered into the vault's root and the loadout listed no recent decision; only the folders'
    English names were known. A rules file's full-width colon maps a kind too."""
    from k0maru_offload._loadout import build_loadout

    write_notes(
        vault,
        {
            "决策/0001-采用gRPC.md": "# 采用 gRPC\n\n服务之间用 gRPC 调用。\n",
            "决策/0002-日志接入Loki.md": "# 日志接入 Loki\n\n所有服务的日志进 Loki。\n",
            "日志/2024-11-02-会话记录.md": "# 会话记录\n\n修好了 flaky 测试。\n",
            "技能/重启服务.md": "# 重启服务\n\n先摘流量再重启。\n",
        },
    )
    engine = FlushEngine(vault)
    path, outcome = engine.flush(
        FlushNote(title="采用 Qdrant 作为向量库", content="决定采用 Qdrant。", category="decision"), DAY
    )
    assert (path.split("/")[0], path.split("/")[1][:5], outcome) == ("决策", "0003-", "created")
    log, _ = engine.flush(FlushNote(title="今天的会话记录", content="修复了 flaky 测试。"), DAY)
    assert log.startswith("日志/2026-08-05-")
    text = build_loadout(vault, max_tokens=800).markdown
    assert "L2 recent" in text and "采用-qdrant" in text.lower()
    write_notes(vault, {"AGENTS.md": "- 技能：手册/\n", "手册/.keep": ""})
    assert sniff(vault).folder_for("skill") == "手册"
