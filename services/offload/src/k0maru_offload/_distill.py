"""DistillEngine: any trace (a session transcript, a build log, notes) → a reusable skill card.

What is read from the trace (ALGORITHMS.md B.8, generalised):
  - the first error and the user's own location (the log analyser, all toolchain families), else
    the first line that names an `…Error`/`…Exception`/`error:`/`FAILED`;
  - commands: `$ cmd`, `> cmd`, `% cmd`, `PS> cmd`, lines inside ```sh fences, and lines that
    start with a known tool (cargo, pytest, go, npm, mvn, gcc, …); before the error they show how
    it was found, after it how it was fixed; test/build/check commands are the verification;
  - stated fixes and causes: `Fix:`, `Fixed by:`, `Solution:`, `Resolution:`, `Workaround:`,
    `Root cause:`, `Cause:` lines (with their continuation lines);
  - the language, from the analyser or else by vote over commands and file extensions.
Code in the card is quoted with a backtick run longer than any inside it, so backticks survive.
The card has one frontmatter block and lands in the skills folder (B.8's card did neither).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ._logscan import scan_log

_TOOLS = (
    "cargo|rustc|python3?|pytest|uv|pip3?|poetry|npm|npx|yarn|pnpm|node|deno|bun|tsc|jest|go|gcc|g\\+\\+|clang\\+\\+|clang"
    "|make|cmake|ctest|ninja|javac|java|mvn|gradle|\\./gradlew|git|docker|kubectl|sed|export|brew|apt-get|apt"
)
# `>` is a prompt with one space after it: pytest marks the failing source line with `>` and
# a run of spaces (`>       assert pool.size == 50`), which was then a "command" of the card
_PROMPT = re.compile(r"^\s*(?:\$|>(?= \S)|%|PS>|PS [A-Z]:\\[^>]*>|❯|➜)\s+(\S.*)$")
_TOOL_LINE = re.compile(rf"^\s*((?:sudo\s+)?(?:{_TOOLS})(?:\s.*)?)$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(\w*)")
_STATED = re.compile(
    r"^\s*(?:[-*]\s+)?\**(fix|fixed by|fixed|solution|resolution|resolved by|workaround|root cause|cause|because)\**\s*[:：]\s*(.*)$",
    re.IGNORECASE,
)
_ERRORISH = re.compile(
    r"\b([A-Z][\w.]*(?:Error|Exception)|error(?:\[E\d+\])?:|FAILED|FAIL:|fatal:|panic:|Segmentation fault)"
)
_IDENTIFIER = re.compile(
    r"\b(?:E\d{4}|TS\d{4}|[A-Z][A-Za-z]+(?:Error|Exception)|[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}"
    r"|[\w./-]+\.(?:rs|py|go|ts|tsx|js|mjs|c|cc|cpp|h|hpp|java|kt):\d+)\b"
)
_VERIFY = re.compile(r"\b(test|tests|check|build|run|verify|pytest|tsc|ctest|vet|lint|ci)\b")
_LANG_BY_TOOL = {
    "cargo": "rust",
    "rustc": "rust",
    "python": "python",
    "python3": "python",
    "pytest": "python",
    "pip": "python",
    "pip3": "python",
    "uv": "python",
    "poetry": "python",
    "npm": "node",
    "npx": "node",
    "yarn": "node",
    "pnpm": "node",
    "node": "node",
    "tsc": "typescript",
    "jest": "node",
    "go": "go",
    "gcc": "c/c++",
    "g++": "c/c++",
    "clang": "c/c++",
    "clang++": "c/c++",
    "make": "c/c++",
    "cmake": "c/c++",
    "ctest": "c/c++",
    "javac": "java",
    "java": "java",
    "mvn": "java",
    "gradle": "java",
    "./gradlew": "java",
}
_LANG_BY_EXT = {
    "rs": "rust",
    "py": "python",
    "go": "go",
    "ts": "typescript",
    "tsx": "typescript",
    "js": "node",
    "mjs": "node",
    "c": "c/c++",
    "cc": "c/c++",
    "cpp": "c/c++",
    "h": "c/c++",
    "hpp": "c/c++",
    "java": "java",
    "kt": "java",
}


@dataclass(frozen=True)
class SkillCard:
    title: str
    markdown: str
    tags: tuple[str, ...]
    language: str


def code_span(text: str) -> str:
    """Inline code that survives backticks inside it (CommonMark: a longer backtick run as delimiter)."""
    text = " ".join(text.split())
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code_block(lines: list[str], lang: str = "") -> str:
    body = "\n".join(lines)
    longest = max((len(m) for m in re.findall(r"`{3,}", body)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{lang}\n{body}\n{fence}"


@dataclass
class _Trace:
    commands: list[tuple[int, str]]
    stated: dict[str, list[str]]


def _read_trace(lines: list[str]) -> _Trace:
    commands: list[tuple[int, str]] = []
    stated: dict[str, list[str]] = {}
    fence: str | None = None
    shell_fence = False
    current: list[str] | None = None
    for i, line in enumerate(lines, start=1):
        if m := _FENCE.match(line):
            if fence is None:
                fence, shell_fence = m.group(1), m.group(2).lower() in ("", "sh", "bash", "shell", "console", "zsh")
            elif line.strip().startswith(fence):
                fence = None
            continue
        if m := _STATED.match(line):
            kind = m.group(1).lower()
            key = "cause" if kind in ("root cause", "cause", "because") else "fix"
            current = stated.setdefault(key, [])
            if m.group(2).strip():
                current.append(m.group(2).strip())
            continue
        if (
            current is not None
            and line.strip()
            and (line.startswith((" ", "\t")) or line.lstrip().startswith(("-", "*")))
        ):
            current.append(line.strip().lstrip("-* ").strip())
            continue
        current = None
        if m := _PROMPT.match(line):
            commands.append((i, m.group(1).strip()))
        elif (fence is not None and shell_fence and line.strip()) or (fence is None and _TOOL_LINE.match(line)):
            cmd = line.strip()
            if fence is not None or not _ERRORISH.search(cmd):
                commands.append((i, cmd))
    return _Trace(commands, stated)


def _language(found: str, commands: list[str], trace: str) -> str:
    if found:
        return found
    votes: Counter[str] = Counter()
    for cmd in commands:
        tool = cmd.split()[0] if cmd.split() else ""
        if tool == "sudo" and len(cmd.split()) > 1:
            tool = cmd.split()[1]
        if tool in _LANG_BY_TOOL:
            votes[_LANG_BY_TOOL[tool]] += 2
    for ext in re.findall(r"\b[\w/.-]+\.(rs|py|go|tsx?|m?js|c|cc|cpp|hpp|h|java|kt)\b", trace):
        votes[_LANG_BY_EXT[ext]] += 1
    if "Traceback (most recent call last)" in trace:
        votes["python"] += 3
    return votes.most_common(1)[0][0] if votes else "unknown"


def distill(trace: str, title: str = "", hint: str = "") -> SkillCard:
    lines = trace.splitlines()
    findings = scan_log(lines)
    error_line = findings.error_line
    signature = findings.first_error
    if not signature:
        for i, line in enumerate(lines, start=1):
            if _ERRORISH.search(line) and not _PROMPT.match(line) and not _STATED.match(line):
                signature, error_line = line.strip(), i
                break
    parsed = _read_trace(lines)
    commands = [c for _, c in parsed.commands]
    before = [c for i, c in parsed.commands if not error_line or i < error_line]
    after = [c for i, c in parsed.commands if error_line and i > error_line]
    fix_text = parsed.stated.get("fix", [])
    cause_text = parsed.stated.get("cause", [])
    language = _language(findings.language, commands, trace)
    if title.strip():
        name = title.strip()
    elif signature:
        name = f"Fix: {signature[:90]}"
    elif fix_text:
        name = f"Fix: {fix_text[0][:90]}"
    elif hint.strip():
        name = hint.strip()[:100]
    else:
        name = next((ln.strip()[:90] for ln in lines if ln.strip() and not _PROMPT.match(ln)), "Troubleshooting")
    verify = [c for c in after if _VERIFY.search(c)] or [c for c in before if _VERIFY.search(c)][-1:]
    fix_commands = [c for c in after if c not in verify]
    idents = list(dict.fromkeys(_IDENTIFIER.findall(trace)))[:12]
    tags = ("type/skill", f"lang/{re.sub(r'[^a-z0-9+-]', '-', language)}")
    around = lines[max(0, error_line - 3) : error_line + 8] if error_line else lines[:10]

    def commands_or(items: list[str], empty: str) -> str:
        return code_block(items, "bash") if items else empty

    fix_parts = [
        *(f"- {t}" for t in fix_text),
        *([commands_or(fix_commands, "")] if fix_commands else []),
    ]
    signature_text = code_span(signature[:300]) if signature else "_no error line in the trace_"
    if findings.location:
        signature_text += f"\n\nat {code_span(findings.location)}"
    body = "\n\n".join(
        [
            f"# {name}",
            "## Failure signature\n\n" + signature_text,
            f"## Stack\n\n- language: {language}\n- error code: {findings.error_code or 'n/a'}",
            "## Root cause\n\n"
            + "\n".join(
                [
                    *(f"- {t}" for t in cause_text),
                    *(f"- {code_span(i)}" for i in idents),
                ]
                or ["_not stated in the trace_"]
            ),
            "## How it was located\n\n"
            + commands_or(before, "_no commands before the error_")
            + "\n\n"
            + code_block(around, "text"),
            "## Fix\n\n" + ("\n\n".join(p for p in fix_parts if p) or "_not recorded in the trace_"),
            "## Verify\n\n" + commands_or(verify, "_no verification command in the trace_"),
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
