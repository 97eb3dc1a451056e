"""What the vault's own tool is set to, as far as the scanner heeds it: what it leaves out of its
search (the scanner leaves it out too), and how Logseq names and titles journals (`_journals.py`).

- Obsidian: Settings → Files and links → Excluded files, kept in `.obsidian/app.json` as
  `userIgnoreFilters`. A filter is a path prefix (`Templates/`, `Archive/old.md`), case-insensitive,
  or a regular expression written between slashes (`/\\.draft\\.md$/`), searched in the path.
- Logseq: `:hidden ["/archived" "/test.md"]` in `logseq/config.edn`, paths from the graph's
  folder: a file, or a folder and everything under it.
- Foam: `.vscode/settings.json` (JSON with comments), globs from the workspace's folder:
  `foam.files.exclude`, the older `foam.files.ignore`, and VS Code's own `files.exclude` (the
  globs set to true; Foam combines the three), and `foam.files.include` (a note must match one).
  A glob matches a file, or a folder and everything under it, as VS Code's do.
- How notes are named by their day: Logseq's journal formats (`logseq/config.edn`) and Obsidian's
  daily notes' format and folder (`.obsidian/daily-notes.json`, or the Periodic Notes plugin's),
  for `_journals.py`.

Users put templates, archives and exports there so that their own search stops showing them;
an agent's recall showed them all the same. Read again whenever one of the files changes (a
scan stats them); a change takes effect at the next scan: the notes it leaves out are deleted from
the index, those it lets back in are added. `K0_TOOL_EXCLUDES=false` indexes them anyway.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import regex

from ._journals import DEFAULT_FILE, DEFAULT_FOLDER, DEFAULT_TITLE, JournalFormat, moment_to_date_fns

log = logging.getLogger(__name__)

OBSIDIAN_APP = ".obsidian/app.json"
OBSIDIAN_DAILY = ".obsidian/daily-notes.json"
OBSIDIAN_PERIODIC = ".obsidian/plugins/periodic-notes/data.json"  # its daily notes, when enabled, win
LOGSEQ_CONFIG = "logseq/config.edn"
VSCODE_SETTINGS = ".vscode/settings.json"
SETTINGS_FILES = (OBSIDIAN_APP, LOGSEQ_CONFIG, VSCODE_SETTINGS, OBSIDIAN_DAILY, OBSIDIAN_PERIODIC)
EXCLUDING = frozenset({OBSIDIAN_APP, VSCODE_SETTINGS})  # read only when tool excludes are on
MAX_CONFIG_BYTES = 1 << 20  # each is a few KB; a larger file is not what the tool wrote
# a user's pattern runs on every path of every scan: one that backtracks (`/(a|a)+$/`) would hold the
# scanner for ever, so each search has this long (the `regex` engine's timeout), and a pattern that
# runs out is not applied. The timeout costs 2.3 µs a search (2.7 µs against 0.4 µs without, on the
# dendron vault's paths), so each path's answer is remembered: a no-change scan of 10,000 notes
# took 69 ms without rules, 73 with a folder rule, 77 with a pattern (114 before remembering)
PATTERN_BUDGET_S = 0.05
MAX_REMEMBERED_PATHS = 500_000
_EDN_HIDDEN = re.compile(r":hidden\s*\[([^\]]*)\]")
_EDN_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
Rules = list[tuple[regex.Pattern[str], str]]  # (pattern, its description)


@dataclass
class ToolExcludes:
    """Vault-relative paths a tool's settings exclude; `described` says which and where from."""

    prefixes: tuple[str, ...] = ()  # casefolded (Obsidian)
    paths: tuple[str, ...] = ()  # a file, or a folder and all under it, as written (Logseq)
    patterns: Rules = field(default_factory=list)  # searched in the path (Obsidian's `/regex/`)
    globs: Rules = field(default_factory=list)  # match the path or one of its folders (Foam's; `glob_pattern`)
    includes: Rules = field(default_factory=list)  # when there are any, each note matches one (Foam's)
    described: tuple[str, ...] = ()
    # what the patterns said of each path (a scan asks again for every note): a pattern's search
    # costs 2.7 µs, this 0.1; a new file's rules come with a new ToolExcludes, and a fresh cache
    _matched: dict[str, bool] = field(default_factory=dict, repr=False)

    def __bool__(self) -> bool:
        return bool(self.prefixes or self.paths or self.patterns or self.globs or self.includes)

    def excludes(self, rel: str) -> bool:
        """A file's vault-relative path ("a/b.md") left out."""
        if (self.prefixes and rel.casefold().startswith(self.prefixes)) or (self.paths and self._under_paths(rel)):
            return True
        if not (self.patterns or self.globs or self.includes):
            return False
        matched = self._matched.get(rel)
        if matched is None:
            if len(self._matched) >= MAX_REMEMBERED_PATHS:
                self._matched.clear()
            matched = self._matched[rel] = (
                self._search(self.patterns, rel)
                or self._search(self.globs, rel)
                or (bool(self.includes) and not self._search(self.includes, rel))
            )
        return matched

    def _search(self, rules: Rules, rel: str) -> bool:
        for pattern, said in list(rules):
            try:
                if pattern.search(rel, timeout=PATTERN_BUDGET_S):
                    return True
            except TimeoutError:  # dropped, for every path from now on, and said so
                rules.remove((pattern, said))
                self._matched.clear()
                self.described = tuple(
                    f"{d}: took more than {PATTERN_BUDGET_S:g} s on {rel!r}, not applied" if d == said else d
                    for d in self.described
                )
                log.warning("%s took more than %g s on %r; not applied", said, PATTERN_BUDGET_S, rel)
        return False

    def excludes_folder(self, rel: str) -> bool:
        """Every file under the folder `rel` ("a/b", no trailing slash) left out, so it need not be
        listed: a prefix that the folder's path with its slash starts with, or a glob that matches
        the folder. Patterns and includes are tried on each file (they may take some of a
        folder's files and not others)."""
        return (
            (rel + "/").casefold().startswith(self.prefixes)
            or self._under_paths(rel)
            or (bool(self.globs) and self._search(self.globs, rel))
        )

    def _under_paths(self, rel: str) -> bool:
        return any(rel == p or rel.startswith(p + "/") for p in self.paths)


def _obsidian(text: str, source: str) -> tuple[list[str], Rules, list[str]]:
    prefixes: list[str] = []
    patterns: Rules = []
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


def _obsidian_daily(text: str, source: str) -> tuple[str, str] | None:
    """(the daily notes' name as date-fns tokens, their folder) from Obsidian's daily notes
    settings, or the Periodic Notes plugin's when its daily notes are enabled; None for the
    default `YYYY-MM-DD` (read in any note's name) or what cannot be read."""
    try:
        settings = json.loads(text)
    except (ValueError, RecursionError) as exc:
        log.warning("%s is not the JSON Obsidian writes (%s); daily notes are dated by their names", source, exc)
        return None
    if source == OBSIDIAN_PERIODIC:  # {"daily": {"enabled": true, "format": …, "folder": …}, "weekly": …}
        settings = settings.get("daily") if isinstance(settings, dict) else None
        if not isinstance(settings, dict) or settings.get("enabled") is not True:
            return None
    if not isinstance(settings, dict):
        return None
    moment, folder = settings.get("format"), settings.get("folder")
    moment = moment.strip() if isinstance(moment, str) else ""
    if not moment or moment == "YYYY-MM-DD":
        return None
    file = moment_to_date_fns(moment)
    if not file:
        log.warning("%s: the daily notes' format %r has tokens not read here; not used", source, moment)
        return None
    return file, (folder.strip().strip("/") if isinstance(folder, str) else "")


def _journal_format(uncommented: str) -> JournalFormat:
    return JournalFormat(
        _edn_string(uncommented, ":journal/page-title-format") or DEFAULT_TITLE,
        _edn_string(uncommented, ":journal/file-name-format") or DEFAULT_FILE,
        _edn_string(uncommented, ":journals-directory").strip("/") or DEFAULT_FOLDER,
    )


def _foam(text: str, source: str) -> tuple[Rules, Rules, list[str]]:
    """(exclude globs, include globs, described) from VS Code's settings of a Foam workspace."""
    try:
        settings = json.loads(_jsonc_to_json(text))
    except (ValueError, RecursionError) as exc:
        log.warning("%s is not the JSON VS Code writes (%s); Foam's excluded files are not read", source, exc)
        return [], [], [f"{source} could not be read as JSON: Foam's excluded files are not applied"]
    if not isinstance(settings, dict) or not any(isinstance(k, str) and k.startswith("foam.") for k in settings):
        return [], [], []  # not a Foam workspace: what VS Code alone hides is its own business
    written: list[tuple[str, str]] = []  # (glob, the setting it is in)
    for key in ("foam.files.exclude", "foam.files.ignore"):
        if isinstance(value := settings.get(key), list):
            written += [(g, key) for g in value if isinstance(g, str)]
    if isinstance(hidden := settings.get("files.exclude"), dict):  # {glob: true}; false or a `when` clause: shown
        written += [(g, "files.exclude") for g, on in hidden.items() if on is True]
    if isinstance(wanted := settings.get("foam.files.include"), list):
        written += [(g, "foam.files.include") for g in wanted if isinstance(g, str)]
    globs: Rules = []
    includes: Rules = []
    described: list[str] = []
    for glob, key in written:
        if not glob.strip():
            continue
        include = key == "foam.files.include"
        said = f"{'only ' if include else ''}{glob} (Foam's {key}, {source})"
        try:
            (includes if include else globs).append((glob_pattern(glob), said))
        except (regex.error, OverflowError, RecursionError) as exc:
            described.append(f"{said}: not a glob here ({exc}), not applied")
            continue
        described.append(said)
    return globs, includes, described


def glob_pattern(glob: str) -> regex.Pattern[str]:
    """A glob (VS Code's and picomatch's: `*`, `**`, `?`, `[…]`, `{a,b}`) as a pattern that finds
    a path it matches, or one whose folder it matches (`**/_site`, `_site/**/*` and `_site/**`
    all match `_site/a/b.md`). Case-sensitive, as both are on Linux."""
    glob = glob.strip().replace("\\", "/").removeprefix("./")
    while glob.endswith(("/**/*", "/**")):  # everything under a folder: the folder
        glob = glob.removesuffix("/**/*").removesuffix("/**")
    out: list[str] = []
    i, depth = 0, 0
    while i < len(glob):
        ch = glob[i]
        if glob.startswith("**/", i) and (i == 0 or glob[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and (end := glob.find("]", i + 2)) > 0:
            body = glob[i + 1 : end]
            negated = body[0] in "!^"
            out.append("[" + ("^" if negated else "") + body[negated:].replace("\\", "\\\\") + "]")
            i = end
        elif ch == "{":
            out.append("(?:")
            depth += 1
        elif ch == "}" and depth:
            out.append(")")
            depth -= 1
        elif ch == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(ch))
        i += 1
    out.append(")" * depth)
    return regex.compile("^(?:" + "".join(out) + ")(?:/|$)")


def _jsonc_to_json(text: str) -> str:
    """VS Code's settings (JSON with `//` and `/* */` comments and trailing commas) as JSON."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch in "}]":  # a trailing comma before it is dropped
            j = len(out) - 1
            while j >= 0 and out[j].isspace():
                j -= 1
            if j >= 0 and out[j] == ",":
                del out[j]
            out.append(ch)
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class ToolSettings:
    excludes: ToolExcludes = field(default_factory=ToolExcludes)
    journals: JournalFormat = field(default_factory=JournalFormat)


def read_tool_settings(vault: Path, excludes: bool = True) -> ToolSettings:
    """What the tools' settings files say; `excludes=False`: nothing left out."""
    prefixes: list[str] = []
    paths: list[str] = []
    patterns: Rules = []
    globs: Rules = []
    includes: Rules = []
    described: list[str] = []
    journals = JournalFormat()
    daily: dict[str, tuple[str, str] | None] = {}  # Obsidian's daily notes by settings file: (name, folder)
    for source in [f for f in SETTINGS_FILES if excludes or f not in EXCLUDING]:
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
        elif source == VSCODE_SETTINGS:
            g, inc, d = _foam(text, source)
            globs += g
            includes += inc
        elif source in (OBSIDIAN_DAILY, OBSIDIAN_PERIODIC):
            daily[source], d = _obsidian_daily(text, source), []
        else:
            uncommented = _without_edn_comments(text)
            journals = _journal_format(uncommented)
            e, d = _logseq(uncommented, source)
            paths += e
        described += d
    file, folder = daily.get(OBSIDIAN_PERIODIC) or daily.get(OBSIDIAN_DAILY) or ("", "")
    journals = replace(journals, daily_file=file, daily_folder=folder)
    if not excludes:  # what the Logseq config hides is still indexed
        return ToolSettings(journals=journals)
    return ToolSettings(
        ToolExcludes(tuple(prefixes), tuple(paths), patterns, globs, includes, tuple(described)), journals
    )


class VaultToolSettings:
    """The vault's tool settings, read again only when one of their files changes."""

    def __init__(self, vault: Path, excludes: bool = True) -> None:
        self.vault = vault
        self.excludes = excludes
        self._signature: tuple[tuple[int, int, int], ...] | None = None
        self._current = ToolSettings()

    def current(self) -> ToolSettings:
        signature = tuple(_signature(self.vault / source) for source in SETTINGS_FILES)
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
