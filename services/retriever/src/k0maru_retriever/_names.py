"""VaultNames: the indexed notes' paths, folders and tags, found by what a person or an agent types.

A vault unpacked from a macOS zip, copied from HFS+ or synced by some tools spells its file
names decomposed (NFD), while what arrives from a keyboard, a link or an agent is composed
(NFC); and people type folder names in another case than the vault's (`projects` for
`Projects`); and a team in Taiwan and on the mainland types one folder's name in either Chinese
script (`資料庫/` for `数据库/`). Paths stay the file system's spelling everywhere (they name
files); this turns a name as typed into the spellings the vault has, by `_graph.folded_key`
(`name_key`: any case, any normal form; then Simplified, as wikilinks resolve).

Kept by IndexState beside the documents (`docs`, which it reads, never writes). Cheap to keep:
each note added or removed counts its folder (0.2 µs); the maps by `folded_key` are built when
first asked after a change (folders: a few hundred; notes: only when a path was not found as
given). Keeping both maps up to date at every change took 1.8 s and 34 MB at 100k notes.

Tags compare as Obsidian's tag search does: without `#`, in any case and normal form, a tag also
finding the tags nested under it (`project` finds `project/alpha`; Logseq's namespaced tags are
written the same way). Notes carry the spellings their authors typed (`#Project`, `#project`).
Chinese tags compare in Simplified characters and mainland words, as BM25 reads Han text
(`_tags.normalise_tag`, through `_han.simplified`): a team's `#資料庫` and `#数据库` are one tag.
"""

from __future__ import annotations

import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace

from ._bm25 import Scope, folders_of
from ._graph import folded_key
from ._tags import normalise_tag


class VaultNames:
    def __init__(self, docs: Mapping[str, object]) -> None:
        self._docs = docs
        self._parents = Counter(path.rpartition("/")[0] for path in docs)  # folder → notes right in it
        self._folders: dict[str, list[str]] | None = None  # folded_key(folder) → folders; None: to build
        self._notes: dict[str, list[str]] | None = None  # folded_key(path) → paths; None: to build
        # _tag_key(tag) → each spelling → the notes carrying it; built when first asked, then kept
        # as notes are retagged (a rebuild after each change took 0.23 s at 100k notes of 3 tags)
        self._tags: dict[str, Counter[str]] | None = None

    def add(self, path: str) -> None:
        """A note new to the index."""
        parent = path.rpartition("/")[0]
        self._parents[parent] += 1
        if self._parents[parent] == 1:
            self._folders = None
        self._notes = None

    def retag(self, old: Iterable[str], new: Iterable[str]) -> None:
        """A note's tags changed from `old` to `new` (a note that came: none before; gone: none after)."""
        if self._tags is None:
            return
        for tags, step in ((old, -1), (new, 1)):
            for tag in tags:
                key = _tag_key(tag)
                spellings = self._tags.setdefault(key, Counter())
                spellings[tag] += step
                if spellings[tag] <= 0:
                    del spellings[tag]
                    if not spellings:
                        del self._tags[key]

    def remove(self, path: str) -> None:
        """A note gone from the index."""
        parent = path.rpartition("/")[0]
        self._parents[parent] -= 1
        if not self._parents[parent]:
            del self._parents[parent]
            self._folders = None
        self._notes = None

    def notes(self, typed: str) -> list[str]:
        """The notes spelled as `typed` is, as names compare."""
        if self._notes is None:
            self._notes = _by_key(self._docs)
        return sorted(self._notes.get(folded_key(typed), ()))

    def note(self, typed: str) -> str | None:
        """The one note `typed` names: of several (a Linux vault may hold `Rust.md` and
        `rust.md`), the one it spells but for the normal form; None when none, or still several."""
        found = self.notes(typed)
        if len(found) > 1:
            composed = unicodedata.normalize("NFC", typed)
            found = [p for p in found if unicodedata.normalize("NFC", p) == composed]
        return found[0] if len(found) == 1 else None

    def folders(self, typed: str) -> list[str]:
        """The folders holding notes (at any depth) spelled as `typed` is, without a trailing `/`."""
        if self._folders is None:
            self._folders = _by_key({f for parent in self._parents if parent for f in folders_of(parent + "/")})
        return sorted(self._folders.get(folded_key(typed.rstrip("/")), ()))

    def tags(self, typed: str) -> tuple[str, ...]:
        """The vault's spellings of the tag `typed` and of the tags nested under it; `typed`
        itself when the vault has none."""
        if self._tags is None:
            self._tags = {}
            for doc in self._docs.values():
                for tag in getattr(doc, "tags", ()):
                    self._tags.setdefault(_tag_key(tag), Counter())[tag] += 1
        key = _tag_key(typed.strip()).rstrip("/")
        found = set(self._tags.get(key, ()))
        nested = key + "/"
        for other, spellings in self._tags.items() if key else ():
            if other.startswith(nested):
                found |= set(spellings)
        return tuple(sorted(found)) or (typed,)

    def scope(self, scope: Scope) -> Scope:
        """`scope` with each diary and folder also in the vault's own spellings of it, so a
        typed `projects/` or a composed `Café/` finds `Projects/` and a decomposed `Café/`;
        each tag as `tags` finds it."""
        if scope.tags:
            tags: tuple[str | tuple[str, ...], ...] = tuple(
                self.tags(t) if isinstance(t, str) else t for t in scope.tags
            )
            scope = replace(scope, tags=tags)
        if not (scope.diaries or scope.path_prefixes):
            return scope
        diaries = list(scope.diaries)
        for diary in scope.diaries:
            if diary.lower() == "root":  # the vault's top-level notes, typed in any case (`--diary root`)
                diaries.append("Root")
            if diary != "Root":
                diaries += [f for f in self.folders(diary) if "/" not in f]
        prefixes = list(scope.path_prefixes)
        for prefix in scope.path_prefixes:
            slash = "/" if prefix.endswith("/") else ""
            prefixes += [f + slash for f in self.folders(prefix)]
            if prefix.lower().endswith((".md", ".markdown", ".txt")):  # one note (the notes' map is built on demand)
                prefixes += self.notes(prefix)
        return replace(scope, diaries=tuple(dict.fromkeys(diaries)), path_prefixes=tuple(dict.fromkeys(prefixes)))


def _tag_key(tag: str) -> str:
    """How two spellings of a tag compare (see the module's docstring); Logseq's `#[[two words]]`
    is `two words` (it found nothing, as Logseq writes the tag)."""
    tag = tag.strip().lstrip("#")
    if tag.startswith("[[") and tag.endswith("]]"):
        tag = tag[2:-2]
    return normalise_tag(tag)


def _by_key(names: Mapping[str, object] | set[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = defaultdict(list)
    for name in names:
        grouped[folded_key(name)].append(name)
    return grouped
