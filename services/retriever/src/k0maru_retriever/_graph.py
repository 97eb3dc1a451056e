"""LinkGraph: wikilinks resolved the way Obsidian resolves them, and backlinks, kept incrementally.

A target resolves to, in order: the exact vault path (with or without `.md`), a path
relative to the linking note's folder (`./` and `../` too, as Markdown links write them), then
any note whose file name matches as names compare (`folded_key`: any case, any Unicode normal form,
either Chinese script; so a link typed on Linux finds a note whose name macOS wrote decomposed,
and Taiwan's `[[資料庫連線]]` the mainland's `数据库连接.md`), the shortest
path winning (ties: alphabetical), and last the one note with that title or alias (Logseq
resolves `[[JS]]` to the page with `alias:: JS`; a title or alias that several notes share
resolves nothing). Unresolved links are kept and resolve as soon as a matching note appears.

A wikilink with a label is filed as `link_target`: `target` and, after `LABEL_SIDE`, its label.
It resolves to its target, else to the note its label names: Dendron (and Gollum and GitHub
wikis) write the label first, `[[label|note]]`, the reverse of Obsidian's `[[note|label]]`, and
a link says nothing of which it is. The target side wins when both name notes.

Updates are incremental: a target can only change its resolution when a note with the same
file name, title or alias appears or disappears, so every source is filed under the names its
targets mention, and only those sources are re-resolved (a full rebuild took 0.75 s at 10k notes).

For the search-time graph boost, `connected_among` matches links the broader way ALGORITHMS.md
B.5(a) does, plus aliases: a link connects two candidates when it resolves to the other one, or
when its target (without `.md`) or the target's last path component equals, as names compare,
the other note's title, one of its aliases, its file stem or its path (without extension).
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections import defaultdict
from collections.abc import Container, Iterable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import unquote

from k0maru_common import name_key, page_name

from ._han import simplified_name

if TYPE_CHECKING:
    from k0maru.v1 import common_pb2

LABEL_SIDE = "\n"  # between a link's target and its label in `link_target` (no link holds a line break)


def link_target(link: common_pb2.Link) -> str:
    """What the graph files for one parsed link: the target as written, and for a wikilink with
    a label, `target LABEL_SIDE label` (the label without its #heading or ^block) to resolve
    when the target does not."""
    label = link.alias.partition("#")[0].partition("^")[0].strip() if link.alias and not link.markdown else ""
    label = label.removesuffix(".md")
    return f"{link.target}{LABEL_SIDE}{label}" if label and label != link.target else link.target


def _sides(target: str) -> list[str]:
    return target.split(LABEL_SIDE) if LABEL_SIDE in target else [target]


def folded_key(name: str) -> str:
    """A name as names compare in a vault: `name_key` (any case, any Unicode normal form), in
    Simplified characters (`simplified_name`): a link a teammate in Taiwan writes `[[資料庫連線]]`
    finds the mainland's `数据库连接.md`, and the other way round; and full-width forms as their
    usual ones (NFKC, as tags compare): a Chinese input method types `（Linux）` and `Ｒｅｄｉｓ`, an
    agent quoting the name writes `(Linux)` and `Redis`, and the link stayed unresolved."""
    key = name_key(name)
    return key if key.isascii() else simplified_name(unicodedata.normalize("NFKC", key))


def _name(path_or_target: str) -> str:
    """The file name a path or a link target refers to, as names compare (`folded_key`: any
    case, any Unicode normal form, either Chinese script); the key links resolve by."""
    return folded_key(_stem(path_or_target.strip()))


def _basename(path: str) -> str:
    """PurePosixPath(path).name, without building a path for the common case (a cold start
    asks for thousands)."""
    name = path.rsplit("/", 1)[-1]
    return name if name and name != "." else PurePosixPath(path).name


def _parent(path: str) -> str:
    """str(PurePosixPath(path).parent), without building a path when `path` is already in normal
    form (the scanner's paths are)."""
    folder, _, name = path.rpartition("/")
    if folder and name and name != "." and "//" not in path and "/./" not in path and not folder.startswith("./"):
        return folder
    return str(PurePosixPath(path).parent)


_NOTE_EXTENSIONS = frozenset({".md", ".markdown", ".txt"})


def _stem(path: str) -> str:
    """The file name without its extension, as the last part of its page name (`page_name`:
    Logseq's `pages/Project___Beta.md` is the page `Project/Beta`, found by `Beta` as a note
    `Project/Beta.md` would be)."""
    name = _basename(path)
    dot = name.rfind(".")
    if dot >= 0 and name[dot:].lower() in _NOTE_EXTENSIONS:  # a million calls at a cold start of 50k notes
        name = name[:dot]
    return page_name(name).rsplit("/", 1)[-1] if "___" in name or "%" in name else name


def _page_path(path: str) -> str:
    """The path with its file's page name in place of its stem (Logseq's namespaces as folders)."""
    folder, _, name = path.rpartition("/")
    if "___" not in name and "%" not in name:
        return path
    stem, dot, ext = name.rpartition(".")
    named = f"{page_name(stem)}{dot}{ext}" if dot else page_name(name)
    return f"{folder}/{named}" if folder else named


def _titles(names: Iterable[str]) -> frozenset[str]:
    """A note's title and aliases as names compare."""
    return frozenset(key for n in names if (key := folded_key(n.strip())))


def _note_keys(path: str, titles: frozenset[str], own: str) -> frozenset[str]:
    """What a link may say to mean this note: title, aliases, file stem (`own`: `_name(path)`),
    path (B.5(a))."""
    bare = path.rsplit(".", 1)[0] if "." in _basename(path) else path
    return titles | {own, folded_key(path), folded_key(bare)}


def _target_keys(target: str) -> tuple[str, ...]:
    """The target without `.md` and its last path component, as names compare (`folded_key`)."""
    clean = folded_key(unquote(target.strip()).lstrip("./"))
    full = clean[:-3] if clean.endswith(".md") else clean
    last = _stem(full)
    return (full, last) if last != full else (full,)


class LinkGraph:
    def __init__(self) -> None:
        self._targets: dict[str, list[str]] = {}  # path → raw link targets
        self._by_name: dict[str, list[str]] = defaultdict(list)  # lower-case file name → paths
        self._paths: set[str] = set()
        self._resolved: dict[str, dict[str, str | None]] = {}  # source → target → path
        self._back: dict[str, set[str]] = defaultdict(set)
        self._mentions: dict[str, set[str]] = defaultdict(set)  # lower-case target name → sources
        self._keys: dict[str, frozenset[str]] = {}  # path → what links may call it (boost matching)
        self._target_keys: dict[str, tuple[str, ...]] = {}  # path → keys of its targets
        self._named: dict[str, frozenset[str]] = {}  # path → its title and aliases (`folded_key`)
        self._by_title: dict[str, set[str]] = defaultdict(set)  # a title or alias (`folded_key`) → paths

    def load(self, notes: dict[str, list[str]], names: dict[str, list[str]] | None = None) -> None:
        """Bulk start: add every note, then resolve each source once. `names`: titles and aliases."""
        for path, targets in notes.items():
            self._register(path, targets)
            self._set_titles(path, self._set_keys(path, targets, (names or {}).get(path, ())))
        for path in notes:
            self._resolve_source(path)

    def set_note(self, path: str, targets: list[str], names: Iterable[str] = ()) -> None:
        """Add or replace a note: its raw link targets and its other names (title, aliases)."""
        self.set_notes([(path, targets, names)])

    def set_notes(self, notes: Iterable[tuple[str, list[str], Iterable[str]]]) -> None:
        """`set_note` for several notes (path, targets, names) with the same result: all are filed
        first, then each source is resolved once, instead of once more for every new note of the
        batch that its links name (a cold start adds notes before the notes they link to)."""
        batch: dict[str, None] = {}
        new_names: dict[str, None] = {}
        for path, targets, names in notes:
            changed = self._set_titles(path, self._set_keys(path, targets, names))
            new_names.update(dict.fromkeys(_name(key) for key in changed))
            self._forget_targets(path)
            if self._register(path, targets):
                new_names[_name(path)] = None
            batch[path] = None
        for name in new_names:
            self._reresolve_mentions_of(name, skip=batch)
        for path in batch:
            self._resolve_source(path)

    def _register(self, path: str, targets: list[str]) -> bool:
        """File the note and the names its targets mention; True if the note is new."""
        self._targets[path] = targets
        for target in targets:
            for side in _sides(target):
                self._mentions[_name(side)].add(path)
        if path in self._paths:
            return False
        self._paths.add(path)
        self._by_name[_name(path)].append(path)
        return True

    def _set_keys(self, path: str, targets: list[str], names: Iterable[str]) -> frozenset[str]:
        """File what links may call the note and what its links call others; its titles to
        resolve links by (`_set_titles`)."""
        titles, own = _titles(names), _name(path)
        self._keys[path] = _note_keys(path, titles, own)
        self._target_keys[path] = tuple({k for t in targets for k in _target_keys(_sides(t)[0])})
        # a title that is the file's own name is found by it first: filed by title it would cost a
        # cold start of 50k notes 0.3 s and change no link
        return titles - {own} if titles else titles

    def _set_titles(self, path: str, after: frozenset[str]) -> frozenset[str]:
        """File the note under its title and aliases (`_titles`); the ones added or dropped."""
        before = self._named.get(path, frozenset())
        if after == before:
            return frozenset()
        for key in before - after:
            self._by_title[key].discard(path)
        for key in after - before:
            self._by_title[key].add(path)
        if after:
            self._named[path] = after
        else:
            self._named.pop(path, None)
        return before ^ after

    def remove_note(self, path: str) -> None:
        changed = {_name(key) for key in self._set_titles(path, frozenset())}
        self._keys.pop(path, None)
        self._target_keys.pop(path, None)
        self._forget_targets(path)
        self._targets.pop(path, None)
        if path in self._paths:
            self._paths.discard(path)
            self._by_name[_name(path)].remove(path)
            changed.add(_name(path))
        for name in changed:
            self._reresolve_mentions_of(name)

    def _forget_targets(self, path: str) -> None:
        for target in self._targets.get(path, []):
            for side in _sides(target):
                self._mentions[_name(side)].discard(path)
        for out in self.outgoing(path):
            self._back[out].discard(path)
        self._resolved.pop(path, None)

    def _reresolve_mentions_of(self, name: str, skip: Container[str] = ()) -> None:
        """Only targets naming this file name can change: re-resolve just those (not in the
        sources of `skip`, which the caller resolves in full)."""
        for source in list(self._mentions.get(name, ())):
            if source in skip:
                continue
            before = self.outgoing(source)
            resolved = self._resolved.setdefault(source, {})
            for target in self._targets.get(source, []):
                if any(_name(side) == name for side in _sides(target)):
                    resolved[target] = self.resolve(target, source)
            self._update_backlinks(source, before)

    def _resolve_source(self, source: str) -> None:
        before = self.outgoing(source)
        resolved: dict[str, str | None] = {}
        for target in self._targets.get(source, []):
            resolved[target] = self.resolve(target, source)
        self._resolved[source] = resolved
        self._update_backlinks(source, before)

    def _update_backlinks(self, source: str, before: set[str]) -> None:
        after = self.outgoing(source)
        for gone in before - after:
            self._back[gone].discard(source)
        for new in after - before:
            self._back[new].add(source)

    def resolve(self, target: str, source: str = "") -> str | None:
        """The note a target names (a `link_target`: its target, else its label), or None."""
        return self.resolve_link(target, source)[1]

    def resolve_link(self, target: str, source: str = "") -> tuple[str, str | None]:
        """(the side of a `link_target` that names a note, the note), or (its target, None); a
        link from a note to itself names none."""
        sides = _sides(target)
        for side in sides:  # a loop, not a generator: 300k links at a cold start
            if (path := self._resolve_one(side, source)) is not None:
                return side, path if path != source else None
        for side in sides if self._by_title else ():  # no file name: the one note titled so or aliased so
            if len(titled := self._titled(side)) == 1:
                path = next(iter(titled))
                return side, path if path != source else None
        return sides[0], None

    def _titled(self, name: str) -> set[str]:
        return self._by_title.get(folded_key(name.strip()), set())

    def titled(self, name: str) -> list[str]:
        """The notes titled or aliased `name` (a link so written resolves only when there is one)."""
        return sorted(self._titled(name))

    def named(self, target: str) -> list[str]:
        """The notes whose file name `target` (a name or a path) names, as links compare."""
        return sorted(self._by_name.get(_name(target), ()))

    @staticmethod
    def ends_with(path: str, target: str) -> bool:
        """Whether the note at `path` is the one a partial path `target` spells (`alpha/Meeting`
        for `projects/alpha/Meeting.md`, Logseq's `Project/Beta` for `pages/Project___Beta.md`), as
        names compare, with or without its extension; a bare name, its file's (`Beta` is not
        Logseq's `Project/Beta`)."""
        clean = target.strip().lstrip("/")
        suffix = "/" + folded_key(clean)
        key = "/" + folded_key(_page_path(path) if "/" in clean else path)
        return key.endswith(suffix) or key.rsplit(".", 1)[0].endswith(suffix)

    def _resolve_one(self, target: str, source: str) -> str | None:
        clean = target.strip().lstrip("/")
        if not clean:
            return None
        for candidate in (clean, clean + ".md", clean + ".markdown"):
            if candidate in self._paths:
                return candidate
        if source and "/" in source:
            folder = _parent(source)
            for candidate in (f"{folder}/{clean}", f"{folder}/{clean}.md"):
                if candidate in self._paths:
                    return candidate
        if clean.startswith(("./", "../")) or "/../" in clean or "/./" in clean:  # a Markdown link's relative path
            joined = posixpath.normpath(posixpath.join(_parent(source) if "/" in source else "", clean))
            for candidate in (joined, joined + ".md", joined + ".markdown"):
                if candidate in self._paths:
                    return candidate  # else, as before, a note of that file name elsewhere
        matches = self._by_name.get(_name(clean))
        if not matches:
            return None
        if "/" in clean:  # a partial path: prefer notes whose path ends with it
            matches = [p for p in matches if self.ends_with(p, clean)] or matches
        return min(matches, key=lambda p: (p.count("/"), len(p), p))

    def outgoing(self, path: str) -> set[str]:
        return {r for r in self._resolved.get(path, {}).values() if r is not None}

    def backlinks(self, path: str) -> set[str]:
        return self._back.get(path, set())

    def connected(self, path: str, candidates: set[str]) -> bool:
        """True when the note links to, or is linked from, another candidate (B.5's 1-hop rule)."""
        return path in self.connected_among(candidates)

    def connected_among(self, candidates: set[str]) -> set[str]:
        """The candidates that link to, or are linked from, another candidate (B.5(a) plus aliases)."""
        by_key: dict[str, set[str]] = defaultdict(set)
        for path in candidates:
            for key in self._keys.get(path, ()):
                by_key[key].add(path)
        out: set[str] = set()
        for path in candidates:
            linked = self.outgoing(path) & candidates
            for key in self._target_keys.get(path, ()):
                linked |= by_key.get(key, set())
            linked.discard(path)
            if linked:
                out.add(path)
                out |= linked
        return out
