"""What the vault's own tool is told to leave out of its search: the scanner leaves it out too.

- Obsidian: Settings → Files and links → Excluded files, kept in `.obsidian/app.json` as
  `userIgnoreFilters`. A filter is a path prefix (`Templates/`, `Archive/old.md`), case-insensitive,
  or a regular expression written between slashes (`/\\.draft\\.md$/`), searched in the path.
- Logseq: `:hidden ["/archived" "/test.md"]` in `logseq/config.edn`, paths from the graph's
  folder: a file, or a folder and everything under it.

Users put templates, archives and exports there so that their own search stops showing them;
an agent's recall showed them all the same. Read again whenever either file changes (a scan
stats both); a change takes effect at the next scan: the notes it leaves out are deleted from
the index, those it lets back in are added. `K0_TOOL_EXCLUDES=false` indexes them anyway.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

OBSIDIAN_APP = ".obsidian/app.json"
LOGSEQ_CONFIG = "logseq/config.edn"
_EDN_HIDDEN = re.compile(r":hidden\s*\[([^\]]*)\]")
_EDN_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ToolExcludes:
    """Vault-relative paths a tool's settings exclude; `described` says which and where from."""

    prefixes: tuple[str, ...] = ()  # casefolded (Obsidian)
    paths: tuple[str, ...] = ()  # a file, or a folder and all under it, as written (Logseq)
    patterns: tuple[re.Pattern[str], ...] = ()
    described: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.prefixes or self.paths or self.patterns)

    def excludes(self, rel: str) -> bool:
        """A file's vault-relative path ("a/b.md") left out."""
        if rel.casefold().startswith(self.prefixes) or self._under_paths(rel):
            return True
        return any(p.search(rel) for p in self.patterns)

    def excludes_folder(self, rel: str) -> bool:
        """Every file under the folder `rel` ("a/b", no trailing slash) left out, so it need not be
        listed: a prefix that the folder's path with its slash starts with. Patterns are tried on
        each file (a pattern may match some of a folder's files and not others)."""
        return (rel + "/").casefold().startswith(self.prefixes) or self._under_paths(rel)

    def _under_paths(self, rel: str) -> bool:
        return any(rel == p or rel.startswith(p + "/") for p in self.paths)


def _obsidian(text: str, source: str) -> tuple[list[str], list[re.Pattern[str]], list[str]]:
    prefixes: list[str] = []
    patterns: list[re.Pattern[str]] = []
    described: list[str] = []
    try:
        filters = json.loads(text).get("userIgnoreFilters") or []
    except (ValueError, AttributeError) as exc:
        log.warning("%s is not the JSON Obsidian writes (%s); its Excluded files are not read", source, exc)
        return [], [], [f"{source} could not be read as JSON: Obsidian's Excluded files are not applied"]
    if not isinstance(filters, list):
        return [], [], []
    for raw in filters:
        if not isinstance(raw, str) or not raw.strip():
            continue
        item = raw.strip().replace("\\", "/") if not _is_pattern(raw.strip()) else raw.strip()
        if _is_pattern(item):
            try:
                patterns.append(re.compile(item[1:-1], re.IGNORECASE))
            except re.error as exc:
                described.append(
                    f"{item} (Obsidian's Excluded files, {source}): not a regular expression here ({exc}), not applied"
                )
                continue
        else:
            prefixes.append(item.lstrip("/").casefold())
        described.append(f"{item} (Obsidian's Excluded files, {source})")
    return prefixes, patterns, described


def _is_pattern(item: str) -> bool:
    return len(item) > 1 and item.startswith("/") and item.endswith("/")


def _logseq(text: str, source: str) -> tuple[list[str], list[str]]:
    found = _EDN_HIDDEN.search(_without_edn_comments(text))
    if not found:
        return [], []
    prefixes = [s.strip("/") for s in _EDN_STRING.findall(found.group(1)) if s.strip("/ ")]
    return prefixes, [f"/{p} (Logseq's :hidden, {source})" for p in prefixes]


def _without_edn_comments(text: str) -> str:
    """EDN text without its comments (`;` to the end of the line, outside strings): Logseq's own
    config.edn shows `;; e.g. :hidden ["/archived" "/test.md"]` above the real `:hidden []`."""
    out: list[str] = []
    in_string = escaped = in_comment = False
    for ch in text:
        if in_comment:
            if ch == "\n":
                in_comment = False
                out.append(ch)
            continue
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == ";":
            in_comment = True
            continue
        out.append(ch)
    return "".join(out)


def read_tool_excludes(vault: Path) -> ToolExcludes:
    prefixes: list[str] = []
    paths: list[str] = []
    patterns: list[re.Pattern[str]] = []
    described: list[str] = []
    for source in (OBSIDIAN_APP, LOGSEQ_CONFIG):
        try:
            text = (vault / source).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if source == OBSIDIAN_APP:
            p, pats, d = _obsidian(text, source)
            prefixes += p
            patterns += pats
        else:
            e, d = _logseq(text, source)
            paths += e
        described += d
    return ToolExcludes(tuple(prefixes), tuple(paths), tuple(patterns), tuple(described))


class ToolExcludesFile:
    """The vault's tool exclusions, read again only when one of the two files changes."""

    def __init__(self, vault: Path, enabled: bool = True) -> None:
        self.vault = vault
        self.enabled = enabled
        self._signature: tuple[tuple[int, int, int], ...] | None = None
        self._current = ToolExcludes()

    def current(self) -> ToolExcludes:
        if not self.enabled:
            return self._current
        signature = tuple(_signature(self.vault / source) for source in (OBSIDIAN_APP, LOGSEQ_CONFIG))
        if signature != self._signature:
            self._current = read_tool_excludes(self.vault)
            self._signature = signature
        return self._current


def _signature(path: Path) -> tuple[int, int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns)
