"""CommitDays: the day each file of a vault kept in git was last committed.

A team's vault is cloned, pulled and checked out, and each of those stamps the files it writes with
the day it ran: after a clone every note is "modified today". For a file that is just as the
current commit holds it (the same blob), the day of the last commit that changed it says when it
was written. A file edited since, or never committed, has no such day (its mtime says it).

Read with the `git` command: `rev-parse` (where the repository is, and its HEAD), `ls-tree` (each
file's blob at HEAD) and `log --name-only` (the commits that changed each file; only the new ones
when HEAD moves forward). In a shallow clone, a file last changed before the history it holds has
no day (its oldest commits list every file as added).

No git, no repository, a repository git refuses to read (another user's, `safe.directory`), an
empty one, or a command that fails: no days, said once in the log, and tried again a minute
later. A command that runs past `timeout_s` (a history too long to wait for): no days from this
process. Nothing here writes to the repository or runs its hooks or filters.

With `saved` (a file in the service's data folder), the days read are kept there, and the next
process reads only the commits since: a long history (git's own, 82,000 commits, takes 11 s of
CPU to list) is listed once, not at every start.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ._vault import utc_day

log = logging.getLogger(__name__)

# Options for every git command k0maru runs in a vault: paths as bytes (no C-style quoting), no
# pager, no file-system monitor hook, no signature checks (gpg): a repository's own settings run
# no program here. (`git_env` drops the caller's GIT_ variables and takes no optional locks.)
GIT_SAFE = (
    "git",
    "--no-pager",
    "-c",
    "core.quotePath=false",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "log.showSignature=false",
)
_GIT = (*GIT_SAFE, "--literal-pathspecs")  # pathspecs taken literally (a folder named `*` or `:x`)


def git_env() -> dict[str, str]:
    """The environment of a git command run in a vault: none of the caller's GIT_ variables (a
    hook's GIT_DIR would point elsewhere), no optional locks (a read never blocks the user's
    git), no object fetched from a partial clone's remote."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_NO_LAZY_FETCH"] = "1"
    return env


_LOCATE_EVERY_S = 60.0  # how often a vault that is not (yet) in a repository is looked at again
# How often HEAD is looked at (three system calls): a pull writes its files before it moves HEAD,
# and a note fetched in between is dated by its file, as one edited would be.
_HEAD_EVERY_S = 0.25


def _blob_id(data: bytes, sha256: bool) -> str:
    """The id git gives a file's content (a blob): SHA-1, or SHA-256 in a repository that uses it."""
    digest = hashlib.sha256() if sha256 else hashlib.sha1()  # git's object id, not a security check
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


class _Repository:
    """Where the vault lies in its repository, and what tells that HEAD moved."""

    def __init__(self, git_dir: Path, common_dir: Path, prefix: str) -> None:
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.prefix = prefix  # the vault's folder in the repository, "" or ending with "/"

    def shallow_commits(self) -> list[str]:
        """The commits a shallow clone cut its history at (none for a whole clone)."""
        try:
            return (self.common_dir / "shallow").read_text("ascii", "replace").split()
        except OSError:
            return []

    def head_stamp(self) -> tuple[object, ...]:
        """Changes whenever HEAD may point at another commit: HEAD's text and the stat of the
        branch it names and of the packed refs (a commit, a pull, a checkout, a reset)."""
        stamp: list[object] = []
        try:
            head = (self.git_dir / "HEAD").read_bytes()
        except OSError:
            return ("no HEAD",)
        stamp.append(head)
        if head.startswith(b"ref: "):
            ref = head[5:].strip().decode("utf-8", "surrogateescape")
            candidates = [self.common_dir / ref, self.git_dir / ref, self.common_dir / "packed-refs"]
        else:
            candidates = []
        for path in candidates:
            try:
                st = path.stat()
                stamp.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                stamp.append(None)
        return tuple(stamp)


class CommitDays:
    """rel path → the UTC day of the last commit that changed it, for files as HEAD holds them.

    Thread-safe: the scanner's gRPC threads ask at once. The first question after HEAD moves
    starts a read of the repository in a background thread (the whole history once; then only the
    commits since the last HEAD). A question waits for that read at most `wait_s` after it
    started (None: until it ends); a note asked about after that gets no day (`on_undated` is
    called, once per read, when the first is), and once the read has ended `on_days` is called
    with every such path: their days are known now."""

    def __init__(
        self,
        vault: Path,
        timeout_s: float = 60.0,
        head_every_s: float = _HEAD_EVERY_S,
        retry_s: float = 60.0,
        wait_s: float | None = None,
        on_days: Callable[[set[str]], None] | None = None,
        on_undated: Callable[[], None] | None = None,
        saved: Path | None = None,
    ) -> None:
        self.vault = vault
        self.saved = saved  # where the days read are kept for the next process (`_load`, `_save`)
        self.timeout_s = timeout_s
        self.head_every_s = head_every_s
        self.retry_s = retry_s  # after a failed read: HEAD is looked at again this much later
        self.wait_s = wait_s
        self.on_days = on_days
        self.on_undated = on_undated
        self._lock = threading.Lock()  # the days and the bookkeeping below
        self._repo: _Repository | None = None
        self._located_at = -_LOCATE_EVERY_S
        self._stamp: tuple[object, ...] | None = None
        self._stamped_at = -head_every_s
        self._head = ""
        self._sha256 = False
        self._last_commit_s: dict[str, int] = {}  # repository path → newest author time (Unix s)
        self._blobs: dict[str, str] = {}  # vault-relative path → its blob at HEAD
        self._read_done = threading.Event()  # no read under way
        self._read_done.set()
        self._read_started = 0.0
        self._look_again = False  # HEAD moved during the read under way
        self._asked: set[str] = set()  # asked about while a read was under way past wait_s
        self._owe_all = False  # `owe_all`
        self._failed: set[str] = set()  # what went wrong, each said once
        self.problem = ""  # why there are no days now (the last failure said); "" while there are
        self._stderr = ""  # the last failed command's
        self._gave_up = False  # a command ran past timeout_s: the history is too long to wait for
        self._closed = False
        self._running: subprocess.Popen[bytes] | None = None  # the command under way
        self.commits_read = 0  # by `git log`, in all (a long history is listed once: `saved`)

    def day(self, rel: str, data: bytes) -> str:
        """The day (YYYY-MM-DD, UTC, the author's time) of the last commit that changed `rel`,
        when `data` is its content at HEAD; "" when it is not (edited, not committed, no git),
        or while the days are being read (see `on_days`)."""
        with self._lock:
            self._look()
            waiting = not self._read_done.is_set()
            left = None if self.wait_s is None else self._read_started + self.wait_s - time.monotonic()
        if waiting and not self._read_done.wait(None if left is None else max(0.0, left)):
            with self._lock:
                first = not self._asked
                undated = not self._read_done.is_set()
                if undated:
                    self._asked.add(rel)
            if undated:
                if first and self.on_undated is not None:
                    self.on_undated()
                return ""
        with self._lock:
            blob = self._blobs.get(rel)
            if blob is None or _blob_id(data, self._sha256) != blob:
                return ""
            assert self._repo is not None
            unix_s = self._last_commit_s.get(self._repo.prefix + rel)
            return utc_day(unix_s * 1_000_000_000) if unix_s is not None else ""

    def owe_all(self) -> None:
        """Pass every dated path to `on_days` once the next read ends: the notes fetched during a
        read that a stop cut short (the last process's) have no days, and which they were is
        not known here."""
        with self._lock:
            self._owe_all = True

    def warm(self) -> None:
        """Start reading the repository now (a first start: every note is about to be asked for),
        so that the first questions find the history read or being read."""
        with self._lock:
            self._look()

    @property
    def head(self) -> str:
        """The commit the days are read from ("" when none)."""
        return self._head

    def describe(self) -> str:
        """For a status page: which commit the days come from, or why there are none ("" when the
        vault is not in git, or no note was asked for yet)."""
        if self.problem:
            return self.problem
        if not self._read_done.is_set() and not self._head:
            return f"reading the vault's git history ({time.monotonic() - self._read_started:.0f} s so far)"
        if self._head:
            return (
                f"notes that name no date go by their last commit (read at {self._head[:12]}, {len(self._blobs)} files)"
            )
        return ""

    def _look(self) -> None:
        """Under the lock: when HEAD may have moved, start a read in the background."""
        if self._gave_up or self._closed:
            return
        now = time.monotonic()
        if self._repo is None:
            if now - self._located_at < _LOCATE_EVERY_S:
                return
            self._located_at = now
            self._repo = self._locate()
            if self._repo is None:
                return
        if now - self._stamped_at < self.head_every_s:
            return
        self._stamped_at = now
        stamp = self._repo.head_stamp()
        if stamp == self._stamp:
            return
        self._stamp = stamp
        if not self._read_done.is_set():  # read again once this read ends
            self._look_again = True
            return
        self._read_done.clear()
        self._read_started = now
        threading.Thread(target=self._read_until_current, name="commit-days", daemon=True).start()

    def _read_until_current(self) -> None:
        """The background read: HEAD's blobs and days, again while HEAD moved meanwhile; then
        `on_days` with the paths asked about in the meantime."""
        while True:
            head = self._run("rev-parse", "-q", "--verify", "HEAD^{commit}", quiet=True)
            head = head.strip() if head is not None else ""
            if head != self._head:
                try:
                    read = self._read(head)
                except _GitFailed as exc:  # read again retry_s later (each try costs a whole read)
                    if not (self._gave_up or self._closed):  # those are said already
                        self._say(str(exc))
                    read = ("", {}, {}, False)
                    with self._lock:
                        self._stamp = None
                        self._stamped_at = time.monotonic() + self.retry_s - self.head_every_s
                        self._look_again = False
                with self._lock:
                    self._head, self._blobs, self._last_commit_s, self._sha256 = read
                    if read[0]:
                        self.problem = ""
            with self._lock:
                if self._look_again and not (self._gave_up or self._closed):
                    self._look_again = False
                    continue
                owed = set(self._blobs) if self._owe_all else self._asked
                asked = {rel for rel in owed if rel in self._blobs} if self._head else set()
                self._asked = set()
                if self._head:
                    self._owe_all = False
                self._read_done.set()
            break
        if asked and self.on_days is not None:
            try:
                self.on_days(asked)
            except Exception:  # the caller's: said, and the days stay read
                log.exception("commit days: passing on the days of %d notes failed", len(asked))

    def _locate(self) -> _Repository | None:
        out = self._run("rev-parse", "--absolute-git-dir", "--git-common-dir", "--show-prefix", quiet=True)
        if out is None:
            if self._stderr and "not a git repository" not in self._stderr:  # one git will not read
                self._say(f"git cannot read the vault's repository: {self._stderr}")
            return None
        lines = out.split("\n")
        if len(lines) < 3:
            return None
        git_dir = Path(lines[0])
        common = Path(lines[1])
        return _Repository(git_dir, common if common.is_absolute() else self.vault / common, lines[2])

    def _read(self, head: str) -> tuple[str, dict[str, str], dict[str, int], bool]:
        """(head, the blobs at `head`, the day of the last commit that changed each, SHA-256 or
        not), read from the commits since the last head read (all when the last is not an
        ancestor: a rebase, a reset, another branch)."""
        assert self._repo is not None
        prefix = self._repo.prefix
        if not head:  # a repository without commits yet
            return "", {}, {}, False
        tree = self._run("ls-tree", "-r", "-z", "--full-name", head)
        if tree is None:
            raise _GitFailed("git ls-tree failed")
        blobs: dict[str, str] = {}
        sha256 = False
        for entry in tree.split("\0"):
            meta, _, path = entry.partition("\t")
            parts = meta.split(" ")
            if len(parts) != 3 or parts[1] != "blob" or not path.startswith(prefix):
                continue
            blobs[path[len(prefix) :]] = parts[2]
            sha256 = len(parts[2]) == 64
        since, times = (self._head, dict(self._last_commit_s)) if self._head else self._load()
        if since and self._run("merge-base", "--is-ancestor", since, head, quiet=True) is None:
            since, times = "", {}
        revisions = f"{since}..{head}" if since else head
        # newest first, no commit before its descendants: a file's first commit here is the last
        # that changed it, whose author's time says when its content was written (not the newest
        # author time: a commit rebased or cherry-picked later may carry an older one). A merge
        # lists the files it left unlike every parent (`-c`): a conflict resolved, or two
        # branches' edits combined, is content first written by the merge.
        out = self._run(
            "log",
            "-z",
            "-c",
            "--date-order",
            "--format=%x01%H %at",
            "--name-only",
            "--no-renames",
            revisions,
            "--",
            ".",
        )
        if out is None:
            raise _GitFailed("git log failed")
        # a shallow clone's oldest commits list every file as added by them: those are not days
        shallow = set(self._repo.shallow_commits())
        seen: set[str] = set()
        for record in out.split("\x01")[1:]:
            header, _, names = record.partition("\0")
            sha, _, stamp = header.partition(" ")
            try:
                unix_s = int(stamp)
            except ValueError:
                continue
            for name in names.lstrip("\n").split("\0"):
                if name and name not in seen:
                    seen.add(name)
                    if sha in shallow:
                        times.pop(name, None)
                    else:
                        times[name] = unix_s
        commits = out.count("\x01")
        log.info("commit days read at %s: %d files, %d commits listed", head[:12], len(blobs), commits)
        self.commits_read += commits
        if head != since:
            self._save(head, times)
        return head, blobs, times, sha256

    def _load(self) -> tuple[str, dict[str, int]]:
        """The head and days the last process kept (`saved`) for this repository and folder; ("",
        {}) when there are none, they are another repository's, or the file cannot be read."""
        if self.saved is None or self._repo is None:
            return "", {}
        try:
            kept = json.loads(self.saved.read_bytes())
            if kept.get("repository") != str(self._repo.common_dir) or kept.get("prefix") != self._repo.prefix:
                return "", {}
            times = {str(k): int(v) for k, v in kept["times"].items()}
            return str(kept["head"]), times
        except FileNotFoundError:
            return "", {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("commit days kept in %s not read (%s): the whole history is read", self.saved, exc)
            return "", {}

    def _save(self, head: str, times: dict[str, int]) -> None:
        """Keep `head` and its days for the next process (replaced whole: a crash leaves the old)."""
        if self.saved is None or self._repo is None:
            return
        kept = {"repository": str(self._repo.common_dir), "prefix": self._repo.prefix, "head": head, "times": times}
        part = self.saved.with_name(self.saved.name + ".part")
        try:
            part.write_text(json.dumps(kept, separators=(",", ":")), "ascii")  # a name's lone surrogates escaped
            os.replace(part, self.saved)
        except OSError as exc:
            log.warning("commit days not kept in %s (%s): the next start reads the whole history", self.saved, exc)

    def _run(self, *args: str, quiet: bool = False) -> str | None:
        """A git command's output (paths decoded as the scanner names files), or None when it fails."""
        self._stderr = ""
        if self._closed:
            return None
        try:
            proc = subprocess.Popen(
                [*_GIT, *args],
                cwd=self.vault,
                env=git_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except FileNotFoundError:
            self._say("git is not installed: notes are dated by their files, not by their commits")
            return None
        except OSError as exc:
            self._say(f"git {args[0]}: {exc}")
            return None
        self._running = proc
        try:
            stdout, stderr = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self._gave_up = True  # every question would wait as long again
            self._say(
                f"git {args[0]} ran past {self.timeout_s:g} s: notes are dated by their files, not by their commits"
            )
            return None
        finally:
            self._running = None
        if proc.returncode != 0:
            self._stderr = stderr.decode("utf-8", "replace").strip()[:300]
            if not quiet and not self._closed:
                self._say(f"git {args[0]}: {self._stderr}")
            return None
        return stdout.decode("utf-8", "surrogateescape")

    def close(self) -> None:
        """Stop the git command under way (a long history being read when the service stops: it
        would outlive it), and run no other."""
        self._closed = True
        if (proc := self._running) is not None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

    def _say(self, what: str) -> None:
        self.problem = what
        if what not in self._failed:
            self._failed.add(what)
            log.warning("%s", what)


class _GitFailed(Exception):
    """A git command needed for the days failed (said in the log; the days are dropped)."""
