"""ConventionSniffer: where notes of each kind go in this vault, and how each folder writes them.

Evidence, strongest first (ALGORITHMS.md B.7, extended):
  1. explicit rules (`.k0maru/rules.md`, `AGENTS.md`, `CLAUDE.md`, `RULES.md`, `CONVENTIONS.md`):
     `decisions: docs/adr` maps a kind to a folder; a line naming sections ("decision notes have
     the sections Context, Decision, Consequences") sets that kind's sections;
  2. a template (`templates/`, `_templates/`, `.obsidian/templates/`: `decision.md`, `adr.md`, …);
  3. folder topology (`decisions/`, `docs/adr`, `journal/`, numbered variants like `10_Decisions`
     or Johnny-Decimal `11 Decisions` one level down; PARA and Johnny-Decimal schemes detected);
  4. the notes already in each folder: naming (dated / timestamped / Johnny-Decimal id or not,
     word separator, case), the `##` sections most of them share, the frontmatter keys in use.
A folder without notes inherits the vault's dominant naming.

A vault written for a tool that only reads its own layout is written in that layout (`tool`), or
the tool would never show what an agent wrote: a Logseq graph (`logseq/config.edn`, or `pages/`
beside `journals/`) reads pages from `pages/` only, with `key:: value` properties; a Dendron vault
(`dendron.yml`, or `root.md` among notes named `a.b.c.md`) keeps every note in its root, the
hierarchy in the name (`decisions.2026-08-05-export-lock.md`), with `id`, `created` and `updated`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from k0maru_common import name_key, stated_day

from ._files import read_text_file

RULE_FILES = (".k0maru/rules.md", "AGENTS.md", "CLAUDE.md", "RULES.md", "CONVENTIONS.md")
_SKIP_NAMES = {"agents.md", "claude.md", "rules.md", "conventions.md", "readme.md", "index.md"}
_KEYS = {
    "decision": "decision",
    "decisions": "decision",
    "adr": "decision",
    "adrs": "decision",
    "log": "log",
    "logs": "log",
    "journal": "log",
    "daily": "log",
    "records": "log",
    "session": "log",
    "sessions": "log",
    "notes": "log",
    "concept": "concept",
    "concepts": "concept",
    "wiki": "concept",
    "card": "concept",
    "cards": "concept",
    "skill": "skill",
    "skills": "skill",
    "playbook": "skill",
    "playbooks": "skill",
}
# A Chinese vault's folders and rules-file keys, Simplified and Traditional (a vault with 决策/ and
# 日志/ had its decisions and session notes written unnumbered into its root)
_HAN_KINDS = {
    "decision": ("决策", "決策", "决策记录", "決策記錄", "架构决策", "架構決策", "决议", "決議"),
    "log": (
        "日志",
        "日誌",
        "日记",
        "日記",
        "会话",
        "會話",
        "会话记录",
        "會話記錄",
        "工作日志",
        "工作日誌",
        "记录",
        "紀錄",
        "記錄",
    ),
    "concept": ("概念", "知识", "知識", "知识库", "知識庫", "卡片"),
    "skill": ("技能", "手册", "手冊", "操作手册", "操作手冊"),
}
_KEYS |= {name: kind for kind, names in _HAN_KINDS.items() for name in names}
_TOPOLOGY = {
    "decision": ("decisions", "adr", "adrs", "docs/adr", "docs/decisions", "architecture", *_HAN_KINDS["decision"]),
    "log": ("logs", "journal", "daily", "records", "sessions", "notes", *_HAN_KINDS["log"]),
    "concept": ("concepts", "cards", "wiki", "notes", *_HAN_KINDS["concept"]),
    "skill": ("skills", "playbooks", *_HAN_KINDS["skill"]),
}
_TEMPLATE_DIRS = ("templates", "_templates", ".obsidian/templates", "Templates")
_TEMPLATE_NAMES = {
    "decision": ("decision.md", "adr.md"),
    "log": ("log.md", "journal.md", "session.md"),
    "concept": ("concept.md", "card.md"),
    "skill": ("skill.md",),
}
_DATE_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2})([-_ ]|$)")
_STAMP_PREFIX = re.compile(r"^(\d{14}|\d{12}|\d{8})([-_ ])")
_JD_PREFIX = re.compile(r"^(\d{2})\.(\d{2,3})([-_ ])")
RECORD_HEADING = re.compile(r"# +\d+\. ")  # adr-tools' title, "# 4. Use gRPC"
_NUMBER_PREFIX = re.compile(r"^(\d{3,5})([-_ ])")  # decision records: `0001-use-markdown.md`, `001_x.md`
NUMBERED_PREFIX = re.compile(r"^\d{1,3}(?:-\d{1,3})?[_ .-]+")
DATE_KEYS = {"date", "created", "updated", "modified", "created_at", "updated_at"}
SAMPLE = 50


def wordless_stem(title: str) -> str:
    """The name of a note whose title holds no letter or digit (`!!!???`, emoji alone): `note-`
    and 8 hex digits of the title. Every such title was `note.md`: the second, another note, was
    written as its `-v2` and said "versioned", as if it revised the first."""
    return "note-" + hashlib.sha1(title.strip().encode("utf-8", "surrogatepass")).hexdigest()[:8]


# what a file name on Windows, or in a vault synced there, cannot hold (`/` is a namespace's here)
_NOT_IN_FILE_NAME = re.compile(r'[\\:*?"<>|\x00-\x1f]')


@dataclass
class NameStyle:
    """How a folder names its notes: `2026-08-01-export-lock.md`, `Export lock.md`, `11.03 Export lock.md`…"""

    prefix: str = "date"  # "" | date | timestamp | jd | number
    separator: str = "-"  # between words: "-", "_" or " "
    case: str = "lower"  # lower | title | sentence | page (Logseq: the page's name as written)
    jd_area: str = ""  # the Johnny-Decimal category (`11`) when prefix == "jd"
    digits: int = 4  # the sequence number's width when prefix == "number" (`0001`)

    def words(self, title: str) -> str:
        if self.case == "page":  # Logseq names a page's file by the page: `a/b` is `a___b`, case kept
            name = " ".join(_NOT_IN_FILE_NAME.sub(" ", title).split()).replace("/", "___").strip(". ")
            return name[:120] or wordless_stem(title)
        parts = re.findall(r"[^\W_]+", title.strip(), flags=re.UNICODE)
        if self.case == "lower":
            parts = [p.lower() for p in parts]
        elif self.case == "title":
            parts = [p if p.isupper() else p[:1].upper() + p[1:] for p in parts]
        elif parts:
            parts = [parts[0][:1].upper() + parts[0][1:], *parts[1:]]
        return self.separator.join(parts)[:80].rstrip(self.separator) or wordless_stem(title)

    def stem(self, title: str, day: dt.date, directory: Path | None = None) -> str:
        base = self.words(title)
        if self.prefix == "date":
            return f"{day.isoformat()}{self.separator if self.separator != ' ' else '-'}{base}"
        if self.prefix == "timestamp":
            return f"{day.strftime('%Y%m%d')}0000{'-' if self.separator == ' ' else self.separator}{base}"
        if self.prefix == "jd" and self.jd_area:
            return f"{self.jd_area}.{_next_jd(directory, self.jd_area):02d} {base}"
        if self.prefix == "number":  # the next decision record's number, as adr-tools and MADR count
            return f"{next_number(directory):0{self.digits}d}{'-' if self.separator == ' ' else self.separator}{base}"
        return base

    def describe(self) -> str:
        example = self.stem("Example note", dt.date(2026, 8, 1))
        if self.prefix == "number":  # the next number, whatever it is
            return "N" * self.digits + example[self.digits :]
        return example.replace(f"{self.jd_area}.00", f"{self.jd_area}.NN")


def _next_jd(directory: Path | None, area: str) -> int:
    used = [0]
    if directory is not None and directory.is_dir():
        for entry in os.scandir(directory):
            m = _JD_PREFIX.match(entry.name)
            if m and m.group(1) == area:
                used.append(int(m.group(2)))
    return max(used) + 1


def next_number(directory: Path | None) -> int:
    """The next decision record's number in `directory` (1 in an empty or new folder)."""
    used = [0]
    if directory is not None and directory.is_dir():
        for entry in os.scandir(directory):
            if (m := _NUMBER_PREFIX.match(entry.name)) and not _DATE_PREFIX.match(entry.name):
                used.append(int(m.group(1)))
    return max(used) + 1


def core_words(stem: str) -> str:
    """A note name without its date/timestamp/Johnny-Decimal prefix and `-vN` suffix, as names
    compare (`name_key`: any case, any Unicode normal form)."""
    for rx in (_DATE_PREFIX, _STAMP_PREFIX, _JD_PREFIX, _NUMBER_PREFIX):
        stem = rx.sub("", stem, count=1)
    stem = re.sub(r"[-_ ]v\d+$", "", stem)
    return " ".join(re.findall(r"[^\W_]+", name_key(stem)))


@dataclass
class FolderRules:
    folder: str
    naming: NameStyle = field(default_factory=NameStyle)
    sections: list[str] = field(default_factory=list)
    frontmatter: list[str] | None = None  # keys in use; None = unknown (write the default set); [] = none
    template: str = ""  # vault-relative path of the template
    notes: int = 0  # how many notes the folder's rules were learned from
    properties: bool = False  # Logseq's `key:: value` lines instead of YAML frontmatter
    # decision records as adr-tools writes them: "# 4. Use gRPC" (the file's number), "Date: …" under it
    record_heading: bool = False
    date_line: bool = False
    tags: list[str] = field(default_factory=list)  # tags most of the folder's notes carry (`skill`, `adr`)


@dataclass
class Conventions:
    folders: dict[str, str] = field(default_factory=dict)  # category → vault-relative folder
    folder_scheme: str = "flat"
    naming_style: str = "date-slug"
    evidence: list[str] = field(default_factory=list)
    rule_files: list[str] = field(default_factory=list)
    rule_sections: dict[str, list[str]] = field(default_factory=dict)  # category ("*" = all) → sections
    templates: dict[str, str] = field(default_factory=dict)  # category → template path
    vault_naming: NameStyle = field(default_factory=NameStyle)
    per_folder: dict[str, FolderRules] = field(default_factory=dict)
    tool: str = ""  # "logseq" | "dendron" | "": the tool whose layout the vault is written in
    hierarchies: set[str] = field(default_factory=set)  # Dendron: the first parts of the root notes' names
    new_folders: set[str] = field(default_factory=set)  # mapped folders the vault has not got yet

    @property
    def default_folder(self) -> str:
        """Where a category with no folder of its own goes: Logseq reads pages from pages/ only."""
        return "pages" if self.tool == "logseq" else ""

    def hierarchy_for(self, category: str) -> str:
        """Dendron: the hierarchy a category's notes are named under (`decisions`, or the vault's
        own `adr` when its notes use that)."""
        key = self.category_key(category) if category.strip() else "log"
        own = re.sub(r"[^\w-]+", "-", category.strip().lower()).strip("-") or "notes"
        candidates = [c.replace("/", ".") for c in _TOPOLOGY.get(key, (own,))]
        return next((c for c in candidates if c in self.hierarchies), candidates[0])

    def category_key(self, category: str) -> str:
        c = category.strip().lower()
        return _KEYS.get(c, c)

    def folder_for(self, category: str) -> str:
        return self.folders.get(self.category_key(category), "")

    def learn_folder(self, vault: Path, folder: str) -> None:
        """Learn a folder the sniff did not map (a category that names an existing folder)."""
        if folder not in self.per_folder:
            rules = _learn(vault / folder if folder else vault, folder)
            if rules is not None:
                self.per_folder[folder] = rules

    def rules_for(self, category: str, folder: str) -> FolderRules:
        rules = self.per_folder.get(folder) or FolderRules(folder, naming=self.vault_naming)
        key = self.category_key(category) if category else "log"
        sections = self.rule_sections.get(key) or self.rule_sections.get("*")
        template = self.templates.get(key, "")
        frontmatter, naming = rules.frontmatter, rules.naming
        if self.tool == "logseq":  # properties, in k0maru's default set: Logseq shows them on the page
            frontmatter = None
            naming = NameStyle("", " ", "page")  # a page's file is its title (`___` is a namespace's /)
        elif self.tool == "dendron":  # the leaf of `hierarchy.leaf`: dated, lower-case words
            frontmatter = rules.frontmatter or ["id", "title", "desc", "updated", "created"]
            naming = NameStyle()
        return FolderRules(
            folder,
            naming,
            list(sections) if sections else list(rules.sections),
            frontmatter,
            template,
            rules.notes,
            properties=self.tool == "logseq",
            record_heading=rules.record_heading and naming.prefix == "number",
            date_line=rules.date_line and self.tool not in ("logseq", "dendron"),
            tags=list(rules.tags),
        )

    def describe(self) -> list[str]:
        out = []
        for category, folder in sorted(self.folders.items()):
            r = self.rules_for(category, folder)
            hierarchy = f"{self.hierarchy_for(category)}." if self.tool == "dendron" else ""
            new = " (a new folder)" if folder in self.new_folders else ""
            parts = [f"{category} → {folder or '(root)'}/{new}: {hierarchy}{r.naming.describe()}.md"]
            if r.properties:
                parts.append("Logseq properties")
            if r.sections:
                parts.append("sections " + ", ".join(r.sections))
            if r.frontmatter:
                parts.append("keys " + ", ".join(r.frontmatter))
            elif r.frontmatter == []:
                parts.append("no frontmatter")
            if r.template:
                parts.append(f"template {r.template}")
            out.append("; ".join(parts))
        return out


_DOCUMENT = re.compile(r"\.(?:md|markdown|txt|rst|adoc|org|json|ya?ml|toml|html?)$", re.IGNORECASE)


def _names_a_folder(vault: Path, written: str) -> bool:
    """Whether a rules file's `Kind: value` names a folder: one the vault has, or a path written as
    one (`docs/adr`, `logs/`); not a sentence ("logs: keep them short"), a URL (`Wiki: https://…`
    made a folder `https:/wiki.example.com/`), a file (`Decisions: docs/DECISIONS.md`: every
    decision failed, "File exists") or a word (`Logs: stdout`)."""
    folder = written.rstrip("/")
    if not folder or (vault / folder).is_dir():
        return bool(folder)
    if ":" in folder or " " in folder or _DOCUMENT.search(folder) or (vault / folder).exists():
        return False
    return "/" in written


def _safe(value: str) -> bool:
    return bool(value) and not value.startswith(("/", "\\")) and ".." not in value.replace("\\", "/").split("/")


def _read(path: Path, limit: int = 200_000) -> str:
    return read_text_file(path, limit)


def _dirs(path: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(path) if e.is_dir() and not e.name.startswith("."))
    except OSError:
        return []


_SECTION_LINE = re.compile(r"\bsections?\b|\bheadings?\b", re.IGNORECASE)


def _rule_sections(line: str) -> list[str]:
    """`Decision notes use the sections Context, Decision and Consequences.` → the names."""
    found = re.findall(r"#{2,3}\s*([^\n,;/`|]+?)(?=\s*(?:[,;/`|]|$| and ))", line)
    if not found:
        m = _SECTION_LINE.search(line)
        if m is None:
            return []
        tail = line[m.end() :]
        tail = re.sub(r"^[\s:=-]*(?:like|such as|named|called|with|are|is|:)?\s*", "", tail, flags=re.IGNORECASE)
        found = re.split(r"\s*(?:,|;|/|→|->|\||\band then\b|\bthen\b|\band\b)\s*", tail)
    names = []
    for raw in found:
        if not re.match(r"^\s*(?:[`#*\"']|[^\W\d_]*[A-Z])", raw):  # section names are capitalised or quoted
            continue
        name = raw.strip().strip("`*_\"'.:()[]").strip()
        name = re.sub(r"^#+\s*", "", name)
        if name and re.match(r"^[^\W\d_]", name) and len(name.split()) <= 4 and len(name) <= 40:
            names.append(name[:1].upper() + name[1:])
    return names if len(names) >= 2 else []


def _parse_rules(conv: Conventions, vault: Path, name: str, text: str) -> None:
    for raw in text.splitlines():
        line = raw.strip().lstrip("-*+ ").strip()
        if not line:
            continue
        if _SECTION_LINE.search(line) or line.count("##") >= 2:
            sections = _rule_sections(line)
            if sections:
                words = re.findall(r"[a-z]+", line.lower().split("section")[0])
                kind = next((_KEYS[w] for w in words if w in _KEYS), "*")
                if kind not in conv.rule_sections:
                    conv.rule_sections[kind] = sections
                    conv.evidence.append(f"{name}: {kind} notes have sections {', '.join(sections)}")
                continue
        key, sep, value = line.replace("：", ":", 1).partition(":")  # a Chinese rules file's full-width colon
        if not sep:
            continue
        category = _KEYS.get(key.strip().strip("*_`").lower())
        written = value.strip().strip("\"'`")
        folder = written.rstrip("/")
        if category and _safe(folder) and _names_a_folder(vault, written) and category not in conv.folders:
            conv.folders[category] = folder
            conv.evidence.append(f"{name}: {category} → {folder}/")


def sniff(vault: Path) -> Conventions:
    conv = Conventions()
    for name in RULE_FILES:
        path = vault / name
        if path.is_file():
            conv.rule_files.append(name)
            _parse_rules(conv, vault, name, _read(path, 100_000))
    conv.tool = _tool_of(vault)
    if conv.tool:
        for category in _TOPOLOGY:  # a rules file's mapping stays
            conv.folders.setdefault(category, conv.default_folder)
        conv.evidence.append(
            "a Logseq graph: new notes are pages in pages/, with properties (Logseq reads no other folder)"
            if conv.tool == "logseq"
            else "a Dendron vault: new notes in the root, named hierarchy.leaf.md (Dendron reads no folder)"
        )
        if conv.tool == "dendron":  # names only: one listing of the root
            with contextlib.suppress(OSError):
                conv.hierarchies = {
                    e.name.split(".", 1)[0].lower() for e in os.scandir(vault) if e.name.endswith(".md")
                }
    top = _dirs(vault) if vault.is_dir() else []
    para = sum(
        1
        for n in top
        if NUMBERED_PREFIX.sub("", n).lower() in {"projects", "areas", "resources", "archive", "archives"}
    )
    if para >= 3:
        conv.folder_scheme = "para"
        conv.evidence.append("PARA folders (Projects/Areas/Resources/Archive)")
    elif sum(1 for n in top if re.match(r"^\d{2}(-\d{2})?[_ .-]", n)) >= 2:
        conv.folder_scheme = "johnny-decimal"
        conv.evidence.append("top-level folders numbered like Johnny-Decimal: " + ", ".join(top)[:200])
    second = [f"{t}/{d}" for t in top for d in _dirs(vault / t)] if conv.folder_scheme != "flat" else []
    present = [c for candidates in _TOPOLOGY.values() for c in candidates if (vault / c).is_dir()]
    ignored = _ignored_by_git(vault, present)
    for category, candidates in _TOPOLOGY.items():
        if category in conv.folders:
            continue
        found = next((c for c in candidates if c in present and c not in ignored), None)
        if found is None:  # numbered variants: 10_Decisions, 00_Logs, 11 Decisions (one level down)
            found = next(
                (
                    n
                    for n in [*top, *second]
                    for c in candidates
                    if "/" not in c and NUMBERED_PREFIX.sub("", n.rsplit("/", 1)[-1]).lower() == c
                ),
                None,
            )
        if found:
            conv.folders[category] = found
            conv.evidence.append(f"folder {found}/ holds {category} notes")
    conv.folders.setdefault("skill", "skills")
    for tdir in _TEMPLATE_DIRS:
        if (vault / tdir).is_dir():
            for category, names in _TEMPLATE_NAMES.items():
                hit = next((n for n in names if (vault / tdir / n).is_file()), None)
                if hit and category not in conv.templates:
                    conv.templates[category] = f"{tdir}/{hit}"
                    conv.evidence.append(f"template {tdir}/{hit} for {category} notes")
    _learn_folders(vault, conv)
    conv.new_folders = {f for f in conv.folders.values() if f and not (vault / f).is_dir()}
    return conv


def _ignored_by_git(vault: Path, folders: list[str]) -> set[str]:
    """Of `folders`, those git ignores in a vault kept in git: a code repository's `logs/` holds
    build output and is ignored, and the session notes written there were never committed (a
    `git clean -X` would delete them); `notes/` beside it is where they belong."""
    if not folders or not any((p / ".git").exists() for p in (vault, *vault.parents)):
        return set()
    import subprocess

    from k0maru_common import GIT_SAFE, git_env

    try:
        out = subprocess.run(
            [*GIT_SAFE, "check-ignore", "--stdin"],
            cwd=vault,
            input="".join(f"{f}/\n" for f in folders),
            capture_output=True,
            text=True,
            timeout=5,
            env=git_env(),
        )
    except (OSError, subprocess.SubprocessError):  # no git, or it hangs: the folders as they are
        return set()
    return {line.rstrip("/") for line in out.stdout.splitlines()} if out.returncode in (0, 1) else set()


def _tool_of(vault: Path) -> str:
    """The tool whose layout the vault is written in, when that layout says so."""
    if (vault / "logseq" / "config.edn").is_file() or ((vault / "pages").is_dir() and (vault / "journals").is_dir()):
        return "logseq"
    if (vault / "dendron.yml").is_file() or (vault.parent / "dendron.yml").is_file():
        return "dendron"
    if (vault / "root.md").is_file():  # every Dendron vault has one, beside notes named a.b.c.md
        stems = [p.stem for p in _sample(vault)]
        if len(stems) >= 3 and sum("." in s for s in stems) * 2 >= len(stems):
            return "dendron"
    return ""


def _sample(directory: Path) -> list[Path]:
    try:
        entries = sorted(
            (e for e in os.scandir(directory) if e.name.endswith(".md") and not e.name.startswith(".")),
            key=lambda e: e.name,
        )
    except OSError:
        return []
    return [Path(e.path) for e in entries if e.name.lower() not in _SKIP_NAMES and e.is_file()][:SAMPLE]


def _naming(stems: list[str]) -> NameStyle:
    prefixes: Counter[str] = Counter()
    seps: Counter[str] = Counter()
    cases: Counter[str] = Counter()
    areas: Counter[str] = Counter()
    digits: Counter[int] = Counter()
    for stem in stems:
        rest = stem
        if m := _DATE_PREFIX.match(stem):
            prefixes["date"] += 1
            rest = stem[m.end() :]
        elif m := _STAMP_PREFIX.match(stem):
            prefixes["timestamp"] += 1
            rest = stem[m.end() :]
        elif m := _JD_PREFIX.match(stem):
            prefixes["jd"] += 1
            areas[m.group(1)] += 1
            rest = stem[m.end() :]
        elif m := _NUMBER_PREFIX.match(stem):
            prefixes["number"] += 1
            digits[len(m.group(1))] += 1
            rest = stem[m.end() :]
        else:
            prefixes[""] += 1
        counts = {s: rest.count(s) for s in ("-", "_", " ")}
        if any(counts.values()):
            seps[max(counts, key=lambda s: counts[s])] += 1
        words = re.findall(r"[^\W\d_]+", rest)
        if words:
            if all(w == w.lower() for w in words):
                cases["lower"] += 1
            elif len(words) > 1 and all(w[:1].isupper() for w in words):
                cases["title"] += 1
            elif words[0][:1].isupper():
                cases["sentence" if len(words) > 1 else "title"] += 1
    style = NameStyle(
        prefix=prefixes.most_common(1)[0][0] if prefixes else "date",
        separator=seps.most_common(1)[0][0] if seps else "-",
        case=cases.most_common(1)[0][0] if cases else "lower",
    )
    if style.prefix == "jd":
        style.jd_area = areas.most_common(1)[0][0]
    if style.prefix == "number":
        style.digits = digits.most_common(1)[0][0]
    return style


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, as the scanner's: 5x faster


def after_front_matter(text: str) -> str:
    """The note's text after its frontmatter block (all of it when it has none)."""
    if text.lstrip().startswith("---"):
        rest = text.lstrip()[3:]
        end = rest.find("\n---")
        if end >= 0:
            return rest[end + 4 :]
    return text


def front_matter(text: str) -> dict[Any, Any] | None:
    """The note's YAML frontmatter as a mapping; None when it has none or YAML cannot read it."""
    if not text.lstrip().startswith("---"):
        return None
    body = text.lstrip()[3:]
    end = body.find("\n---")
    if end < 0:
        return None
    try:
        meta = yaml.load(body[:end], Loader=_YAML_LOADER)  # a safe loader
    # and values its constructors refuse: `date: 2026-02-30`, `!!int x` (the scanner's parse_note)
    except (yaml.YAMLError, ValueError, TypeError, AttributeError, OverflowError, RecursionError):
        return None
    return meta if isinstance(meta, dict) else None


_HASHTAG = re.compile(r"(?<![\w#&/])#([^\W\d_][\w/-]*)")  # an inline `#tag` (not a heading, `&#39;` or a URL's)


def _tags_of(meta: dict[Any, Any] | None, body: str) -> set[str]:
    """The tags a note carries, lower-cased: its frontmatter's `tags` (a list, or words in a string)
    and its inline `#tags` outside code."""
    raw = meta.get("tags", meta.get("tag")) if meta else None
    listed = re.split(r"[,\s]+", raw) if isinstance(raw, str) else raw if isinstance(raw, list) else []
    body = re.sub(r"```.*?```|`[^`\n]*`", " ", body, flags=re.DOTALL) if "`" in body else body
    found = [str(t) for t in listed if t is not None] + _HASHTAG.findall(body)
    return {t.strip().lstrip("#").lower() for t in found if t.strip().lstrip("#")}


def _learn(directory: Path, folder: str) -> FolderRules | None:
    notes = _sample(directory)
    if not notes:
        return None
    rules = FolderRules(folder, _naming([p.stem for p in notes]), notes=len(notes))
    with_front = 0
    keys: Counter[str] = Counter()
    order: dict[str, int] = {}
    headings: Counter[str] = Counter()
    position: dict[str, list[int]] = {}
    numbered = dated = 0
    tags: Counter[str] = Counter()
    for path in notes:
        text = _read(path, 50_000)
        body = after_front_matter(text)
        numbered += bool(RECORD_HEADING.match(body.lstrip("\n")))
        dated += bool(stated_day(body))
        meta = front_matter(text)
        tags.update(_tags_of(meta, body))
        front = None if meta is None else [str(k) for k in meta]
        if front is not None:
            with_front += 1
            for k in front:
                keys[k] += 1
                order.setdefault(k, len(order))
        seen = re.findall(r"^## +(.+?)\s*$", text, flags=re.MULTILINE)
        for i, h in enumerate(dict.fromkeys(seen)):
            headings[h] += 1
            position.setdefault(h, []).append(i)
    if with_front * 2 < len(notes) and len(notes) >= 2:
        rules.frontmatter = []
    elif with_front:
        rules.frontmatter = sorted((k for k in keys if keys[k] * 2 >= with_front), key=lambda k: order[k])
    if len(notes) >= 2:
        shared = [h for h in headings if headings[h] * 2 > len(notes) and h.lower() not in {"related", "links"}]
        rules.sections = sorted(shared, key=lambda h: sum(position[h]) / len(position[h]))
        rules.record_heading = rules.naming.prefix == "number" and numbered * 2 > len(notes)
        rules.date_line = dated * 2 > len(notes)
        rules.tags = sorted(t for t in tags if tags[t] * 2 > len(notes))
    return rules


def _learn_folders(vault: Path, conv: Conventions) -> None:
    stems: list[str] = []
    for folder in dict.fromkeys([*conv.folders.values(), ""]):
        rules = _learn(vault / folder if folder else vault, folder)
        if rules is None:
            continue
        conv.per_folder[folder] = rules
        stems.extend(p.stem for p in _sample(vault / folder if folder else vault))
        conv.evidence.append(f"{folder or '(root)'}/: {rules.notes} notes named like {rules.naming.describe()}.md")
    if stems:
        conv.vault_naming = _naming(stems)
        if conv.vault_naming.prefix in ("jd", "number"):  # an id or a record's number: only inside its folder
            conv.vault_naming = NameStyle("", conv.vault_naming.separator, conv.vault_naming.case)
    conv.naming_style = _style_name(conv.vault_naming)


def _style_name(style: NameStyle) -> str:
    """The vault's dominant naming, in words (B.7's four styles, plus separator and case)."""
    prefix = {"date": "date-", "timestamp": "timestamp-", "jd": "jd-", "number": "number-", "": ""}[style.prefix]
    sep = {"-": "dash", "_": "underscore", " ": "space"}[style.separator]
    if style.case == "lower" and style.separator == "-":
        return f"{prefix}slug"
    return f"{prefix}{style.case}-{sep}"
