"""IncrementalScanner: the three-level decision per file, rename detection, one transaction.

Per file: unknown path → added; same size and mtime_ns → unchanged, with no read at all;
otherwise read and xxh3-64 it: same hash → only the manifest's mtime moves (no event), else
modified. Paths gone from disk → deleted, unless an added path has the same hash, in which
case the pair is one rename. Files that cannot be indexed (too large, binary, invalid UTF-8,
unreadable, vanished) are recorded with the reason and never stop a scan.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import xxhash

from k0maru.v1 import common_pb2
from k0maru_common import (
    GUESSED_CODECS,
    GUESSED_ENCODINGS,
    IGNORED_FOLDERS,
    CannotWrite,
    CommitDays,
    DependencyFailed,
    generated_folder,
    guess_legacy,
    read_at_most,
    read_text,
)

from ._gitignore import GitIgnores
from ._journals import JournalFormat
from ._manifest import Batch, FileRecord, JournalEntry, Manifest, mtime_ns_of
from ._markdown import opaque_size
from ._tool_settings import ToolExcludes, VaultToolSettings

log = logging.getLogger(__name__)

EXTENSIONS = (".md", ".markdown", ".txt", ".canvas")  # .canvas: Obsidian's boards (`_canvas.py`)
FRESH_MAX_BYTES = 64 << 20  # notes read by scans and kept for the fetches that follow them
FRESH_KEEP_S = 120.0
# A note recorded less than this after its mtime is read again by the next scan, size and mtime
# equal or not: file systems stamp mtimes in ticks (FAT and exFAT 2 s, HFS+ and many network
# shares 1 s, ext4 a clock tick of a few ms), and an edit of the same size within the tick of the
# one recorded leaves both as they were: it was missed until the note changed again (git's
# "racy" entries, the same fix). An mtime ahead of the clock is racy until the clock passes it (a
# network share's clock ahead of ours), but not one over FUTURE_NS ahead: an archive unpacked in
# another time zone (zip keeps local times) or a file from 2099 would be read at every scan, and
# an edit there moves its mtime to now anyway.
RACY_NS = 2_000_000_000
FUTURE_NS = 3600 * 1_000_000_000
ADDED, MODIFIED, DELETED, RENAMED = (
    common_pb2.CHANGE_KIND_ADDED,
    common_pb2.CHANGE_KIND_MODIFIED,
    common_pb2.CHANGE_KIND_DELETED,
    common_pb2.CHANGE_KIND_RENAMED,
)


@dataclass(frozen=True)
class IgnoreRules:
    folders: frozenset[str] = frozenset(IGNORED_FOLDERS)
    prefixes: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()

    def skip_dir(self, name: str, rel: str = "") -> bool:
        """A folder left out: hidden, or named in `folders` by its name or its vault-relative path."""
        return name.startswith(".") or name in self.folders or rel in self.folders

    def wants_file(self, name: str) -> bool:
        if name.startswith(".") or not name.lower().endswith(EXTENSIONS):
            return False
        stem = name.rsplit(".", 1)[0]
        if any(name.startswith(p) for p in self.prefixes):
            return False
        return not any(stem.endswith(s) or name.endswith(s) for s in self.suffixes)


@dataclass
class ScanResult:
    added: int = 0
    modified: int = 0
    deleted: int = 0
    renamed: int = 0
    unchanged: int = 0
    skipped: int = 0
    ms: float = 0.0
    entries: tuple[JournalEntry, ...] = ()


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


class VaultUnavailable(DependencyFailed):
    """The vault folder cannot be listed, or is a drive's empty mount point now: a scan changes
    nothing."""


class ContentError(Exception):
    """A file that cannot be indexed; the message is the reason recorded in the manifest."""


# A note may be this many times `max_file_bytes` when the rest is opaque data (pasted images as
# data: URIs, which are not indexed): its text is what the limit is for. Larger files are not read.
DATA_ALLOWANCE = 16
# How long a fetch waits for the vault's git history to be read (a note fetched later is dated
# once it is: `IncrementalScanner.redate`). A first start in a repository of 80,000 commits
# waited 12 s for it before the first note was searchable.
COMMIT_DAYS_WAIT_S = 1.0
DAYS_OWED = "days_owed"  # manifest meta: notes were fetched without their commits' days
MOUNTS = "mounts"  # manifest meta: the folders (vault-relative, "" for the vault) that were mount points
ABOVE = ".."  # the folder that holds the vault, among the walk's devices
UNMOUNTED = "was a mount point and holds no notes now (an unmounted drive or network share?)"
STUCK_SCAN_S = 60.0  # a scan this long is said to wait on the vault's file system (10,000 notes: ~50 ms)


def _above(prefix: str) -> str:
    """The prefix of the folder that holds the folder of `prefix` ("a/b/" → "a/", "a/" → "", "" → ABOVE)."""
    return prefix[: prefix.rstrip("/").rfind("/") + 1] if prefix else ABOVE


def read_note_text(path: Path, max_bytes: int) -> tuple[bytes, str, str]:
    """Bytes and decoded text of a note, and "" or how its text was read when not as UTF-8
    (`read_text`: a guessed legacy encoding, damaged bytes); or ContentError with a reason.
    `max_bytes` bounds the note's text; opaque data may make the file up to `DATA_ALLOWANCE`
    times larger."""
    try:
        data = read_at_most(path, DATA_ALLOWANCE * max_bytes + 1)
    except FileNotFoundError as exc:
        raise ContentError("vanished during the scan") from exc
    except OSError as exc:
        raise ContentError(f"unreadable: {exc.strerror or exc}") from exc
    if len(data) > DATA_ALLOWANCE * max_bytes:
        raise ContentError(too_large(len(data), max_bytes))
    try:
        text, how = read_text(data)
    except UnicodeDecodeError as exc:
        if exc.encoding == "utf-8" and b"\x00" in data:
            raise ContentError("binary content (NUL bytes)") from exc
        if exc.encoding == "utf-8":
            raise ContentError(
                f"invalid UTF-8 at byte {exc.start}, and not text in {GUESSED_ENCODINGS} either"
            ) from exc
        raise ContentError(f"invalid {_ENCODINGS.get(exc.encoding, exc.encoding)} at byte {exc.start}") from exc
    if "\x00" in text:
        raise ContentError("binary content (NUL bytes)")
    if len(data) > max_bytes and (size := len(data) - opaque_size(text)) > max_bytes:
        raise ContentError(f"too large: {size} bytes of text > {max_bytes} (K0_MAX_FILE_BYTES)")
    return data, text, how


_ENCODINGS = {  # behind a byte order mark
    "utf-16-le": "UTF-16",
    "utf-16-be": "UTF-16",
    "utf-32-le": "UTF-32",
    "utf-32-be": "UTF-32",
}


def too_large(size: int, max_bytes: int) -> str:
    return f"too large: {size} bytes > {DATA_ALLOWANCE} × {max_bytes} (K0_MAX_FILE_BYTES) are not read"


UNDECODABLE_NAME = "file name is not valid UTF-8 (listed with \\x escapes); rename the file to index it"
# No note under such a folder could be indexed, and listing it would be worse than useless: the
# OS reports the listing (an open) to the watch on its parent under a name the watcher cannot
# decode, and the watcher would fail at every scan.
UNDECODABLE_FOLDER = "folder name is not valid UTF-8 (listed with \\x escapes); the notes in it are not read: rename the folder to index them"
SYMLINKED_FOLDER = "a symlink to a folder, not followed: its notes are not read (move or mount the folder into the vault to index them)"


# how convmv (Perl's Encode) spells the codecs `guess_legacy` reads with, where it is not the
# codec's own name with dashes (Encode's core has no GB18030; GBK is its subset that Windows wrote)
_CONVMV = {"gb18030": "gbk"}


def legacy_name(name: str) -> str:
    """For a name that is not UTF-8: what it reads as in the legacy encoding its bytes look like
    (a zip made on Chinese Windows names its files in GBK, and unzip writes those bytes as
    they are), and the command that renames such files; "" when no encoding reads it."""
    guessed = guess_legacy(os.fsencode(name))
    if guessed is None:
        return ""
    text, encoding = guessed
    return (
        f" (in {encoding} it reads {text!r}: a zip made on Windows? "
        f"`convmv -r -f {_convmv(encoding)} -t utf-8 --notest <vault>` renames such files)"
    )


def _convmv(encoding: str) -> str:
    codec = GUESSED_CODECS[encoding]
    return _CONVMV.get(codec, codec.replace("_", "-"))


def safe_name(rel: str) -> str:
    """`rel` itself when it is valid UTF-8; else its undecodable bytes written as `\\xNN`.

    os.scandir hands undecodable bytes over as lone surrogates, which SQLite, protobuf and
    JSON all refuse; this spelling is printable, stable across scans, and tells the user
    which bytes to fix.
    """
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return rel


class IncrementalScanner:
    def __init__(
        self,
        vault: Path,
        manifest: Manifest,
        rules: IgnoreRules,
        max_file_bytes: int,
        on_events: Callable[[list[JournalEntry]], None] | None = None,
        tool_excludes: bool = True,
        commit_days: bool = True,
        gitignore: bool = True,
        commit_days_saved: Path | None = None,
    ) -> None:
        """`commit_days_saved`: where the days read from git are kept for the next start."""
        self.vault = vault.resolve()
        self.manifest = manifest
        self.rules = rules
        # what Obsidian's Excluded files and Logseq's :hidden leave out, and how Logseq names its
        # journals: read again when their files change
        self._tool_settings = VaultToolSettings(self.vault, tool_excludes)
        settings = self._tool_settings.current()
        self.excluded: ToolExcludes = settings.excludes  # as the last walk applied them
        self.journals: JournalFormat = settings.journals  # notes are parsed with these
        self.max_file_bytes = max_file_bytes
        # in a vault inside a git repository: the folders its .gitignore files ignore that hold
        # no notes (a virtual environment, a build), which the walk leaves out
        self.git_ignores = GitIgnores(self.vault, rules.wants_file, gitignore)
        # in a vault kept in git: the day each note as committed was written (`Document.committed`)
        # (a question waits at most COMMIT_DAYS_WAIT_S for the history's read; the notes fetched
        # after that are journaled again once it ends, `redate`)
        self.commit_days = (
            CommitDays(
                self.vault,
                wait_s=COMMIT_DAYS_WAIT_S,
                on_days=self.redate,
                on_undated=self.owe_days,
                saved=commit_days_saved,
            )
            if commit_days
            else None
        )
        # notes were fetched without their days and not journaled again yet (kept in the manifest)
        self.days_owed = self.commit_days is not None and bool(manifest.meta(DAYS_OWED))
        if self.commit_days is not None and self.days_owed:  # the last process stopped first
            self.commit_days.owe_all()
        self._on_events = on_events
        self._lock = threading.Lock()
        # bytes recent scans read (added or modified notes), until GetDocuments takes them: a
        # cold start then reads each note once, not once to hash and again to parse. Bounded in
        # bytes, and dropped by the first scan FRESH_KEEP_S after they were read.
        self._fresh: dict[str, tuple[int, int, bytes]] = {}
        self._fresh_bytes = 0
        self._fresh_since = 0.0
        self._fresh_lock = threading.Lock()
        # every folder the last walk listed: its inode (stat's: a listing's d_ino differs on
        # overlayfs and at mount points) → its path; the watcher checks the OS watches each
        self.folders: dict[int, str] = {}
        # folders that were mount points when notes were indexed from them (vault-relative
        # prefixes ending in "/", "" for the vault itself): one that is a plain folder without
        # notes now is a drive that was unmounted, not every note on it deleted
        self._mounts = frozenset(json.loads(manifest.meta(MOUNTS) or "[]"))
        self.problem = ""  # why the last scan could not record its changes (a full disk, an unmounted vault)
        self._scan_started: float | None = None  # when the scan under way began (`stuck`)
        self.out_of_sight: dict[str, str] = {}  # the last scan's folders whose notes are kept as they were, and why
        self.refused: frozenset[str] = frozenset()  # those of them that cannot be listed for their permissions
        # The first scan of a process examines the files the manifest holds as skipped again,
        # changed or not: a raised K0_MAX_FILE_BYTES, or a newer reader (UTF-16 notes), indexes
        # what the last process refused.
        self._skipped_examined = False

    def walk(self) -> tuple[dict[str, tuple[os.stat_result, str]], dict[str, str]]:
        """Every candidate note under the vault: its stat, and why it cannot be indexed ("" when it
        can); and the folders out of sight (as path prefixes ending in "/", with why): what the
        manifest knows under them is not gone, only out of sight.

        Symlinked folders are not followed. What the vault's own tool settings exclude
        (`_tool_settings.py`) is not listed: a note it leaves out is gone from the index; nor are
        generated folders (a virtual environment, a tagged cache), nor those git ignores that
        hold no notes (`_gitignore.py`). A name that is not valid UTF-8 is listed under its
        `safe_name` and skipped: the manifest, the journal and every gRPC message carry UTF-8 only;
        a folder so named is one such entry, and is not listed.
        VaultUnavailable when the vault folder itself cannot be listed (an unmounted drive, a
        renamed folder): that is not every note deleted. Nor is a folder that was a mount point
        and is a plain folder without notes now (`_unmounted`).
        """
        settings = self._tool_settings.current()
        self.excluded = settings.excludes
        self.journals = settings.journals
        while True:
            self.git_ignores.begin_walk()
            found, unlisted, devices = self._walk_levels()
            if not self.git_ignores.end_walk():
                break
            # a .gitignore changed since the answers the walk used were given: walk again
        unlisted |= self._unmounted(found, devices)
        return found, unlisted

    def _unmounted(self, found: dict[str, tuple[os.stat_result, str]], devices: dict[str, int]) -> dict[str, str]:
        """The folders that were mount points when their notes were indexed and are plain
        folders holding no notes now: a drive unmounted (or a network share dropped) leaves its
        empty mount point behind, and its notes are out of sight, not deleted. VaultUnavailable
        when that folder is the vault. Records the mount points the walk listed (the folders on
        another device than the folder above) with those still out of sight."""
        mounts = {
            prefix
            for prefix, device in devices.items()
            if prefix != ABOVE and device != devices.get(_above(prefix), device)
        }
        held: dict[str, str] = {}
        for prefix in sorted(self._mounts - mounts):
            if prefix not in devices or any(path.startswith(prefix) for path in found):
                continue  # gone (its notes go too), or a plain folder that holds notes now
            if not any(path.startswith(prefix) and record.indexed for path, record in self.manifest.files.items()):
                continue  # nothing indexed to keep
            if not prefix:
                raise VaultUnavailable(
                    f"the vault folder {safe_name(str(self.vault))} {UNMOUNTED}; the index is kept as it was "
                    "until its notes are back"
                )
            if prefix not in self.out_of_sight:  # said once, not at each scan
                log.warning(
                    "%s in the vault %s; its notes stay indexed as they were until they are back", prefix, UNMOUNTED
                )
            held[prefix] = UNMOUNTED
        recorded = frozenset(mounts | set(held))
        if recorded != self._mounts:
            self.manifest.set_meta(MOUNTS, json.dumps(sorted(recorded)))
            self._mounts = recorded
        return held

    def _walk_levels(self) -> tuple[dict[str, tuple[os.stat_result, str]], dict[str, str], dict[str, int]]:
        """`walk`, one level of folders at a time: git is asked about a level's folders at once
        (`GitIgnores`), before the next level is listed. Also each listed folder's device, by
        its prefix ("" for the vault, ABOVE for the folder that holds it)."""
        found: dict[str, tuple[os.stat_result, str]] = {}
        unlisted: dict[str, str] = {}  # the folders that cannot be listed, and why
        refused: set[str] = set()  # for their permissions
        listed: dict[int, str] = {}
        devices: dict[str, int] = {}
        with contextlib.suppress(OSError):
            devices[ABOVE] = os.stat(self.vault.parent).st_dev
        excluded = self.excluded
        level = [(str(self.vault), "")]
        while level:
            folders: list[tuple[str, str]] = []  # (path, vault-relative) of the next level
            for folder, prefix in level:
                try:
                    entries = list(os.scandir(folder))
                    folder_stat = os.stat(folder)
                except OSError as exc:
                    if not prefix:
                        raise VaultUnavailable(
                            f"the vault folder {safe_name(folder)} cannot be listed ({exc.strerror or exc}); "
                            "the index is kept as it was until it can"
                        ) from exc
                    if safe_name(prefix) not in self.out_of_sight:  # said once, not at each scan
                        log.warning(
                            "cannot list %s: %s; its notes stay indexed as they were",
                            safe_name(folder),
                            exc.strerror or exc,
                        )
                    unlisted[safe_name(prefix)] = f"cannot be listed ({exc.strerror or exc})"
                    if isinstance(exc, PermissionError):
                        refused.add(safe_name(prefix))
                    continue
                listed[folder_stat.st_ino] = folder
                devices[prefix] = folder_stat.st_dev
                if prefix and generated_folder(entries):
                    continue  # a virtual environment or a cache: nobody's notes
                for entry in entries:
                    rel = prefix + entry.name
                    try:
                        if entry.name == ".gitignore":
                            self.git_ignores.saw_ignore_file(rel, entry.stat(follow_symlinks=False))
                        if entry.is_dir(follow_symlinks=False):
                            if self.rules.skip_dir(entry.name, rel) or (excluded and excluded.excludes_folder(rel)):
                                continue
                            if safe_name(entry.name) != entry.name:  # one record says why, not listed
                                found.setdefault(
                                    safe_name(rel),
                                    (entry.stat(follow_symlinks=False), UNDECODABLE_FOLDER + legacy_name(entry.name)),
                                )
                                continue
                            folders.append((entry.path, rel))
                            continue
                        st, problem = self._inspect(entry)
                    except OSError:
                        continue  # vanished during the walk
                    if st is None or (excluded and excluded.excludes(rel)):
                        continue
                    safe = safe_name(rel)
                    if safe == rel:
                        found[rel] = (st, problem)
                    else:  # a real file spelled like the escaped name keeps the key
                        found.setdefault(safe, (st, problem or UNDECODABLE_NAME + legacy_name(entry.name)))
            skipped = self.git_ignores.skipped(folders)
            level = [(path, rel + "/") for path, rel in folders if rel not in skipped]
        self.folders = listed
        self.refused = frozenset(refused)
        return found, unlisted, devices

    def _inspect(self, entry: os.DirEntry[str]) -> tuple[os.stat_result | None, str]:
        """(stat, why it cannot be indexed) for a candidate note or a hazard worth recording;
        (None, "") for anything else. Symlink loops and special files (FIFOs, sockets,
        devices) are recorded whatever their name: reading them would hang or fail."""
        if entry.name.startswith("."):
            return None, ""
        wanted = self.rules.wants_file(entry.name)
        if entry.is_symlink():
            try:
                st = entry.stat(follow_symlinks=True)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    return entry.stat(follow_symlinks=False), "symlink loop"
                if wanted and isinstance(exc, FileNotFoundError):
                    return entry.stat(follow_symlinks=False), "broken symlink: its target does not exist"
                return None, ""
        elif entry.is_file(follow_symlinks=False):
            return (entry.stat(follow_symlinks=False), "") if wanted else (None, "")
        else:
            st = entry.stat(follow_symlinks=False)
        if stat.S_ISREG(st.st_mode):
            return (st, "") if wanted else (None, "")
        if stat.S_ISDIR(st.st_mode):  # not followed (its notes would be indexed twice, or from outside the
            # vault); said, so that a folder linked in to be searched is not missing without a word
            return entry.stat(follow_symlinks=False), SYMLINKED_FOLDER
        return st, f"not a regular file ({_special_kind(st.st_mode)})"

    def scan(self, force_full: bool = False, recheck: Collection[str] = ()) -> ScanResult:
        """CannotWrite when the manifest's disk is full, VaultUnavailable when the vault cannot be
        listed or is an empty mount point: nothing is recorded, the manifest and journal stay as
        they were (the index keeps what it has), and `problem` says so until a scan records again.
        `recheck`: vault-relative paths the OS reported written, read and hashed even when their size
        and mtime are as recorded (`touch -r`, `cp -p` and `rsync -a` keep the mtime; an edit of the
        same size made so was never indexed)."""
        with self._lock:
            with self._fresh_lock:
                if self._fresh and time.monotonic() - self._fresh_since > FRESH_KEEP_S:
                    self._fresh, self._fresh_bytes = {}, 0
            self._scan_started = time.monotonic()
            try:
                result = self._scan(force_full, frozenset(recheck))
            except CannotWrite as exc:
                self.problem = f"{exc}; changes are recorded once there is room (the index keeps what it has)"
                raise
            except VaultUnavailable as exc:
                self.problem = str(exc)
                raise
            finally:
                self._scan_started = None
            self.problem = ""
            return result

    def stuck(self) -> str:
        """Why no scan ends: one that has run STUCK_SCAN_S or more, waiting on the vault's file
        system (a network share or FUSE file system that stopped answering holds every call in
        the kernel until it answers again); "" otherwise."""
        started = self._scan_started
        waited = time.monotonic() - started if started is not None else 0.0
        if waited < STUCK_SCAN_S:
            return ""
        return (
            f"a scan has waited {waited:.0f} s for the vault's file system (a network share or FUSE file system "
            "that does not answer?); the index is kept as it was"
        )

    def owe_days(self) -> None:
        """A note was fetched without its day while the history was being read: kept in the
        manifest until `redate` has journaled the notes again, so that a stop before then
        (the next start reads the history and journals every dated note) loses no day."""
        if self.days_owed:
            return
        self.days_owed = True
        try:
            self.manifest.set_meta(DAYS_OWED, "1")
        except CannotWrite as exc:
            log.warning("%s", exc)

    def redate(self, paths: set[str]) -> None:
        """Journal `paths` as modified (their bytes unchanged): they were fetched while the vault's
        git history was being read, without their commits' days, and the retriever fetches them
        again for those."""
        with self._lock:
            known = self.manifest.files
            events: list[tuple[int, str, str, str]] = [
                (MODIFIED, p, known[p].hash, "") for p in sorted(paths) if p in known and known[p].indexed
            ]
            if not events:
                return
            try:
                entries = self.manifest.commit(Batch([], [], events), int(time.time() * 1000))
            except CannotWrite as exc:  # the days come with these notes' next change
                log.warning("could not journal %d notes for their commit days: %s", len(events), exc)
                return
            if entries and self._on_events:
                self._on_events(entries)
            with contextlib.suppress(CannotWrite):
                self.manifest.set_meta(DAYS_OWED, "")
            self.days_owed = False
        log.info("git history read: %d notes fetched before it are journaled again for their days", len(events))

    def _keep_fresh(self, rel: str, st: os.stat_result, data: bytes) -> None:
        with self._fresh_lock:
            old = self._fresh.pop(rel, None)
            if old is not None:
                self._fresh_bytes -= len(old[2])
            if self._fresh_bytes + len(data) > FRESH_MAX_BYTES or len(data) != st.st_size:
                return
            if not self._fresh:
                self._fresh_since = time.monotonic()
            self._fresh[rel] = (st.st_size, st.st_mtime_ns, data)
            self._fresh_bytes += len(data)

    def take_fresh(self, rel: str, st: os.stat_result) -> bytes | None:
        """The bytes the last scan read for `rel` (once), if the file still has that size and
        mtime; None otherwise (read it from disk)."""
        with self._fresh_lock:
            kept = self._fresh.pop(rel, None)
            if kept is None:
                return None
            self._fresh_bytes -= len(kept[2])
        return kept[2] if kept[0] == st.st_size and kept[1] == st.st_mtime_ns else None

    def awaiting_return(self) -> bool:
        """Whether the last scan could not record (`problem`), or left notes out of sight for a
        reason the OS announces to no watch: a drive unmounted, a folder that fails to list.
        Until they are back the watcher scans every few seconds. A folder refused for its
        permissions is not waited for so: a chmod is an event on the folder above it."""
        return bool(self.problem) or any(prefix not in self.refused for prefix in self.out_of_sight)

    def _scan(self, force_full: bool, recheck: frozenset[str]) -> ScanResult:
        started = time.perf_counter()
        now_ms = int(time.time() * 1000)
        result = ScanResult()
        known = self.manifest.files
        journals = self.journals
        on_disk, unlisted = self.walk()
        self.out_of_sight = unlisted
        # Logseq's journal formats changed while running: every note is read again, so that the
        # retriever re-fetches them (their titles changed, their files did not); across restarts
        # the parser version the scanner reports says so (`parser_version`)
        force_full = force_full or journals != self.journals
        upserts: list[FileRecord] = []
        added: dict[str, FileRecord] = {}
        modified: list[FileRecord] = []
        for rel, (st, problem) in on_disk.items():
            old = known.get(rel)
            unchanged = (
                old is not None
                and not force_full
                and old.size == st.st_size
                and old.mtime_ns == mtime_ns_of(st)
                and rel not in recheck
                and not -FUTURE_NS < old.parsed_at_ms * 1_000_000 - old.mtime_ns < RACY_NS
            )
            if old is not None and unchanged and (old.indexed or self._skipped_examined):
                if old.indexed:
                    result.unchanged += 1
                else:
                    result.skipped += 1
                continue
            record = (
                FileRecord(rel, st.st_size, mtime_ns_of(st), "", now_ms, problem)
                if problem
                else self._examine(rel, st, now_ms, on_disk)
            )
            if not record.indexed:
                result.skipped += 1
                if not (old is not None and unchanged and record.skipped_reason == old.skipped_reason):
                    upserts.append(record)  # unless examined again only to be skipped as before
                if old is not None and old.indexed:
                    modified.append(record)  # was indexed, now is not: delete below
                continue
            upserts.append(record)
            if old is None or not old.indexed:
                added[rel] = record
            elif old.hash != record.hash or force_full:
                modified.append(record)
            else:
                result.unchanged += 1  # touched: only the mtime moves
        gone = [path for path in known if path not in on_disk and not path.startswith(tuple(unlisted))]

        events: list[tuple[int, str, str, str]] = []
        by_hash: dict[str, list[str]] = {}
        for rel, record in added.items():
            by_hash.setdefault(record.hash, []).append(rel)
        for path in sorted(gone):
            old = known[path]
            candidates = by_hash.get(old.hash) if old.indexed else None
            if candidates:
                new_path = candidates.pop(0)
                del added[new_path]
                events.append((RENAMED, new_path, old.hash, path))
                result.renamed += 1
            elif old.indexed:
                events.append((DELETED, path, "", ""))
                result.deleted += 1
        for rel in sorted(added):
            events.append((ADDED, rel, added[rel].hash, ""))
            result.added += 1
        for record in sorted(modified, key=lambda r: r.path):
            if record.indexed:
                events.append((MODIFIED, record.path, record.hash, ""))
                result.modified += 1
            else:
                events.append((DELETED, record.path, "", ""))
                result.deleted += 1

        if upserts or gone:
            entries = self.manifest.commit(Batch(upserts, gone, events), now_ms)
            result.entries = tuple(entries)
            if entries and self._on_events:
                self._on_events(entries)
        self._skipped_examined = True  # and recorded
        result.ms = (time.perf_counter() - started) * 1000
        return result

    def _examine(self, rel: str, st: os.stat_result, now_ms: int, listed: Mapping[str, object]) -> FileRecord:
        """The record of a note to index (its hash) or to skip (why); `listed` is every path this
        scan found, so a symlink to one of them is not indexed a second time under its own name."""
        if st.st_size > DATA_ALLOWANCE * self.max_file_bytes:
            return FileRecord(rel, st.st_size, mtime_ns_of(st), "", now_ms, too_large(st.st_size, self.max_file_bytes))
        try:
            path = self.vault / rel
            if path.is_symlink():
                target = path.resolve()
                if self.vault not in target.parents:
                    raise ContentError("symlink points outside the vault")
                target_rel = target.relative_to(self.vault).as_posix()
                if target_rel in listed:
                    raise ContentError(f"a symlink to {target_rel}, which is indexed under its own path")
            data, _text, _how = read_note_text(path, self.max_file_bytes)
        except (ContentError, OSError, RuntimeError) as exc:
            return FileRecord(rel, st.st_size, mtime_ns_of(st), "", now_ms, str(exc) or type(exc).__name__)
        self._keep_fresh(rel, st, data)
        return FileRecord(rel, st.st_size, mtime_ns_of(st), xxhash.xxh3_64_hexdigest(data), now_ms)
