"""ChangeWatcher: file events → incremental scans, in fixed collection windows.

The first event of a window arms a deadline `window_s` ahead; later events join the window
without moving it (VCP's snapshot used a sliding debounce that a steady stream postpones
forever). The window flushes early once it holds `max_files` paths. A scan is a stat-only
walk, so flushing a window rescans everything cheaply and catches renames and deletes.
A periodic safety rescan covers events the OS dropped.

The OS watches exactly the folders the last scan listed, each on its own (not recursively): the
folders the scan skips (`.git`, `node_modules`, hidden ones) take none of the user's watches and
wake nobody. Except the hidden folders that hold a tool's settings (`.obsidian`, `.vscode`;
`_tool_settings.py`): watched too, so that a note the user excludes in Obsidian leaves the index
at once, but there only the settings file wakes the scanner (Obsidian rewrites its
`workspace.json` at every click). A scan that lists a different set of folders (one made, renamed or deleted, or
replaced in place: compared by inode too) sets the watch up again for the new set, then scans once
more for what happened in between. While the vault's notes cannot all be seen (a drive unmounted
from the vault or a folder of it, a full disk) a scan runs every RETRY_S; while the vault folder is
not there at all, every `poll_s`, until it is back.

The OS watch can cover only part of the vault: Linux gives each user a limited number of
inotify watches (`fs.inotify.max_user_watches`, one per folder, shared with every editor and
tool the user runs), and watchfiles leaves out, without a word, any folder beyond it. So after
each scan the watcher compares the folders the scan listed with those this process's inotify
instance holds (`/proc/self/fdinfo`); when some are missing it drops the OS watch (giving the
watches back to the user's other programs), finds changes by a scan every `poll_s` instead, says
so in `note` (shown by `k0maru status` and the console), and tries the OS watch again every
`retry_os_watch_s` if the limit was raised or other programs gave watches back.

On a network or FUSE filesystem (NFS, SMB, sshfs, a VM's or container's shared folder) the OS
reports only the changes made through this machine's mount, not those made on the server or by
another machine: there the safety rescan runs every `REMOTE_RESCAN_S` instead of every 30 s,
beside the OS watch, and `note` says so.

The loop runs in a BackgroundWorker: when the OS watcher fails (watchfiles raises on a file
name that is not valid UTF-8, on a folder it cannot read, ...) the events of that moment are
lost, so the loop scans and starts watching again, with backoff; only a loop that keeps
failing makes the scanner give up (NOT_SERVING, exit, restarted by its supervisor).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import closing
from pathlib import Path

import watchfiles
from watchfiles._rust_notify import WatchfilesRustInternalError

from k0maru_common import BackgroundWorker, CannotWrite, WorkerHealth, mount_table

from ._scanner import IncrementalScanner, VaultUnavailable
from ._tool_settings import SETTINGS_FILES

log = logging.getLogger(__name__)

POLL_S = 2.0  # while the OS cannot watch the whole vault: a scan this often
# a scan that could not record its changes (no room, the vault away), or that left folders out of
# sight (an unmounted drive's), is tried again this often
RETRY_S = 5.0
RETRY_OS_WATCH_S = 300.0  # and the OS watch tried again this often (the limit may have been raised)
REMOTE_RESCAN_S = 5.0  # on a network or FUSE filesystem: a scan this often finds changes made elsewhere
# filesystems whose changes made elsewhere the OS does not report (and any "fuse.<name>"; not
# "fuseblk", a local disk through FUSE, where every write goes through this machine's mount)
REMOTE_FILESYSTEMS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "virtiofs", "ceph", "afs", "fuse"})
# the limit, and (in a container, a user namespace) the namespace's own: the smaller one holds
WATCH_LIMITS = {
    "fs.inotify.max_user_watches": Path("/proc/sys/fs/inotify/max_user_watches"),
    "user.max_inotify_watches": Path("/proc/sys/user/max_inotify_watches"),
}
_INOTIFY_WATCH = re.compile(r"^inotify wd:\S+ ino:([0-9a-f]+) ", re.MULTILINE)


def _inotify_infos(pid: str) -> Iterator[str]:
    """The fdinfo text of each inotify instance process `pid` ("self" too) holds: a line per
    watch ("inotify wd:… ino:…"). Nothing for a process that is gone or not ours to read."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as f:
                    yield f.read()
        except OSError:
            continue  # closed meanwhile


def watched_inodes() -> set[int] | None:
    """Inode numbers of the folders this process watches with inotify; None where /proc does not
    say. The device is left out: btrfs can give stat a subvolume's own device, inotify its
    filesystem's, so (device, inode) pairs would never match there."""
    if not os.path.isdir("/proc/self/fd"):
        return None
    return {int(ino, 16) for info in _inotify_infos("self") for ino in _INOTIFY_WATCH.findall(info)}


def watch_limit() -> tuple[str, int] | None:
    """(name, value) of the limit on inotify watches that holds here; None where /proc does not say."""
    limits: dict[str, int] = {}
    for name, path in WATCH_LIMITS.items():
        try:
            limits[name] = int(path.read_text())
        except (OSError, ValueError):
            continue
    return min(limits.items(), key=lambda kv: kv[1]) if limits else None


def watches_in_use() -> int | None:
    """inotify watches held by this user's processes: what counts against the limit."""
    uid = os.geteuid()
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    used = 0
    for pid in pids:
        with contextlib.suppress(OSError):  # gone meanwhile
            if os.stat(f"/proc/{pid}").st_uid == uid:
                used += sum(len(_INOTIFY_WATCH.findall(info)) for info in _inotify_infos(pid))
    return used


def _wait_released(timeout_s: float = 2.0) -> None:
    """Until this process holds no inotify watch (at most `timeout_s`): notify closes a watcher's
    inotify instance in its own thread, a moment after it is closed here, and a new watch set up
    meanwhile would need room for both under the limit."""
    deadline = time.monotonic() + timeout_s
    while watched_inodes() and time.monotonic() < deadline:
        time.sleep(0.01)


def filesystem_of(path: Path) -> str:
    """The type of the filesystem holding `path` (the last mount of the longest mount point above
    it); "" where /proc does not say."""
    target = os.path.realpath(path)
    best, kind = "", ""
    for mount, fs_type in mount_table():
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, kind = mount, fs_type
    return kind


def is_remote(kind: str) -> bool:
    return kind in REMOTE_FILESYSTEMS or kind.startswith("fuse.")


def _limit_reached() -> str:
    limit = watch_limit()
    if limit is None:
        return "the OS limit on watched folders is reached"
    return f"the OS limit on watched folders ({limit[0]} = {limit[1]}) is reached"


class ChangeWatcher:
    def __init__(
        self,
        scanner: IncrementalScanner,
        window_s: float,
        max_files: int,
        rescan_interval_s: float,
        on_give_up: Callable[[str], None] | None = None,
        poll_s: float = POLL_S,
        retry_os_watch_s: float = RETRY_OS_WATCH_S,
    ) -> None:
        self._scanner = scanner
        self._window_s = window_s
        self._max_files = max_files
        self._rescan_s = rescan_interval_s
        self._poll_s = poll_s
        self._retry_os_watch_s = retry_os_watch_s
        self.note = ""  # why changes are found by polling; "" while the OS reports every change
        self.os_watch_tries = 0
        self._watched_inodes: frozenset[int] = frozenset()  # of the folders the OS watch was set up on
        kind = filesystem_of(scanner.vault)
        self._remote_note = (
            f"the vault is on {kind}, a network or FUSE filesystem: the OS reports only the changes made "
            f"through this machine, so the others are found by a scan every {REMOTE_RESCAN_S:g} s"
            if is_remote(kind)
            else ""
        )
        if self._remote_note:
            self._rescan_s = min(self._rescan_s, REMOTE_RESCAN_S)
        hidden = [source for source in SETTINGS_FILES if os.path.dirname(source).startswith(".")]
        self._settings_files = frozenset(str(scanner.vault / source) for source in hidden)
        self._settings_folders = frozenset(os.path.dirname(f) for f in self._settings_files)
        self._worker = BackgroundWorker("watcher", self._watch, on_give_up)

    def start(self) -> None:
        self._worker.start()

    def stop(self) -> None:
        self._worker.stop()

    @property
    def running(self) -> bool:
        return self._worker.alive

    def health(self) -> WorkerHealth:
        return self._worker.health()

    def _wanted(self, path: str) -> bool:
        """Events on hidden names (an editor's swap file, `.git` made or deleted) change no note:
        the scanner skips every name that starts with a dot. A `.gitignore` changes which folders
        git ignores. In a tool's hidden settings folder only its settings file counts; the folder
        made or deleted is watched or given up."""
        name = os.path.basename(path)
        if name.startswith("."):
            return path in self._settings_folders or (name == ".gitignore" and self._scanner.git_ignores.enabled)
        folder = os.path.dirname(path)
        return folder not in self._settings_folders or path in self._settings_files

    def _watch_set(self) -> frozenset[str]:
        """The folders the last scan listed, and the hidden ones holding a tool's settings."""
        listed = set(self._scanner.folders.values()) or {str(self._scanner.vault)}
        return frozenset(listed | {f for f in self._settings_folders if os.path.isdir(f)})

    def _watch(self, stop: threading.Event) -> None:
        while not stop.is_set():
            if not os.path.isdir(self._scanner.vault):
                self._poll_until_back(stop)
                continue
            why = self._watch_os(stop)
            if stop.is_set():
                return
            if why is None:
                continue  # the vault's folders changed: watch the new set
            self.note = (
                f"{why}; changes are found by a scan every {self._poll_s:g} s instead, and the OS watch is "
                f"tried again (checked every {self._retry_os_watch_s:g} s) once the limit leaves room for "
                "every folder: raise it, e.g. `sysctl fs.inotify.max_user_watches=524288`, to be told of "
                "changes at once"
            )
            log.warning("watching by polling: %s", self.note)
            self._poll_until_room(stop)

    def _poll_until_back(self, stop: threading.Event) -> None:
        """The vault folder is gone (a drive unmounted with its mount point, a folder renamed):
        nothing can be watched, and the index keeps what it has; scan every poll_s until it is back."""
        self.note = f"the vault folder is not there; it is looked for every {self._poll_s:g} s"
        log.warning("watching by polling: %s", self.note)
        while not stop.wait(self._poll_s):
            self._scan()
            if os.path.isdir(self._scanner.vault):
                log.info("the vault folder is back")
                return

    def _poll_until_room(self, stop: threading.Event) -> None:
        """Scan every poll_s; every retry_os_watch_s, return if the OS watch may now hold the
        vault (trying blindly would take every watch the user has left, their editor's too)."""
        while True:
            until = time.monotonic() + self._retry_os_watch_s
            while time.monotonic() < until and not stop.wait(self._poll_s):
                self._scan()
            if stop.is_set():
                return
            limit, used = watch_limit(), watches_in_use()
            if limit is None or used is None or limit[1] - used >= len(self._scanner.folders):
                return
            log.debug(
                "still no room to watch: %d of %d watches in use, %d folders",
                used,
                limit[1],
                len(self._scanner.folders),
            )

    def _watch_os(self, stop: threading.Event) -> str | None:
        """Follow the OS's change events until stopped (returns ""), until the scan lists other
        folders than those watched (returns None), or until the OS cannot watch every folder the
        scan lists (returns why)."""
        self.os_watch_tries += 1
        try:
            events, watching = self._open_os_watch(stop)
        except OSError as exc:  # the watch limit (inotify's ENOSPC), too many inotify instances, ...
            if "watch limit" in str(exc):
                return f"the vault's {len(self._scanner.folders)} folders cannot all be watched: {_limit_reached()}"
            return f"the OS cannot watch the vault ({exc})"
        except WatchfilesRustInternalError as exc:  # met by the set-up's first wait for events
            self._unnamed_change(exc)
            return None
        with closing(events):
            try:
                return self._follow(events, watching, stop)
            except WatchfilesRustInternalError as exc:
                self._unnamed_change(exc)
                return None

    def _unnamed_change(self, exc: WatchfilesRustInternalError) -> None:
        """A change to a file whose name is no UTF-8 (a zip from Chinese Windows) ends the OS
        watch (it failed 5 times, and the scanner gave up and restarted): scan instead, which
        records the file with its reason; the caller watches again. Other errors are raised."""
        if "decode path" not in str(exc):
            raise exc
        log.info("a change the OS watch cannot name (%s): scanning, and watching again", exc)
        self._scan()
        return None

    def _open_os_watch(
        self, stop: threading.Event
    ) -> tuple[Generator[set[tuple[watchfiles.Change, str]], None, None], frozenset[str]]:
        """The OS watch set up on the folders the last scan listed, and those folders. A folder
        that cannot be read is left out: the scan cannot list it either, and keeps its notes as
        they were. One deleted since the scan: scan again (a few times; then the OSError says why)."""
        skip_unreadable = False
        for attempt in range(4):
            _wait_released()  # the watches of the last set-up (closed, or failed half-way) are given back
            watching = self._watch_set()
            self._watched_inodes = frozenset(self._scanner.folders)
            events = watchfiles.watch(
                *sorted(watching),
                stop_event=stop,
                step=20,
                debounce=int(self._window_s * 1000),
                yield_on_timeout=True,
                rust_timeout=100,
                recursive=False,
                ignore_permission_denied=skip_unreadable,
            )
            try:
                next(events, None)  # sets the watch up; answers at the latest after rust_timeout
                return events, watching
            except FileNotFoundError:
                if attempt == 3:
                    raise
                self._scan()
            except PermissionError as exc:
                if skip_unreadable:
                    raise
                log.warning("cannot watch a folder (%s); it is left out", exc)
                skip_unreadable = True
        raise AssertionError("unreachable")

    def _follow(
        self, events: Iterator[set[tuple[watchfiles.Change, str]]], watching: frozenset[str], stop: threading.Event
    ) -> str | None:
        # The OS watch is in place: now scan whatever happened while nobody watched (before this
        # loop started, or restarted). Scanning before the watch existed missed the changes in
        # between until the periodic rescan.
        self._scan()
        if self._folders_changed(watching):
            return None
        if (unwatched := self._unwatched()) != "":
            return unwatched
        self.note = self._remote_note
        pending: set[str] = set()
        deadline: float | None = None
        last_scan = time.monotonic()
        for changes in events:
            now = time.monotonic()
            fresh = {path for _change, path in changes if self._wanted(path)}
            if fresh:
                pending |= fresh
                if deadline is None:
                    deadline = now + self._window_s
            due = deadline is not None and (now >= deadline or len(pending) >= self._max_files)
            due = due or (self._scanner.awaiting_return() and now - last_scan >= RETRY_S)
            if due or now - last_scan >= self._rescan_s:
                self._scan(pending)
                if self._folders_changed(watching):
                    return None
                if now - last_scan >= self._rescan_s and (unwatched := self._unwatched()) != "":
                    return unwatched  # watches lost some other way (a folder replaced in place)
                pending.clear()
                deadline, last_scan = None, time.monotonic()
        return ""

    def _folders_changed(self, watching: frozenset[str]) -> bool:
        """Whether the last scan listed other folders than the OS watch holds (one made, renamed,
        deleted, or replaced in place: a drive mounted on it or unmounted, a folder deleted and made
        again), or a tool's settings folder came or went: then it is set up again. Or the vault
        folder is gone: then it is looked for."""
        return (
            self._watch_set() != watching
            or frozenset(self._scanner.folders) != self._watched_inodes
            or not os.path.isdir(self._scanner.vault)
        )

    def _unwatched(self) -> str | None:
        """Why the OS watch misses changes for want of watches ("" when it holds every folder the
        last scan listed; None when it misses some while the OS has room for them: set it up again)."""
        watched = watched_inodes()
        if watched is None:
            return ""
        missing = {inode: path for inode, path in self._scanner.folders.items() if inode not in watched}
        if not missing:
            return ""
        time.sleep(0.5)  # a folder made a moment ago may not be watched yet, one deleted is gone
        watched = watched_inodes() or set()
        still = 0
        for inode, path in missing.items():
            try:  # still there, and the same folder
                still += os.stat(path).st_ino == inode and inode not in watched
            except OSError:
                continue
        if not still:
            return ""
        limit, used = watch_limit(), watches_in_use()
        if limit is not None and used is not None and limit[1] - used >= still:
            # not the limit: a folder replaced in place (a drive mounted or unmounted on it), whose
            # watch the OS dropped: set the watch up again
            log.info("%d folders replaced in place are watched again", still)
            return None
        total = len(self._scanner.folders)
        return f"{still} of {total} folders are not watched: {_limit_reached()}"

    def _scan(self, written: Iterable[str] = ()) -> None:
        """A failing scan ends this run of the loop: the worker records why and retries with
        backoff. One that found no room on the disk is not a failure: it is tried again.
        `written`: the paths the OS reported, read again whatever their size and mtime."""
        problem = self._scanner.problem
        root = str(self._scanner.vault).rstrip("/") + "/"
        recheck = [p[len(root) :] for p in written if p.startswith(root)]
        try:
            result = self._scanner.scan(recheck=recheck)
        except CannotWrite as exc:
            if not problem:
                log.error("%s; changes are recorded once there is room", exc)
            return
        except VaultUnavailable as exc:  # not a failure of the watcher: scanned again until the notes are back
            if not problem:
                log.error("%s", exc)
            return
        if problem:
            log.info("changes are recorded again")
        changed = result.added + result.modified + result.deleted + result.renamed
        if changed:
            log.info(
                "scan: +%d ~%d -%d >%d in %.1f ms",
                result.added,
                result.modified,
                result.deleted,
                result.renamed,
                result.ms,
            )
