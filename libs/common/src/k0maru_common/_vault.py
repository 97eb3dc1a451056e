"""Vault identity and path confinement, shared by everything that touches vault paths."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
import unicodedata
from datetime import UTC, date, datetime
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote

import xxhash

from ._errors import OutsideVault


def default_data_root() -> Path:
    """`$XDG_DATA_HOME/k0maru`, falling back to `~/.local/share/k0maru`."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "k0maru"


def vault_id(vault: Path, *, resolve: bool = True) -> str:
    """A stable id for a vault: its folder name plus a hash of its resolved path (`resolve=False`:
    `vault` is taken as resolved, and no file system is asked)."""
    resolved = vault.resolve() if resolve else vault
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", resolved.name).strip("-") or "vault"
    return f"{name[:32]}-{xxhash.xxh3_64_hexdigest(str(resolved).encode())[:10]}"


def default_data_dir(vault: Path, *, resolve: bool = True) -> Path:
    """Where a vault's indexes live by default: outside the vault, per vault."""
    return default_data_root() / vault_id(vault, resolve=resolve)


def confine(vault: Path, relative: str, *, vault_resolved: bool = False) -> Path:
    """Resolve a vault-relative path and refuse anything that lands outside the vault.

    Absolute paths, `..` segments and symlinks that point out are all refused with
    OutsideVault, and so is a path through a symlink loop. The returned path is absolute and
    may not exist yet. `vault_resolved`: `vault` is already the resolved folder (the scanner
    resolves it once), so it is not resolved again.

    Separators and escapes follow the platform, like the scanner that lists the vault: on
    POSIX only `/` separates folders, so `a\\b.md`, `C:notes.md` and `..\\x.md` are plain file
    names inside the vault; on Windows backslashes separate and drive letters escape too.
    """
    pure = vault_relative(relative)
    root = vault if vault_resolved else vault.resolve()
    if _no_symlink_below(root, pure.parts):  # the common case: one lstat per part, no realpath
        return root / pure
    try:
        target = (root / pure).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
        raise OutsideVault(f"path {_shown(relative)} cannot be resolved: {exc}") from exc
    if target != root and root not in target.parents:
        raise OutsideVault(f"path {_shown(relative)} escapes the vault")
    return target


MAX_PATH_BYTES = 4096  # PATH_MAX on Linux
_MOUNTINFO_ESCAPE = re.compile(r"\\([0-7]{3})")  # a blank in a mount point is written `\040`


def read_at_most(path: Path, limit: int) -> bytes:
    """The file's first `limit` bytes, or all of it when it is shorter. Asked for in the size
    `fstat` gives: a read of `limit` bytes first takes that much memory, and with the scanner's
    bound (32 MB) a 1.5 KB SciFact note's read took 15 µs instead of 4, twice per note in a first
    build (bench/scan_bench.py). OSError as `open` raises it."""
    with open(path, "rb", buffering=0) as f:
        want = min(os.fstat(f.fileno()).st_size + 1, limit)
        parts: list[bytes] = []
        got = 0
        while got < limit and (piece := f.read(min(want, limit - got))):
            parts.append(piece)
            got += len(piece)
            want = 1 << 16  # grown since fstat, or a short read (a network share): on in pieces
        return parts[0] if len(parts) == 1 else b"".join(parts)


def mount_table() -> list[tuple[str, str]]:
    """(mount point, filesystem type) of every mount this process sees, in `/proc/self/mountinfo`'s
    order (a later mount on the same point hides an earlier one); [] where /proc does not say."""
    try:
        lines = Path("/proc/self/mountinfo").read_text(errors="replace").splitlines()
    except OSError:
        return []
    table: list[tuple[str, str]] = []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) >= 5 and right:
            table.append((_MOUNTINFO_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4]), right.split()[0]))
    return table


def vault_relative(relative: str) -> PurePosixPath:
    """`relative` as a vault-relative path, or OutsideVault when it is empty, holds a NUL, is
    longer than MAX_PATH_BYTES, is absolute or holds `..`: `confine`'s checks that ask no file
    system (a network share that stops answering holds every call that does)."""
    if not relative or "\x00" in relative:
        raise OutsideVault(f"invalid vault path {relative!r}")
    if len(relative.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise OutsideVault(f"path {_shown(relative)} is longer than {MAX_PATH_BYTES} bytes")
    pure = PurePosixPath(relative.replace("\\", "/") if os.name == "nt" else relative)
    if pure.is_absolute() or ".." in pure.parts or (os.name == "nt" and re.match(r"^[A-Za-z]:", relative)):
        raise OutsideVault(f"path {_shown(relative)} escapes the vault")
    return pure


def _no_symlink_below(root: Path, parts: tuple[str, ...]) -> bool:
    """True when no part of root/parts is a symlink (parts hold no `..`), so resolving it
    would give root/parts itself; a missing part ends the check (nothing below it exists)."""
    if os.name == "nt":
        return False
    path = str(root)
    for part in parts:
        path = f"{path}/{part}"
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return False
        except FileNotFoundError:
            return True
        except OSError:
            return False
    return True


def _shown(relative: str) -> str:
    """The path for an error message: quoted, and cut when long (a 1 MB path must not come back whole)."""
    return repr(relative) if len(relative) <= 200 else f"{relative[:200]!r}… ({len(relative)} characters)"


def relative_posix(vault: Path, path: Path) -> str:
    """`path` relative to the vault, `/`-separated."""
    return Path(os.path.relpath(path, vault)).as_posix()


def as_folder(name: str) -> str:
    """A folder as a scope of notes: `code` is the folder `code/`, not every path that starts so
    (`code-review/`); `/notes/`, `./notes`, `notes\\` are `notes/`; "" and `.` are the whole vault.
    (`./runbooks`, as an agent writes a folder, scoped to no note, and the answer said that no
    note is in that folder.)"""
    name = name.strip().replace("\\", "/").strip("/")
    while name == "." or name.startswith("./"):
        name = name[2:].lstrip("/")
    return f"{name}/" if name else ""


_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


# A day in a note's name: daily notes (Obsidian's and Foam's default `2026-12-04.md`, Dendron's
# `daily.journal.2026.12.04.md`, `2026/12/04.md` in folders), names that start or end with their day
# (`2026-11-30 retro.md`, `standup 2026_12_01.md`), compact ones (`20261204 plan.md`) and
# Zettelkasten ids (`202612041530 idea.md`: the minute the note was made). The first one found.
_NAME_DAY_SEPARATED = re.compile(r"(?<!\d)(?P<y>(?:19|20|21)\d\d)(?P<s>[-_.])(?P<m>\d\d)(?P=s)(?P<d>\d\d)(?!\d)")
_NAME_DAY_FOLDERS = re.compile(r"(?:^|/)(?P<y>(?:19|20|21)\d\d)/(?P<m>\d\d)/(?P<d>\d\d)(?:\.[^./]+)?$")
_NAME_DAY_COMPACT = re.compile(r"(?<!\d)(?P<y>(?:19|20|21)\d\d)(?P<m>\d\d)(?P<d>\d\d)(?:\d{4}|\d{6})?(?!\d)")


# Periodic notes named by their period alone (the Periodic Notes plugin's defaults): a week
# (`2026-W49`, ISO weeks), a month (`2026-12`), a quarter (`2026-Q4`); dated by the period's first day
_NAME_PERIOD = re.compile(r"(?P<y>(?:19|20|21)\d\d)-(?:W(?P<w>\d\d)|(?P<m>\d\d)|Q(?P<q>[1-4]))(?:\.[^./]+)?")


def name_day(path: str) -> str:
    """The day a note's name gives (`_NAME_DAY_*`, `_NAME_PERIOD`), YYYY-MM-DD; "" when it gives
    none. The scanner dates a note by it when its text names no day; the loadout orders decisions
    by it."""
    stem = path.rsplit("/", 1)[-1]
    for pattern, where in ((_NAME_DAY_SEPARATED, stem), (_NAME_DAY_FOLDERS, path), (_NAME_DAY_COMPACT, stem)):
        for found in pattern.finditer(where):
            try:
                return date(int(found["y"]), int(found["m"]), int(found["d"])).isoformat()
            except ValueError:
                continue
    if period := _NAME_PERIOD.fullmatch(stem):
        year = int(period["y"])
        try:
            if period["w"]:
                return date.fromisocalendar(year, int(period["w"]), 1).isoformat()
            month = int(period["m"]) if period["m"] else 3 * int(period["q"]) - 2
            return date(year, month, 1).isoformat()
        except ValueError:
            return ""
    return ""


_DATE_KEYS = ("updated", "modified", "last_modified", "lastmod", "date", "created")
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}(?:$|[T ])")


# a decision record's own date line: "Date: 2026-03-01" (adr-tools, Nygard), "- Date: 2026-03-01"
# (log4brains, MADR 2), "**Date:** 2026-03-01"
_DATE_LINE = re.compile(
    r"[ \t]*(?:[-*+][ \t]+)?(?:\*\*)?date(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*(\d{4}-\d{2}-\d{2})(?!\d)", re.IGNORECASE
)
STATED_DAY_LINES = 12  # of a note's text (after its frontmatter) a date line is looked for in


def stated_day(body: str) -> str:
    """The day a note's text states for itself at its top, as decision records do ("Date:
    2026-03-01" under the title); "" when it states none (or no such day exists). An ADR has no
    frontmatter and no day in its name (`0004-use-grpc.md`): it was dated by its file. Only lines
    that begin with "date" are matched (0.9 µs a SciFact note; a regex over its text took 11)."""
    for line in body[:2000].split("\n", STATED_DAY_LINES)[:STATED_DAY_LINES]:
        if line.lstrip(" \t-*+")[:4].lower() == "date" and (found := _DATE_LINE.match(line)):
            return _as_day(found.group(1)) or ""
    return ""


def note_date(frontmatter: dict[str, Any], journal_day: str = "") -> str:
    """The day a note says it was last written: the first of its `updated`, `modified`,
    `last_modified`, `lastmod`, `date`, `created` keys (any case) that holds a date (YAML's, an ISO
    string, or a Unix time: Dendron writes milliseconds), else the day its name gives (a Logseq
    journal's, `name_day`); "" when it names none. The file's mtime is no substitute: a git clone
    or a sync stamps every file alike, and appending to last month's daily note makes it today's."""
    if not frontmatter:
        return journal_day
    keyed = {k.lower(): v for k, v in frontmatter.items()}
    for key in _DATE_KEYS:
        if (day := _as_day(keyed.get(key))) is not None:
            return day
    return journal_day


def _as_day(value: Any) -> str | None:
    if isinstance(value, date):  # a datetime too
        return value.isoformat()[:10]
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        seconds = value / 1000 if value > 1e11 else value  # Dendron: ms since 1970
        try:
            return datetime.fromtimestamp(seconds, tz=UTC).isoformat()[:10]
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and _ISO_DAY.match(value.strip()):
        try:
            return date.fromisoformat(value.strip()[:10]).isoformat()
        except ValueError:
            return None
    return None


def utc_day(mtime_ns: int) -> str:
    """A file's modification time as its day in UTC, YYYY-MM-DD ("" for none)."""
    if mtime_ns <= 0:
        return ""
    tm = time.gmtime(mtime_ns // 1_000_000_000)
    return f"{tm.tm_year:04d}-{tm.tm_mon:02d}-{tm.tm_mday:02d}"


# Folders never indexed, by name anywhere or by vault-relative path: packages' own files; Logseq
# keeps copies of pages it overwrote in logseq/bak (and before 0.6 in logseq/version-files), each
# a whole older note
IGNORED_FOLDERS = ("node_modules", "trash", "logseq/bak", "logseq/version-files")
# A folder holding one of these is generated, not written: a Python virtual environment
# (`pyvenv.cfg`), or a cache tagged as the Cache Directory Tagging Specification says (cargo's
# `target/`, many build caches: `CACHEDIR.TAG` beginning with its signature)
CACHEDIR_SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"


def generated_folder(entries: list[os.DirEntry[str]]) -> bool:
    """Whether a folder, by its entries, is a virtual environment or a tagged cache."""
    for entry in entries:
        if entry.name == "pyvenv.cfg":
            return True
        if entry.name == "CACHEDIR.TAG":
            try:
                if entry.is_file(follow_symlinks=False):  # a FIFO so named would block an open
                    with open(entry.path, "rb") as f:
                        if f.read(len(CACHEDIR_SIGNATURE)) == CACHEDIR_SIGNATURE:
                            return True
            except OSError:
                continue
    return False


def vault_notes(root: Path, suffixes: tuple[str, ...], limit: int = 0) -> list[str]:
    """The files under `root` whose names end in one of `suffixes` (any case), folder by folder in
    name order, leaving out what the scanner never walks: hidden names, folders named in
    IGNORED_FOLDERS, generated folders (`generated_folder`); unreadable folders are skipped.
    With `limit`, the walk stops once more than `limit` are found."""
    paths: list[str] = []
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            continue
        if folder != str(root) and generated_folder(entries):
            continue
        below = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in IGNORED_FOLDERS:
                        below.append(entry.path)
                elif entry.name.lower().endswith(suffixes):
                    paths.append(entry.path)
            except OSError:
                continue
        if limit and len(paths) > limit:
            break
        stack.extend(reversed(below))
    return paths


def page_name(stem: str) -> str:
    """The name a note's file stem gives it. Logseq writes the page `Project/Alpha` (a namespace)
    as `Project___Alpha.md`, and before 0.8 as `Project%2FAlpha.md`, escaping other characters
    a file name cannot hold the same way (`%3A` for `:`); every other stem is its own name."""
    if "___" in stem:
        stem = stem.replace("___", "/")
    if "%" in stem and _ESCAPE.search(stem):
        with contextlib.suppress(UnicodeDecodeError):  # escapes that are not UTF-8: not an escaped name
            stem = unquote(stem, errors="strict")
    return stem


def name_key(name: str) -> str:
    """How two names in a vault compare when a person or an agent typed one of them: equal
    whatever the Unicode normal form and the case. macOS (HFS+), its zip archives and some sync
    tools write file names decomposed (NFD: `e` + U+0301, Hangul as jamo), while editors, links
    and queries are composed (NFC); Obsidian resolves links case-insensitively; and a vault
    synced to macOS or Windows cannot hold two names that differ only in case."""
    if name.isascii():
        return name.lower()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", name).casefold())
