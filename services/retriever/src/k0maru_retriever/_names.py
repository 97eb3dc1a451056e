"""VaultNames: the indexed notes' paths and folders, found by what a person or an agent types.

A vault unpacked from a macOS zip, copied from HFS+ or synced by some tools spells its file
names decomposed (NFD), while what arrives from a keyboard, a link or an agent is composed
(NFC); and people type folder names in another case than the vault's (`projects` for
`Projects`). Paths stay the file system's spelling everywhere (they name files); this map
turns a name as typed into the spellings the vault has, by `name_key` (any case, any normal
form). Kept by IndexState beside the documents it describes.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable

from k0maru_common import name_key

from ._bm25 import Scope, folders_of


class VaultNames:
    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._notes: dict[str, set[str]] = defaultdict(set)  # name_key(path) → paths
        self._folders: dict[str, dict[str, int]] = defaultdict(dict)  # name_key(folder) → folder → notes below
        for path in paths:
            self.add(path)

    def add(self, path: str) -> None:
        """A note new to the index."""
        self._notes[name_key(path)].add(path)
        for folder in folders_of(path):
            spellings = self._folders[name_key(folder)]
            spellings[folder] = spellings.get(folder, 0) + 1

    def remove(self, path: str) -> None:
        """A note gone from the index."""
        key = name_key(path)
        self._notes[key].discard(path)
        if not self._notes[key]:
            del self._notes[key]
        for folder in folders_of(path):
            key = name_key(folder)
            spellings = self._folders[key]
            spellings[folder] -= 1
            if not spellings[folder]:
                del spellings[folder]
            if not spellings:
                del self._folders[key]

    def notes(self, typed: str) -> list[str]:
        """The notes spelled as `typed` is, as names compare."""
        return sorted(self._notes.get(name_key(typed), ()))

    def note(self, typed: str) -> str | None:
        """The one note `typed` names: of several (a Linux vault may hold `Rust.md` and
        `rust.md`), the one it spells but for the normal form; None when none, or still several."""
        found = self.notes(typed)
        if len(found) > 1:
            composed = unicodedata.normalize("NFC", typed)
            found = [p for p in found if unicodedata.normalize("NFC", p) == composed]
        return found[0] if len(found) == 1 else None

    def folders(self, typed: str) -> list[str]:
        """The folders spelled as `typed` is (without a trailing `/`), as names compare."""
        return sorted(self._folders.get(name_key(typed.rstrip("/")), {}))

    def scope(self, scope: Scope) -> Scope:
        """`scope` with each diary and folder also in the vault's own spellings of it, so a
        typed `projects/` or a composed `Café/` finds `Projects/` and a decomposed `Café/`."""
        if not (scope.diaries or scope.path_prefixes):
            return scope
        diaries = list(scope.diaries)
        for diary in scope.diaries:
            if diary != "Root":
                diaries += [f for f in self.folders(diary) if "/" not in f]
        prefixes = list(scope.path_prefixes)
        for prefix in scope.path_prefixes:
            slash = "/" if prefix.endswith("/") else ""
            prefixes += [f + slash for f in self.folders(prefix)]
            prefixes += self.notes(prefix) if not slash else []
        return Scope(tuple(dict.fromkeys(diaries)), tuple(dict.fromkeys(prefixes)), scope.tags)
