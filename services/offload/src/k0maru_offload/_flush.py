"""FlushEngine: session content → a well-formed note, never overwriting anyone's work.

The file is written to a temp file in the target folder and then hard-linked into place:
link(2) fails if the name exists, so creation is atomic and exclusive (the O_EXCL
guarantee) and readers never see a half-written note. Equal content already there →
`up_to_date` without writing; a different file with that name → `-v2`, `-v3`, … Every
path is confined to the vault.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from k0maru_common import InvalidInput, OutsideVault, TooLarge, confine

from ._conventions import sniff

MAX_CONTENT_CHARS = 1_000_000
MAX_VERSIONS = 1000
MAX_CATEGORY_DEPTH = 8
MAX_CATEGORY_CHARS = 200


@dataclass(frozen=True)
class FlushNote:
    title: str
    content: str
    category: str = ""
    tags: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    source: str = "k0maru"
    extra_frontmatter: dict[str, object] = field(default_factory=dict)


def slugify(title: str) -> str:
    slug = re.sub(r"[^\w]+", "-", title.lower(), flags=re.UNICODE).strip("-_")
    return slug[:80].rstrip("-") or "note"


def _validate(note: FlushNote) -> None:
    if not note.title.strip():
        raise InvalidInput("title is empty")
    if len(note.title) > 300:
        raise InvalidInput("title is longer than 300 characters")
    if len(note.content) > MAX_CONTENT_CHARS:
        raise TooLarge(f"content is longer than {MAX_CONTENT_CHARS} characters")
    for name, value in (
        ("content", note.content),
        *(("tag", t) for t in note.tags),
        *(("related note", r) for r in note.related),
    ):
        if "\x00" in value:
            raise InvalidInput(f"{name} contains a NUL character (U+0000); notes are text")
    parts = [p for p in note.category.replace("\\", "/").split("/") if p.strip()]
    if len(note.category) > MAX_CATEGORY_CHARS or len(parts) > MAX_CATEGORY_DEPTH:
        raise InvalidInput(
            f"category is too deep or too long (at most {MAX_CATEGORY_DEPTH} levels, {MAX_CATEGORY_CHARS} characters)"
        )
    for part in (note.title, note.category):
        if "\x00" in part or ".." in part.replace("\\", "/").split("/") or part.startswith(("/", "\\")):
            raise OutsideVault(f"{part!r} would leave the vault")


def render(note: FlushNote, today: dt.date) -> str:
    meta: dict[str, object] = {"title": note.title.strip(), "date": today.isoformat()}
    if note.category:
        meta["category"] = note.category.strip().lower()
    meta["tags"] = [t.strip().lstrip("#") for t in note.tags if t.strip()]
    meta["source"] = note.source
    meta.update(note.extra_frontmatter)
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False).strip()
    body = note.content.strip()
    if not body.startswith("# "):
        body = f"# {note.title.strip()}\n\n{body}"
    related = [r.strip().removeprefix("[[").removesuffix("]]") for r in note.related if r.strip()]
    if related:
        body += "\n\n## Related\n\n" + "\n".join(f"- [[{r}]]" for r in dict.fromkeys(related))
    return f"---\n{front}\n---\n\n{body}\n"


class FlushEngine:
    def __init__(self, vault: Path) -> None:
        self.vault = vault.resolve()

    def flush(self, note: FlushNote, today: dt.date | None = None) -> tuple[str, str]:
        """Write the note; return (vault-relative path, outcome: created | up_to_date | versioned)."""
        _validate(note)
        day = today or dt.date.today()
        conventions = sniff(self.vault)
        folder = conventions.folder_for(note.category) if note.category else conventions.folder_for("log")
        if note.category and not folder:
            folder = "/".join(slugify(p) for p in note.category.replace("\\", "/").split("/") if p.strip())
        directory = confine(self.vault, folder) if folder else self.vault
        stem = slugify(note.title)
        if conventions.naming_style == "date-slug":
            stem = f"{day.isoformat()}-{stem}"
        text = render(note, day)
        target, outcome = write_versioned(directory, stem, text)
        rel = target.relative_to(self.vault).as_posix()
        confine(self.vault, rel)
        return rel, outcome


def _create_exclusive(target: Path, text: str) -> bool:
    """Atomically create `target` with `text`; False if the name is taken.

    The temp file is opened with mode 0666 so the process umask applies (0644 under the
    usual 022), like any file an editor would create; mkstemp's 0600 would hide notes
    from other readers of the vault.
    """
    tmp = _open_temp(target.parent)
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, target)
        except FileExistsError:
            return False
        return True
    finally:
        os.unlink(tmp)


def _open_temp(directory: Path) -> Path:
    for _ in range(100):
        tmp = directory / f".k0-flush-{secrets.token_hex(8)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temp name in {directory}")


def write_versioned(directory: Path, stem: str, text: str) -> tuple[Path, str]:
    """Write `stem.md`, or `stem-v2.md`, … if a different file holds the name; never overwrite.

    Returns (path, outcome) with outcome created | versioned | up_to_date (same text already there).
    """
    directory.mkdir(parents=True, exist_ok=True)
    for n in range(1, MAX_VERSIONS + 1):
        target = directory / (f"{stem}.md" if n == 1 else f"{stem}-v{n}.md")
        if _create_exclusive(target, text):
            return target, "created" if n == 1 else "versioned"
        with contextlib.suppress(OSError):
            if target.read_text(encoding="utf-8") == text:
                return target, "up_to_date"
    raise InvalidInput(f"more than {MAX_VERSIONS} versions of {stem}.md exist")
