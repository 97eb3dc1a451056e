"""ConventionSniffer: where notes of each kind go in this vault, and how they are named.

Evidence, strongest first: explicit rules (`.k0maru/rules.md`, `AGENTS.md`, `CLAUDE.md`,
`RULES.md`, `CONVENTIONS.md`: lines like `decisions: docs/adr`), then folder heuristics
(Johnny-Decimal `00_/10_/20_`, PARA, `docs/adr`, `decisions/`, `journal/`), then the naming
style of existing files (`YYYY-MM-DD-slug.md` versus `slug.md`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

RULE_FILES = (".k0maru/rules.md", "AGENTS.md", "CLAUDE.md", "RULES.md", "CONVENTIONS.md")
_KEYS = {
    "decision": "decision",
    "decisions": "decision",
    "adr": "decision",
    "log": "log",
    "logs": "log",
    "journal": "log",
    "daily": "log",
    "records": "log",
    "notes": "log",
    "concept": "concept",
    "concepts": "concept",
    "wiki": "concept",
    "card": "concept",
    "cards": "concept",
    "skill": "skill",
    "skills": "skill",
}
_TOPOLOGY = {
    "decision": ("decisions", "adr", "docs/adr", "docs/decisions", "architecture"),
    "log": ("logs", "journal", "daily", "records", "notes"),
    "concept": ("concepts", "cards", "wiki", "notes"),
    "skill": ("skills", "Skills"),
}
_DATE_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}([-_ ]|$)")


@dataclass
class Conventions:
    folders: dict[str, str] = field(default_factory=dict)  # category → vault-relative folder
    folder_scheme: str = "flat"
    naming_style: str = "date-slug"
    evidence: list[str] = field(default_factory=list)
    rule_files: list[str] = field(default_factory=list)

    def folder_for(self, category: str) -> str:
        key = _KEYS.get(category.strip().lower(), category.strip().lower())
        return self.folders.get(key, "")


def _safe(value: str) -> bool:
    return bool(value) and not value.startswith(("/", "\\")) and ".." not in value.split("/")


def sniff(vault: Path) -> Conventions:
    conv = Conventions()
    for name in RULE_FILES:
        path = vault / name
        if not path.is_file():
            continue
        conv.rule_files.append(name)
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            line = raw.strip().lstrip("-* ")
            key, sep, value = line.partition(":")
            if not sep:
                continue
            category = _KEYS.get(key.strip().strip("*_`").lower())
            folder = value.strip().strip("\"'`").rstrip("/")
            if category and _safe(folder) and category not in conv.folders:
                conv.folders[category] = folder
                conv.evidence.append(f"{name}: {category} → {folder}/")
    top = (
        sorted(e.name for e in os.scandir(vault) if e.is_dir() and not e.name.startswith(".")) if vault.is_dir() else []
    )
    if sum(1 for n in top if re.match(r"^\d{2}[_ .-]", n)) >= 2:
        conv.folder_scheme = "johnny-decimal"
        conv.evidence.append(
            "top-level folders numbered like Johnny-Decimal: "
            + ", ".join(n for n in top if re.match(r"^\d{2}", n))[:200]
        )
    elif (
        sum(
            1
            for n in top
            if re.sub(r"^\d+[_ .-]*", "", n).lower() in {"projects", "areas", "resources", "archive", "archives"}
        )
        >= 3
    ):
        conv.folder_scheme = "para"
        conv.evidence.append("PARA folders (Projects/Areas/Resources/Archive)")
    for category, candidates in _TOPOLOGY.items():
        if category in conv.folders:
            continue
        found = next((c for c in candidates if (vault / c).is_dir()), None)
        if found is None:  # numbered variants: 10_Decisions, 00_Logs, …
            found = next(
                (n for n in top for c in candidates if re.sub(r"^\d+[_ .-]*", "", n).lower() == c.lower()), None
            )
        if found:
            conv.folders[category] = found
            conv.evidence.append(f"folder {found}/ holds {category} notes")
    conv.folders.setdefault("skill", "skills")
    conv.naming_style = _naming_style(vault, conv)
    return conv


def _naming_style(vault: Path, conv: Conventions) -> str:
    dated = plain = 0
    for folder in [*conv.folders.values(), ""]:
        directory = vault / folder
        if not directory.is_dir():
            continue
        for entry in sorted(os.scandir(directory), key=lambda e: e.name)[:200]:
            if (
                entry.is_file()
                and entry.name.endswith(".md")
                and not entry.name.startswith(".")
                and entry.name.upper() not in {"AGENTS.MD", "CLAUDE.MD", "RULES.MD", "CONVENTIONS.MD", "README.MD"}
            ):
                if _DATE_NAME.match(entry.name):
                    dated += 1
                else:
                    plain += 1
    if dated or plain:
        conv.evidence.append(f"file names: {dated} dated, {plain} plain")
    return "date-slug" if dated >= plain else "slug"
