"""LinkGraph: wikilinks resolved the way Obsidian resolves them, and backlinks.

A target resolves to, in order: the exact vault path (with or without `.md`), a path
relative to the linking note's folder, then any note whose file name matches
case-insensitively, the shortest path winning (ties: alphabetical). Unresolved links are
kept and resolve as soon as a matching note appears.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath


def _stem(path: str) -> str:
    name = PurePosixPath(path).name
    for ext in (".md", ".markdown", ".txt"):
        if name.lower().endswith(ext):
            return name[: -len(ext)]
    return name


class LinkGraph:
    def __init__(self) -> None:
        self._targets: dict[str, list[str]] = {}  # path → raw link targets
        self._by_name: dict[str, list[str]] = defaultdict(list)
        self._paths: set[str] = set()
        self._resolved: dict[str, set[str]] | None = None
        self._backlinks: dict[str, set[str]] = {}

    def set_note(self, path: str, targets: list[str]) -> None:
        if path not in self._paths:
            self._paths.add(path)
            self._by_name[_stem(path).lower()].append(path)
        self._targets[path] = targets
        self._resolved = None

    def remove_note(self, path: str) -> None:
        if path in self._paths:
            self._paths.discard(path)
            names = self._by_name[_stem(path).lower()]
            names.remove(path)
        self._targets.pop(path, None)
        self._resolved = None

    def resolve(self, target: str, source: str = "") -> str | None:
        clean = target.strip().lstrip("/")
        if not clean:
            return None
        for candidate in (clean, clean + ".md", clean + ".markdown"):
            if candidate in self._paths:
                return candidate
        if source and "/" in source:
            folder = str(PurePosixPath(source).parent)
            for candidate in (f"{folder}/{clean}", f"{folder}/{clean}.md"):
                if candidate in self._paths:
                    return candidate
        name = _stem(clean).lower()
        matches = self._by_name.get(name)
        if not matches:
            return None
        if "/" in clean:  # a partial path: prefer notes whose path ends with it
            suffix = "/" + clean.lower()
            tail = [p for p in matches if (p.lower().rsplit(".", 1)[0]).endswith(suffix) or p.lower().endswith(suffix)]
            matches = tail or matches
        return min(matches, key=lambda p: (p.count("/"), len(p), p))

    def _ensure(self) -> dict[str, set[str]]:
        if self._resolved is None:
            resolved: dict[str, set[str]] = {}
            backlinks: dict[str, set[str]] = defaultdict(set)
            for path, targets in self._targets.items():
                outs = {r for t in targets if (r := self.resolve(t, path)) and r != path}
                resolved[path] = outs
                for out in outs:
                    backlinks[out].add(path)
            self._resolved, self._backlinks = resolved, dict(backlinks)
        return self._resolved

    def outgoing(self, path: str) -> set[str]:
        return self._ensure().get(path, set())

    def backlinks(self, path: str) -> set[str]:
        self._ensure()
        return self._backlinks.get(path, set())

    def connected(self, path: str, candidates: set[str]) -> bool:
        """True when the note links to, or is linked from, another candidate (B.5's 1-hop rule)."""
        others = candidates - {path}
        return bool(self.outgoing(path) & others) or bool(self.backlinks(path) & others)
