"""ProjectLoadout: what an agent should read first, in one bounded answer.

Rules files, detected conventions, hub notes (maps of content: notes named index/MOC/hub/
README, or with the most outgoing wikilinks), recent decisions and the skills index.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ._conventions import Conventions, sniff

_WIKILINK = re.compile(r"\[\[[^\]\n]+\]\]")
_HUB_NAME = re.compile(r"(^|[-_ ])(index|moc|hub|map|readme|home|overview)([-_ .]|$)", re.IGNORECASE)
MAX_FILES = 5000


@dataclass
class Loadout:
    rules: list[tuple[str, str]] = field(default_factory=list)
    conventions: Conventions = field(default_factory=Conventions)
    hubs: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    markdown: str = ""


def _notes(directory: Path, vault: Path) -> list[Path]:
    out: list[Path] = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out.extend(Path(root) / f for f in files if f.endswith(".md") and not f.startswith("."))
        if len(out) > MAX_FILES:
            break
    return out


def build_loadout(vault: Path, max_chars: int = 6000) -> Loadout:
    vault = vault.resolve()
    conv = sniff(vault)
    loadout = Loadout(conventions=conv)
    for name in conv.rule_files:
        loadout.rules.append((name, (vault / name).read_text(encoding="utf-8", errors="replace")[:2000]))
    notes = _notes(vault, vault)
    scored = []
    for path in notes:
        try:
            links = len(_WIKILINK.findall(path.read_text(encoding="utf-8", errors="replace")[:200_000]))
        except OSError:
            continue
        rel = path.relative_to(vault).as_posix()
        scored.append((links + (20 if _HUB_NAME.search(path.stem) else 0), rel))
    loadout.hubs = [rel for score, rel in sorted(scored, key=lambda s: (-s[0], s[1]))[:8] if score > 0]
    for category, target in (("decision", loadout.decisions), ("skill", loadout.skills)):
        folder = conv.folders.get(category)
        if folder and (vault / folder).is_dir():
            found = sorted(_notes(vault / folder, vault), key=lambda p: p.stat().st_mtime, reverse=True)
            target.extend(p.relative_to(vault).as_posix() for p in found[:10])
    parts = [f"# Loadout for {vault.name}"]
    for name, text in loadout.rules:
        parts.append(f"## Rules ({name})\n\n{text.strip()}")
    parts.append(
        "## Conventions\n\n"
        + f"- folders: {conv.folder_scheme}; names: {conv.naming_style}\n"
        + "\n".join(f"- {c}: {f}/" for c, f in sorted(conv.folders.items()))
    )
    for heading, items in (
        ("Hub notes", loadout.hubs),
        ("Recent decisions", loadout.decisions),
        ("Skills", loadout.skills),
    ):
        if items:
            parts.append(f"## {heading}\n\n" + "\n".join(f"- [[{i.removesuffix('.md')}]]" for i in items))
    text = "\n\n".join(parts)
    loadout.markdown = text if len(text) <= max_chars else text[: max_chars - 20].rstrip() + "\n\n…(truncated)"
    return loadout
