"""DistillEngine: a trace (or an offloaded log) → a reusable skill card in the skills folder.

The card has one frontmatter block (K0maru's code wraps its card in a second one and files
it in the vault root; we do neither): failure signature, stack and language, root-cause
identifiers, how it was located, the fix (commands run after the error), how to verify.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ._logscan import scan_log

_COMMAND = re.compile(
    r"^\s*(?:\$ |> )(.+)|^\s*((?:cargo|python3?|pytest|uv|pip|npm|npx|yarn|pnpm|node|tsc|go|gcc|g\+\+|clang|make|cmake|javac|java|mvn|gradle|git) .*)"
)
_IDENTIFIER = re.compile(
    r"\b(?:E\d{4}|TS\d{4}|[A-Z][A-Za-z]+(?:Error|Exception)|[A-Z_]{4,}|[\w./-]+\.(?:rs|py|go|ts|tsx|js|c|cc|cpp|h|java):\d+)\b"
)
_VERIFY = re.compile(r"\b(test|check|build|run|verify|pytest|tsc)\b")


@dataclass(frozen=True)
class SkillCard:
    title: str
    markdown: str
    tags: tuple[str, ...]
    language: str


def distill(trace: str, title: str = "") -> SkillCard:
    lines = trace.splitlines()
    findings = scan_log(lines)
    before: list[str] = []
    after: list[str] = []
    for i, line in enumerate(lines, start=1):
        m = _COMMAND.match(line)
        if m:
            cmd = (m.group(1) or m.group(2)).strip()
            (after if findings.error_line and i > findings.error_line else before).append(cmd)
    signature = findings.first_error or next((ln.strip() for ln in lines if ln.strip()), "unknown failure")
    idents = list(dict.fromkeys(_IDENTIFIER.findall(trace)))[:12]
    language = findings.language or "unknown"
    name = title.strip() or f"Fix: {signature[:70]}"
    verify = [c for c in after if _VERIFY.search(c)] or [c for c in before if _VERIFY.search(c)][-1:]
    fix = [c for c in after if c not in verify] or after
    tags = ("type/skill", f"lang/{re.sub(r'[^a-z0-9+-]', '-', language)}")
    around = lines[max(0, findings.error_line - 3) : findings.error_line + 8] if findings.error_line else lines[:10]

    def fence(items: list[str], lang: str = "bash") -> str:
        return f"```{lang}\n" + "\n".join(items) + "\n```" if items else "_none recorded in the trace_"

    body = "\n\n".join(
        [
            f"# {name}",
            "## Failure signature\n\n"
            + f"`{signature[:300]}`"
            + (f"\n\nat `{findings.location}`" if findings.location else ""),
            f"## Stack\n\n- language: {language}\n- error code: {findings.error_code or 'n/a'}",
            "## Root-cause identifiers\n\n" + ("\n".join(f"- `{i}`" for i in idents) or "_none found_"),
            "## How it was located\n\n" + fence(before) + "\n\n" + fence(around, "text"),
            "## Fix\n\n" + fence(fix),
            "## Verify\n\n" + fence(verify),
        ]
    )
    return SkillCard(name, body, tags, language)


def export_hermes(card: SkillCard, directory: Path, slug: str) -> Path:
    """Write the card in the Hermes skills format (name/description/trigger frontmatter).

    Created atomically and exclusively: an existing card with the same name is never
    overwritten (a different one gets `-v2`, `-v3`, …; the same text is left as it is).
    """
    import yaml

    from ._flush import write_versioned

    meta = {
        "name": slug,
        "description": card.title,
        "trigger": card.title,
        "parameters": {"type": "object", "properties": {}},
        "tags": list(card.tags),
    }
    text = f"---\n{yaml.safe_dump(meta, allow_unicode=True, sort_keys=False).strip()}\n---\n\n{card.markdown}\n"
    path, _ = write_versioned(directory, slug, text)
    return path
