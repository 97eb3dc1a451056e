"""CommitDays: a note in a vault kept in git is dated by the last commit that changed it, while it
is as committed; edits, untracked notes and vaults git cannot read fall back to nothing."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k0maru_common import CommitDays
from tests.conftest import git, git_commit, wait_for

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "team"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git_commit(root, "2025-03-01", {"a.md": "# A\n", "projects/b b.md": "# B\n", "projects/ä.md": "# Ä\n"})
    git_commit(root, "2025-06-15", {"projects/b b.md": "# B\n\nsecond version\n"})
    return root


def day_of(days: CommitDays, vault: Path, rel: str) -> str:
    return days.day(rel, (vault / rel).read_bytes())


def test_a_committed_note_is_dated_by_the_last_commit_that_changed_it(repo: Path):
    days = CommitDays(repo)
    assert days.describe() == ""  # nothing asked yet
    assert day_of(days, repo, "a.md") == "2025-03-01"
    assert day_of(days, repo, "projects/b b.md") == "2025-06-15"
    assert day_of(days, repo, "projects/ä.md") == "2025-03-01"
    assert days.describe() == f"notes that name no date go by their last commit (read at {days.head[:12]}, 3 files)"
    (repo / "a.md").write_text("# A\n\nedited, not committed\n", encoding="utf-8")
    (repo / "new.md").write_text("# New\n", encoding="utf-8")
    assert day_of(days, repo, "a.md") == ""  # edited since: its file's day says when
    assert day_of(days, repo, "new.md") == ""  # never committed
    assert days.day("gone.md", b"") == ""


def test_a_vault_that_is_a_folder_of_a_repository(repo: Path):
    vault = repo / "projects"
    days = CommitDays(vault)
    assert day_of(days, vault, "b b.md") == "2025-06-15"
    assert day_of(days, vault, "ä.md") == "2025-03-01"
    assert days.day("a.md", b"# A\n") == ""  # outside the vault, though in the repository


def test_the_days_follow_head_forward_and_back(repo: Path):
    days = CommitDays(repo, head_every_s=0)
    first = days.head
    assert day_of(days, repo, "a.md") == "2025-03-01"
    git_commit(repo, "2025-10-01", {"a.md": "# A\n\npulled\n"})  # a pull, as far as the days go
    assert day_of(days, repo, "a.md") == "2025-10-01"
    assert day_of(days, repo, "projects/b b.md") == "2025-06-15"
    git(repo, "reset", "-q", "--hard", "HEAD~2")  # not a descendant: the history is read again
    assert days.head != first
    assert day_of(days, repo, "a.md") == "2025-03-01"
    assert day_of(days, repo, "projects/b b.md") == "2025-03-01"  # its first version, as checked out


def test_no_days_without_a_repository_a_commit_or_git(tmp_path: Path, repo: Path, monkeypatch, caplog):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.md").write_text("# A\n", encoding="utf-8")
    assert day_of(CommitDays(plain), plain, "a.md") == ""
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    (empty / "a.md").write_text("# A\n", encoding="utf-8")
    assert day_of(CommitDays(empty), empty, "a.md") == ""
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with caplog.at_level(logging.WARNING):
        assert day_of(CommitDays(repo), repo, "a.md") == ""
    assert "git is not installed" in caplog.text


def test_the_repositorys_own_settings_run_no_program(repo: Path, tmp_path: Path):
    """git runs programs a repository's config names (a file-system monitor, gpg for signed
    commits); a vault's repository is not trusted to run anything here."""
    ran = tmp_path / "ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\nexit 1\n", encoding="utf-8")
    hook.chmod(0o755)
    # a commit that carries a (made-up) signature: `git log --show-signature` would run gpg on it
    git_commit(repo, "2025-07-01", {"c.md": "# C\n"})
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    parent = git(repo, "rev-parse", "HEAD~1").strip()
    signed = (
        f"tree {tree}\nparent {parent}\nauthor A <a@example.org> 1764000000 +0000\n"
        "committer A <a@example.org> 1764000000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n"
        " made up\n -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    sha = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo, input=signed, text=True, capture_output=True
    ).stdout.strip()
    git(repo, "update-ref", "refs/heads/main", sha)
    assert "made up" in git(repo, "cat-file", "-p", "HEAD")
    git(repo, "config", "core.fsmonitor", str(hook))
    git(repo, "config", "log.showSignature", "true")
    git(repo, "config", "gpg.program", str(hook))
    days = CommitDays(repo)
    assert day_of(days, repo, "projects/b b.md") == "2025-06-15"
    assert day_of(days, repo, "c.md") == "2025-11-24"  # the signed commit's
    assert not ran.exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give the vault away")
def test_a_repository_git_will_not_read_gives_no_days(repo: Path, caplog):
    """Another user's repository: git refuses (`safe.directory`), and it is not overruled here."""
    subprocess.run(["chown", "-R", "65534:65534", str(repo)], check=True)
    days = CommitDays(repo)
    with caplog.at_level(logging.WARNING):
        assert day_of(days, repo, "a.md") == ""
    assert "git cannot read the vault's repository" in caplog.text and "dubious ownership" in caplog.text
    assert days.describe().startswith("git cannot read the vault's repository: ")  # the status says why


def test_a_shallow_clone_dates_only_what_its_history_shows(repo: Path, tmp_path: Path):
    """`git clone --depth 1` (CI, a container's checkout) holds one commit that seems to add
    every file: only the files its later commits changed have a day."""
    git_commit(repo, "2025-10-01", {"a.md": "# A\n\nthird\n"})
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{repo}", str(shallow))
    days = CommitDays(shallow)
    assert day_of(days, shallow, "a.md") == "2025-10-01"
    assert day_of(days, shallow, "projects/b b.md") == ""  # changed by the commit the history starts at
    assert day_of(days, shallow, "projects/ä.md") == ""  # older than the history held
    whole = tmp_path / "whole"
    git(tmp_path, "clone", "-q", f"file://{repo}", str(whole))
    assert day_of(CommitDays(whole), whole, "projects/ä.md") == "2025-03-01"


def test_a_history_too_long_to_read_gives_no_days_and_is_not_read_again(repo: Path, caplog):
    days = CommitDays(repo, timeout_s=1e-9, head_every_s=0)
    with caplog.at_level(logging.WARNING):
        assert day_of(days, repo, "a.md") == ""
    assert "ran past" in caplog.text
    git_commit(repo, "2025-10-01", {"a.md": "# A\n\nmoved on\n"})
    days.timeout_s = 60.0  # even were it quick now: this process has given up on it
    assert day_of(days, repo, "a.md") == ""


def test_a_failing_read_is_tried_again_a_while_later(repo: Path):
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    stored = repo / ".git" / "objects" / tree[:2] / tree[2:]  # loose: a fresh repository is not packed
    hidden = repo / "tree-away"
    waiting, eager = CommitDays(repo, head_every_s=0), CommitDays(repo, head_every_s=0, retry_s=0)
    stored.rename(hidden)  # HEAD's tree gone: git ls-tree fails
    assert day_of(waiting, repo, "a.md") == day_of(eager, repo, "a.md") == ""
    hidden.rename(stored)
    assert day_of(waiting, repo, "a.md") == ""  # each try is a whole read: not at every question
    assert day_of(eager, repo, "a.md") == "2025-03-01"


def test_the_day_is_of_the_commit_that_wrote_the_content_not_the_newest_author_time(repo: Path):
    """A commit rebased or cherry-picked onto newer work keeps its older author time: the file's
    content is that commit's, written that day."""
    git_commit(repo, "2025-10-01", {"a.md": "# A\n\nOctober\n"})
    git_commit(repo, "2025-09-01", {"a.md": "# A\n\nSeptember, rebased on top\n"})
    assert day_of(CommitDays(repo), repo, "a.md") == "2025-09-01"


def test_a_merge_dates_the_notes_it_wrote_itself_not_those_it_brought(repo: Path):
    """A merge that resolved a conflict in a note (or combined two branches' edits of it) wrote
    that note as it is now: dated by the merge. A note it took as one branch had it keeps that
    branch's commit."""
    git(repo, "checkout", "-q", "-b", "side")
    git_commit(repo, "2025-07-01", {"a.md": "# A\n\nside\n", "side.md": "# Side\n"})
    git(repo, "checkout", "-q", "main")
    git_commit(repo, "2025-08-01", {"a.md": "# A\n\nmain\n"})
    with pytest.raises(subprocess.CalledProcessError):
        git(repo, "merge", "-q", "side", day="2025-09-01")  # a conflict in a.md
    (repo / "a.md").write_text("# A\n\nmain and side\n")
    git(repo, "add", "a.md")
    git(repo, "commit", "-q", "--no-edit", day="2025-09-01")
    days = CommitDays(repo)
    assert [day_of(days, repo, rel) for rel in ("a.md", "side.md", "projects/b b.md")] == [
        "2025-09-01",
        "2025-07-01",
        "2025-06-15",
    ]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["commit", "commit", "commit", "edit", "reset"]),
            st.lists(st.sampled_from(["a.md", "b.md", "c/d.md", "c/e f.md"]), min_size=1, max_size=3, unique=True),
            st.integers(min_value=0, max_value=400),  # the author's day, in any order
        ),
        min_size=1,
        max_size=7,
    )
)
def test_the_days_agree_with_git_log_for_each_file_over_random_histories(tmp_path_factory, steps):
    """After each step (commits with author days in any order, deletions, uncommitted edits,
    resets to an older commit), each file's day is what `git log -1 -- file` says, when the file
    is as committed, and "" when it is not."""
    import datetime as dt

    repo = tmp_path_factory.mktemp("random")
    git(repo, "init", "-q")
    git_commit(repo, "2024-01-01", {"a.md": "# A\n"})
    days = CommitDays(repo, head_every_s=0)
    for n, (kind, files, offset) in enumerate(steps):
        day = (dt.date(2024, 1, 1) + dt.timedelta(days=offset)).isoformat()
        if kind == "reset":
            if git(repo, "rev-list", "--count", "HEAD").strip() != "1":
                git(repo, "reset", "-q", "--hard", "HEAD~1")
        else:
            for rel in files:
                path = repo / rel
                if path.exists() and n % 3 == 0:
                    path.unlink()  # a deletion
                else:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(f"# {rel}\n\nstep {n}\n", encoding="utf-8")
            if kind == "commit":
                git(repo, "add", "-A")
                git(repo, "commit", "-q", "--allow-empty", "-m", f"step {n}", day=day)
        dirty = set(git(repo, "status", "--porcelain", "-z", "--untracked-files=all").split("\0"))
        for rel in ["a.md", "b.md", "c/d.md", "c/e f.md"]:
            if not (repo / rel).exists():
                continue
            clean = not any(entry[3:] == rel for entry in dirty if entry)
            at = git(repo, "log", "-1", "--format=%at", "--", rel).strip()
            expected = dt.datetime.fromtimestamp(int(at), dt.UTC).date().isoformat() if at else ""
            assert day_of(days, repo, rel) == (expected if clean else ""), (rel, steps[: n + 1])


def test_closing_stops_the_command_under_way_and_runs_no_other(repo: Path, tmp_path: Path, monkeypatch):
    """A service stopping while git reads a long history: the command must not outlive it."""
    import threading

    started = tmp_path / "started"
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    slow = fake_bin / "git"  # a git that takes 10 minutes
    slow.write_text(f"#!/bin/sh\ntouch {started}\nexec sleep 600\n", encoding="utf-8")
    slow.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}:{os.environ['PATH']}")
    days = CommitDays(repo)
    asking = threading.Thread(target=day_of, args=(days, repo, "a.md"))
    asking.start()
    wait_for(started.exists, 30, "git to start")
    days.close()
    asking.join(30)
    assert not asking.is_alive()  # the command was killed, not waited for
    assert day_of(days, repo, "a.md") == ""  # and none runs after close


def test_turning_commit_days_off_or_on_makes_the_retriever_fetch_every_note_again(repo: Path, tmp_path: Path):
    """The documents change (`committed`), so the parser version the retriever compares does too."""
    from k0maru_scanner._manifest import Manifest
    from k0maru_scanner._markdown import PARSER_VERSION
    from k0maru_scanner._scanner import IgnoreRules, IncrementalScanner
    from k0maru_scanner.server import parse_document, parser_version

    def scanner(commit_days: bool) -> IncrementalScanner:
        manifest = Manifest(tmp_path / f"m-{commit_days}.sqlite", 1000)
        scanner = IncrementalScanner(repo, manifest, IgnoreRules(), 1 << 20, commit_days=commit_days)
        scanner.scan()
        return scanner

    on, off = scanner(True), scanner(False)
    assert parser_version(on) == PARSER_VERSION and parser_version(off) == f"{PARSER_VERSION}; no commit days"
    documents = [parse_document(s, "projects/b b.md") for s in (on, off)]
    assert [d.committed for d in documents if d is not None] == ["2025-06-15", ""]


def slow_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git whose `log` waits until the returned file exists (a history that takes long to read)."""
    gate = tmp_path / "gate"
    fake_bin = tmp_path / "slow-bin"
    fake_bin.mkdir()
    script = fake_bin / "git"
    script.write_text(
        f'#!/bin/sh\ncase " $* " in *" log "*) while [ ! -e "{gate}" ]; do sleep 0.05; done;; esac\n'
        f'exec {shutil.which("git")} "$@"\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}:{os.environ['PATH']}")
    return gate


def publishing_scanner(repo: Path, manifest: Path, published: list[list[str]]) -> Any:
    """A scanner of `repo` that appends the paths of each batch of journal entries to `published`."""
    from k0maru_scanner._manifest import Manifest
    from k0maru_scanner._scanner import IgnoreRules, IncrementalScanner

    return IncrementalScanner(
        repo,
        Manifest(manifest, 1000),
        IgnoreRules(),
        1 << 20,
        on_events=lambda entries: published.append([e.path for e in entries]),
    )


def test_a_long_read_holds_no_question_and_names_the_notes_it_left_undated(repo: Path, tmp_path: Path, monkeypatch):
    """A history that takes long to read (a repository of 80,000 commits took 12 s): a question
    waits for it at most wait_s, the notes asked about meanwhile get no day, and once the read
    has ended `on_days` names them (only those the commit holds)."""
    import threading

    gate = slow_git(tmp_path, monkeypatch)
    told: list[set[str]] = []
    done = threading.Event()
    days = CommitDays(repo, wait_s=0.1, on_days=lambda paths: (told.append(paths), done.set()))
    (repo / "new.md").write_text("# New\n", encoding="utf-8")
    for rel in ("a.md", "projects/b b.md", "new.md"):
        assert day_of(days, repo, rel) == ""
    assert not gate.exists()  # answered while git log still waited: no question waited for the read
    assert days.describe().startswith("reading the vault's git history")
    gate.touch()
    assert done.wait(30)
    assert told == [{"a.md", "projects/b b.md"}]  # new.md is in no commit
    assert [day_of(days, repo, rel) for rel in ("a.md", "projects/b b.md")] == ["2025-03-01", "2025-06-15"]


def test_notes_fetched_before_the_history_was_read_are_journaled_again_and_then_dated(
    repo: Path, tmp_path: Path, monkeypatch
):
    """The scanner's side: a first build fetches notes while git reads the history; those come
    without their days, and are journaled as modified once the days are known, so that the
    retriever fetches them again."""
    from k0maru_scanner import _scanner
    from k0maru_scanner.server import parse_document

    gate = slow_git(tmp_path, monkeypatch)
    monkeypatch.setattr(_scanner, "COMMIT_DAYS_WAIT_S", 0.1)
    published: list[list[str]] = []
    scanner = publishing_scanner(repo, tmp_path / "m.sqlite", published)
    scanner.scan()
    last_seq = max(e.seq for e in scanner.manifest.changes(0))
    document = parse_document(scanner, "projects/b b.md")
    assert document is not None and document.committed == ""
    gate.touch()
    wait_for(lambda: len(published) == 2, 30, "the notes journaled again")
    assert published[1] == ["projects/b b.md"]
    again = list(scanner.manifest.changes(last_seq))
    assert [(e.seq, e.path, e.hash) for e in again] == [(last_seq + 1, "projects/b b.md", document.hash)]
    document = parse_document(scanner, "projects/b b.md")
    assert document is not None and document.committed == "2025-06-15"


def test_days_owed_when_a_stop_cut_the_read_short_are_journaled_by_the_next_start(
    repo: Path, tmp_path: Path, monkeypatch
):
    """Stopped while the history was still being read: the notes fetched meanwhile have no days,
    and nothing would fetch them again (their files did not change). The manifest remembers that
    days are owed; the next start reads the history and journals every dated note again."""
    from k0maru_scanner import _scanner
    from k0maru_scanner._manifest import Manifest
    from k0maru_scanner._scanner import DAYS_OWED, IgnoreRules, IncrementalScanner
    from k0maru_scanner.server import parse_document

    slow_git(tmp_path, monkeypatch)  # its gate never opens: the read never ends
    monkeypatch.setattr(_scanner, "COMMIT_DAYS_WAIT_S", 0.1)
    first = IncrementalScanner(repo, Manifest(tmp_path / "m.sqlite", 1000), IgnoreRules(), 1 << 20)
    first.scan()
    document = parse_document(first, "a.md")
    assert document is not None and document.committed == ""
    assert first.manifest.meta(DAYS_OWED) == "1"
    assert first.commit_days is not None
    first.commit_days.close()  # the stop: git killed
    first.manifest.close()
    monkeypatch.undo()  # git reads at once now

    published: list[list[str]] = []
    second = publishing_scanner(repo, tmp_path / "m.sqlite", published)
    assert second.commit_days is not None
    second.commit_days.warm()  # as the server does when days are owed
    wait_for(lambda: published, 30, "the dated notes journaled again")
    assert sorted(published[0]) == ["a.md", "projects/b b.md", "projects/ä.md"]
    assert second.manifest.meta(DAYS_OWED) == ""
    document = parse_document(second, "a.md")
    assert document is not None and document.committed == "2025-03-01"


def test_the_days_read_are_kept_and_the_next_process_lists_only_new_commits(repo: Path, tmp_path: Path):
    """A long history (git's own: 82,000 commits, 11 s of CPU) was listed whole at every start."""
    saved = tmp_path / "data" / "commit-days.json"
    saved.parent.mkdir()
    first = CommitDays(repo, saved=saved)
    assert day_of(first, repo, "projects/b b.md") == "2025-06-15" and first.commits_read == 2
    first.close()
    git_commit(repo, "2025-10-01", {"a.md": "# A\n\npulled while stopped\n"})
    second = CommitDays(repo, saved=saved)
    assert day_of(second, repo, "a.md") == "2025-10-01"
    assert day_of(second, repo, "projects/b b.md") == "2025-06-15"  # from the kept days
    assert day_of(second, repo, "projects/ä.md") == "2025-03-01"
    assert second.commits_read == 1  # the new commit only
    second.close()
    third = CommitDays(repo, saved=saved)
    assert day_of(third, repo, "projects/ä.md") == "2025-03-01" and third.commits_read == 0
    third.close()
    # history rewritten while stopped: the kept head is not an ancestor, the whole history is read
    git(repo, "reset", "-q", "--hard", "HEAD~2")
    fourth = CommitDays(repo, saved=saved)
    assert day_of(fourth, repo, "projects/b b.md") == "2025-03-01" and fourth.commits_read == 1
    fourth.close()
    # another repository's days, or a damaged file, are not taken
    other = tmp_path / "other"
    shutil.copytree(repo, other)
    elsewhere = CommitDays(other, saved=saved)
    assert day_of(elsewhere, other, "a.md") == "2025-03-01" and elsewhere.commits_read == 1
    saved.write_text("{not json")
    fifth = CommitDays(repo, saved=saved)
    assert day_of(fifth, repo, "a.md") == "2025-03-01" and fifth.commits_read == 1
