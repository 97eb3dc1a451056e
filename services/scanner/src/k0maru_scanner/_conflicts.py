"""Notes a sync tool or git left in conflict: said as a problem of the note, so that `k0maru status`
and the console's status page list them (the index keeps them: they hold what someone wrote).

A team's vault is synced by Syncthing, Dropbox, Nextcloud or Obsidian Sync, or by git (the
Obsidian Git plugin pulls on a timer). When two people edit a note at once, the sync tool keeps
both as two notes, and git writes both versions into the note between conflict markers; nobody
is told, and an agent recalls whichever it finds first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Container

# Syncthing: `note.sync-conflict-20261201-101500-ABCDEF7.md`
_SYNCTHING = re.compile(r"\.sync-conflict-\d{8}-\d{6}-[A-Z0-9]{7}(?=\.[^.]+$|$)")
# Dropbox `note (Ann's conflicted copy 2026-12-01).md`, Nextcloud and ownCloud `note (conflicted
# copy 2026-12-01 101500).md`, Obsidian Sync `note (Conflicted copy laptop 202612011015).md`
_CONFLICTED_COPY = re.compile(r" \([^()]*conflicted copy[^()]*\)(?=\.[^.]+$|$)", re.IGNORECASE)
# what `git mergetool` leaves beside a note: `note_BACKUP_4242.md`, `_BASE_`, `_LOCAL_`, `_REMOTE_`
_MERGETOOL = re.compile(r"_(?:BACKUP|BASE|LOCAL|REMOTE)_\d+(?=\.[^.]+$|$)")
# git's conflict markers, each a line of its own, in this order, outside fenced code (a note on
# how to resolve a conflict shows them in a fence)
_GIT_MARKERS = (re.compile(r"<{7}(?: |$)"), re.compile(r"={7}$"), re.compile(r">{7}(?: |$)"))
_FENCE = re.compile(r" {0,3}(```|~~~)")


_COPY_NAMES = ((_SYNCTHING, "Syncthing"), (_CONFLICTED_COPY, "a sync tool"), (_MERGETOOL, "git mergetool"))


def _copied(rel: str) -> tuple[str, str]:
    """(the path of the note that a conflicting copy at `rel` copies, the tool that kept it), or
    ("", "") when `rel` names no copy."""
    folder, _, name = rel.rpartition("/")
    for pattern, tool in _COPY_NAMES:
        if found := pattern.search(name):
            original = name[: found.start()] + name[found.end() :]
            return (f"{folder}/{original}" if folder else original), tool
    return "", ""


def conflict_original(rel: str) -> str:
    """The path of the note that the conflicting copy at `rel` copies ("" when it is no copy):
    `Document.conflict_of`. The copy repeats the note's title and aliases, and often its text."""
    return _copied(rel)[0]


def conflict_problem(rel: str, text: str) -> str:
    """Why the note is a conflict left unresolved ("" when it is not)."""
    original, tool = _copied(rel)
    if original:
        name = original.rsplit("/", 1)[-1]
        return f"a conflicting copy of {name} that {tool} kept: merge the two and delete this one"
    if "<<<<<<<" in text and _git_conflict(text):
        return (
            "holds a git merge conflict (<<<<<<< … ======= … >>>>>>>): both versions are indexed until it is resolved"
        )
    return ""


def _git_conflict(text: str) -> bool:
    """Whether the three markers stand on lines of their own, in order, outside fenced code: one
    pass over the lines (a pattern spanning the markers would scan on from every `<<<<<<<`)."""
    fence = ""
    step = 0
    for line in text.splitlines():
        if opened := _FENCE.match(line):
            fence = "" if fence and opened.group(1) == fence else (fence or opened.group(1))
            continue
        if not fence and _GIT_MARKERS[step].match(line):
            step += 1
            if step == len(_GIT_MARKERS):
                return True
    return False


def twin_problem(rel: str, paths: Container[str]) -> str:
    """Why the note has a twin: a file beside it whose name differs only in its Unicode form
    (`Café.md` composed, as Linux and Windows write it, and decomposed, as macOS does). macOS
    takes the two for one file, so a sync between machines keeps one of them; and links and
    `read_note` by that name went to one of them, without a word. "" when it has none."""
    if rel.isascii():
        return ""
    forms = (unicodedata.normalize("NFC", rel), unicodedata.normalize("NFD", rel))
    twins = [p for p in forms if p != rel and p in paths]
    if not twins:
        return ""
    return f"another file has this name in another Unicode form ({twins[0]!r}): macOS takes them for one; rename one"
