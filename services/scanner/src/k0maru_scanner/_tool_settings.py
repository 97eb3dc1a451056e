"""What the vault's own tool is set to, as far as the scanner heeds it: what it leaves out of its
search (the scanner leaves it out too), and how Logseq names and titles journals (`_journals.py`).

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
from dataclasses import dataclass, field
from pathlib import Path

import regex

from ._journals import DEFAULT_FILE, DEFAULT_FOLDER, DEFAULT_TITLE, JournalFormat

log = logging.getLogger(__name__)

OBSIDIAN_APP = ".obsidian/app.json"
LOGSEQ_CONFIG = "logseq/config.edn"
MAX_CONFIG_BYTES = 1 << 20  # both are a few KB; a larger file is not what the tool wrote
# a user's pattern runs on every path of every scan: one that backtracks (`/(a|a)+$/`) would hold the
# scanner for ever, so each search has this long (the `regex` engine's timeout), and a pattern that
# runs out is not applied. The timeout costs 2.3 µs a search (2.7 µs against 0.4 µs without, on the
# dendron vault's paths), so each path's answer is remembered: a no-change scan of 10,000 notes
# took 69 ms without rules, 73 with a folder rule, 77 with a pattern (114 before remembering)
PATTERN_BUDGET_S = 0.05
MAX_REMEMBERED_PATHS = 500_000
_EDN_HIDDEN = re.compile(r":hidden\s*\[([^\]]*)\]")
_EDN_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


@dataclass
class ToolExcludes:
    """Vault-relative paths a tool's settings exclude; `described` says which and where from."""

    prefixes: tuple[str, ...] = ()  # casefolded (Obsidian)
    paths: tuple[str, ...] = ()  # a file, or a folder and all under it, as written (Logseq)
    patterns: list[tuple[regex.Pattern[str], str]] = field(default_factory=list)  # (pattern, its description)
    described: tuple[str, ...] = ()
    # what the patterns said of each path (a scan asks again for every note): a pattern's search
    # costs 2.7 µs, this 0.1; a new file's rules come with a new ToolExcludes, and a fresh cache
    _matched: dict[str, bool] = field(default_factory=dict, repr=False)

    def __bool__(self) -> bool:
        return bool(self.prefixes or self.paths or self.patterns)

    def excludes(self, rel: str) -> bool:
        """A file's vault-relative path ("a/b.md") left out."""
        if (self.prefixes and rel.casefold().startswith(self.prefixes)) or (self.paths and self._under_paths(rel)):
            return True
        if not self.patterns:
            return False
        matched = self._matched.get(rel)
        if matched is None:
            if len(self._matched) >= MAX_REMEMBERED_PATHS:
                self._matched.clear()
            matched = self._matched[rel] = self._search(rel)
        return matched

    def _search(self, rel: str) -> bool:
        for pattern, said in list(self.patterns):
            try:
                if pattern.search(rel, timeout=PATTERN_BUDGET_S):
                    return True
            except TimeoutError:  # dropped, for every path from now on, and said so
                self.patterns.remove((pattern, said))
                self._matched.clear()
                self.described = tuple(
                    f"{d}: took more than {PATTERN_BUDGET_S:g} s on {rel!r}, not applied" if d == said else d
                    for d in self.described
                )
                log.warning("%s took more than %g s on %r; not applied", said, PATTERN_BUDGET_S, rel)
        return False

    def excludes_folder(self, rel: str) -> bool:
        """Every file under the folder `rel` ("a/b", no trailing slash) left out, so it need not be
        listed: a prefix that the folder's path with its slash starts with. Patterns are tried on
        each file (a pattern may match some of a folder's files and not others)."""
        return (rel + "/").casefold().startswith(self.prefixes) or self._under_paths(rel)

    def _under_paths(self, rel: str) -> bool:
        return any(rel == p or rel.startswith(p + "/") for p in self.paths)


def _obsidian(text: str, source: str) -> tuple[list[str], list[tuple[regex.Pattern[str], str]], list[str]]:
    prefixes: list[str] = []
    patterns: list[tuple[regex.Pattern[str], str]] = []
    described: list[str] = []
    try:
        filters = json.loads(text).get("userIgnoreFilters") or []
    except (ValueError, AttributeError, RecursionError) as exc:  # RecursionError: `[[[[…` deeper than the stack
        log.warning("%s is not the JSON Obsidian writes (%s); its Excluded files are not read", source, exc)
        return [], [], [f"{source} could not be read as JSON: Obsidian's Excluded files are not applied"]
    if not isinstance(filters, list):
        return [], [], []
    for raw in filters:
        if not isinstance(raw, str) or not raw.strip():
            continue
        item = raw.strip().replace("\\", "/") if not _is_pattern(raw.strip()) else raw.strip()
        said = f"{item} (Obsidian's Excluded files, {source})"
        if _is_pattern(item):
            try:
                patterns.append((regex.compile(item[1:-1], regex.IGNORECASE), said))
            except (regex.error, OverflowError, RecursionError) as exc:
                described.append(f"{said}: not a regular expression here ({exc}), not applied")
                continue
        else:  # as Obsidian compares it with paths that never start with "/": "/" alone matches none
            prefixes.append(item.casefold())
        described.append(said)
    return prefixes, patterns, described


def _is_pattern(item: str) -> bool:
    return len(item) > 1 and item.startswith("/") and item.endswith("/")


def _logseq(uncommented: str, source: str) -> tuple[list[str], list[str]]:
    found = _EDN_HIDDEN.search(uncommented)
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


def _edn_string(uncommented: str, key: str) -> str:
    """The string value of `key` in EDN text without comments; "" when it has none."""
    found = re.search(rf"{re.escape(key)}\s+{_EDN_STRING.pattern}", uncommented)
    return found.group(1) if found else ""


def _journal_format(uncommented: str) -> JournalFormat:
    return JournalFormat(
        _edn_string(uncommented, ":journal/page-title-format") or DEFAULT_TITLE,
        _edn_string(uncommented, ":journal/file-name-format") or DEFAULT_FILE,
        _edn_string(uncommented, ":journals-directory").strip("/") or DEFAULT_FOLDER,
    )


@dataclass(frozen=True)
class ToolSettings:
    excludes: ToolExcludes = field(default_factory=ToolExcludes)
    journals: JournalFormat = field(default_factory=JournalFormat)


def read_tool_settings(vault: Path, excludes: bool = True) -> ToolSettings:
    """What `.obsidian/app.json` and `logseq/config.edn` say; `excludes=False`: nothing left out."""
    prefixes: list[str] = []
    paths: list[str] = []
    patterns: list[tuple[regex.Pattern[str], str]] = []
    described: list[str] = []
    journals = JournalFormat()
    for source in (OBSIDIAN_APP, LOGSEQ_CONFIG) if excludes else (LOGSEQ_CONFIG,):
        try:
            with (vault / source).open("rb") as f:
                data = f.read(MAX_CONFIG_BYTES + 1)
        except OSError:
            continue
        if len(data) > MAX_CONFIG_BYTES:
            described.append(f"{source} is larger than {MAX_CONFIG_BYTES:,} bytes: not read")
            continue
        text = data.decode("utf-8", "replace")
        if source == OBSIDIAN_APP:
            p, pats, d = _obsidian(text, source)
            prefixes += p
            patterns += pats
        else:
            uncommented = _without_edn_comments(text)
            journals = _journal_format(uncommented)
            e, d = _logseq(uncommented, source)
            paths += e
        described += d
    if not excludes:  # what the Logseq config hides is still indexed
        return ToolSettings(journals=journals)
    return ToolSettings(ToolExcludes(tuple(prefixes), tuple(paths), patterns, tuple(described)), journals)


class VaultToolSettings:
    """The vault's tool settings, read again only when one of the two files changes."""

    def __init__(self, vault: Path, excludes: bool = True) -> None:
        self.vault = vault
        self.excludes = excludes
        self._signature: tuple[tuple[int, int, int], ...] | None = None
        self._current = ToolSettings()

    def current(self) -> ToolSettings:
        signature = tuple(_signature(self.vault / source) for source in (OBSIDIAN_APP, LOGSEQ_CONFIG))
        if signature != self._signature:
            self._current = read_tool_settings(self.vault, self.excludes)
            self._signature = signature
        return self._current


def _signature(path: Path) -> tuple[int, int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns)
