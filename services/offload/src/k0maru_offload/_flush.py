"""FlushEngine: session content → a well-formed note, never overwriting anyone's work.

The file is written to a temp file in the target folder and then hard-linked into place:
link(2) fails if the name exists, so creation is atomic and exclusive (the O_EXCL
guarantee) and readers never see a half-written note. Equal content already there →
`up_to_date` without writing; a different file with that name → `-v2`, `-v3`, … A name is
taken also by a file spelled the same but for case or Unicode normal form (`Rust.md` for
`rust.md`, a decomposed `café.md`): a vault synced to macOS or Windows cannot hold both, and
the sync would keep one of them. Every path is confined to the vault.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from k0maru_common import CannotWrite, InvalidInput, OutsideVault, TooLarge, confine, name_key, stated_day

from ._conventions import (
    DATE_KEYS,
    NUMBERED_PREFIX,
    RECORD_HEADING,
    FolderRules,
    after_front_matter,
    core_words,
    front_matter,
    next_number,
    sniff,
    wordless_stem,
)
from ._files import VaultFolder, make_folder, read_text_file, sweep_stale_temps
from ._outline import logseq_outline

# A numbered folder's next number is read, then written under: two flushes at once (two agents'
# decisions) both took 0010, one headed "# 9." — the number and the note are taken together here
_NUMBERING = threading.Lock()
# in bytes, as the scanner measures a note (`K0_MAX_FILE_BYTES`, 2 MB): 1,000,000 characters of
# Chinese made a 2.9 MB note the index never held, and the answer said only `searchable: false`
MAX_CONTENT_BYTES = 1_000_000
MAX_VERSIONS = 1000
MAX_CATEGORY_DEPTH = 8
MAX_CATEGORY_CHARS = 200
MAX_NOTE_NAME = 1000  # characters of a related or superseded note's name or path


@dataclass(frozen=True)
class FlushNote:
    title: str
    content: str
    category: str = ""
    tags: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    source: str = "k0maru"
    supersedes: tuple[str, ...] = ()  # notes this one replaces: its `supersedes` property
    extra_frontmatter: dict[str, object] = field(default_factory=dict)


def slugify(title: str) -> str:
    slug = re.sub(r"[^\w]+", "-", title.lower(), flags=re.UNICODE).strip("-_")
    return slug[:80].rstrip("-") or wordless_stem(title)


def _validate(note: FlushNote) -> None:
    if not note.title.strip():
        raise InvalidInput("title is empty")
    if len(note.title) > 300:
        raise InvalidInput("title is longer than 300 characters")
    if len(note.content) > MAX_CONTENT_BYTES or len(note.content.encode("utf-8", "replace")) > MAX_CONTENT_BYTES:
        raise TooLarge(f"content is larger than {MAX_CONTENT_BYTES:,} bytes (UTF-8): a note the index can hold")
    for name, value in (
        ("title", note.title),  # not "would leave the vault": it is no name at all
        ("category", note.category),
        ("content", note.content),
        *(("tag", t) for t in note.tags),
        *(("related note", r) for r in note.related),
        *(("superseded note", r) for r in note.supersedes),
    ):
        if "\x00" in value:
            raise InvalidInput(f"{name} contains a NUL character (U+0000); notes are text")
    for name, names in (("related note", note.related), ("superseded note", note.supersedes)):
        for typed in _note_names(names):  # written as `[[typed]]`: a link must hold it whole, on one line
            if "\n" in typed or "\r" in typed or "[[" in typed or "]]" in typed or len(typed) > MAX_NOTE_NAME:
                raise InvalidInput(
                    f"{name} {typed[:80]!r} is no note name: one line of at most {MAX_NOTE_NAME} characters, "
                    "without [[ or ]]"
                )
    parts = [p for p in note.category.replace("\\", "/").split("/") if p.strip()]
    if len(note.category) > MAX_CATEGORY_CHARS or len(parts) > MAX_CATEGORY_DEPTH:
        raise InvalidInput(
            f"category is too deep or too long (at most {MAX_CATEGORY_DEPTH} levels, {MAX_CATEGORY_CHARS} characters)"
        )
    for part in (note.title, note.category):
        if ".." in part.replace("\\", "/").split("/") or part.startswith(("/", "\\")):
            raise OutsideVault(f"{part!r} would leave the vault")


_PLACEHOLDER = "_Not recorded in this session._"
# a record's sections that hold no content of its own (what an ADR's `Status`, `Date`, … say)
_META_SECTIONS = frozenset(
    {
        "status",
        "date",
        "metadata",
        "deciders",
        "owners",
        "authors",
        "tags",
        "related",
        "links",
        "references",
        "see also",
    }
)
_TEMPLATE_VAR = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_NOT_IN_HASHTAG = re.compile(r"[^\w\-/]+")  # what an inline `#tag` cannot hold (the scanner's `_INLINE_TAG`)


def _tag_names(note: FlushNote) -> list[str]:
    return [t.strip().lstrip("#") for t in note.tags if t.strip().lstrip("#")]


def _hashtag_line(note: FlushNote, body: str) -> str:
    """The note's tags as inline hashtags (`ab test` → `#ab-test`), those the body holds already
    left out: how a folder whose notes have no frontmatter carries tags (Foam, Obsidian)."""
    out: list[str] = []
    for tag in _tag_names(note):
        name = _NOT_IN_HASHTAG.sub("-", tag).strip("-/")
        if name and not name.isdigit() and not re.search(rf"(?<![\w#])#{re.escape(name)}(?![\w\-/])", body):
            out.append(f"#{name}")
    return " ".join(dict.fromkeys(out))


def _note_names(names: tuple[str, ...]) -> list[str]:
    """Note names as typed (`[[x]]` or `x`), without their brackets, blanks and repeats."""
    return list(dict.fromkeys(n.strip().removeprefix("[[").removesuffix("]]").strip() for n in names if n.strip()))


def _superseded_line(note: FlushNote) -> str:
    """The line that says which notes this one replaces, as an ADR's status line says it (the
    scanner reads its links as `supersedes`): where the note has no frontmatter to hold them."""
    names = _note_names(note.supersedes)
    return f"Supersedes {', '.join(f'[[{n}]]' for n in names)}." if names else ""


def _meta(note: FlushNote, today: dt.date, keys: list[str] | None) -> dict[str, object] | None:
    """The frontmatter in the folder's own keys (None: the folder's notes have none)."""
    tags = _tag_names(note)
    category = note.category.strip().lower()
    if keys is None:  # nothing to follow: k0maru's default set
        meta: dict[str, object] = {"title": note.title.strip(), "date": today.isoformat()}
        if category:
            meta["category"] = category
        meta["tags"] = tags
        meta["source"] = note.source
    elif not keys:
        return None
    else:
        meta = {}
        for key in keys:
            k = key.lower()
            if key in note.extra_frontmatter:  # in the folder's order
                meta[key] = note.extra_frontmatter[key]
            elif k in ("title", "name"):
                meta[key] = note.title.strip()
            elif k in DATE_KEYS:
                meta[key] = today.isoformat()
            elif k in ("tags", "tag", "keywords"):
                meta[key] = tags
            elif k in ("category", "type", "kind") and category:
                meta[key] = category
            elif k == "source":
                meta[key] = note.source
        if tags and not any(k.lower() in ("tags", "tag", "keywords") for k in keys):
            meta["tags"] = tags
    meta.update(note.extra_frontmatter)
    if superseded := _note_names(note.supersedes):  # a link property, as Obsidian writes one
        meta["supersedes"] = [f"[[{n}]]" for n in superseded]
    return meta


def _main_section(sections: list[str], category: str) -> str:
    """The section that holds a note's content when it has no sections of its own: the one named
    after its kind (`Decision`, MADR's `Decision Outcome`), else the first that is no record's
    metadata. A decision record's first section is its `Status`: the decision was written there."""
    kind = category.strip().lower()
    named = [s for s in sections if kind and kind in s.lower()]
    return next(iter(named), None) or next((s for s in sections if s.lower() not in _META_SECTIONS), sections[0])


def _with_sections(body: str, sections: list[str], category: str = "") -> str:
    """Put the content under the folder's sections, in their order; sections it does not fill say
    so, but a decision's `Status`, which says it was taken (adr-tools writes "Accepted")."""
    present = {h.strip().lower() for h in re.findall(r"^## +(.+)$", body, flags=re.MULTILINE)}
    if present:
        missing = [s for s in sections if s.lower() not in present]
        return body + "".join(f"\n\n## {s}\n\n{_filler(s, category)}" for s in missing)
    main = _main_section(sections, category)
    return "\n\n".join(f"## {s}\n\n{(body or _PLACEHOLDER) if s == main else _filler(s, category)}" for s in sections)


def _filler(section: str, category: str) -> str:
    if section.strip().lower() == "status" and category.strip().lower() == "decision":
        return "Accepted"
    return _PLACEHOLDER


def render(
    note: FlushNote, today: dt.date, rules: FolderRules | None = None, vault: Path | None = None, number: int = 0
) -> str:
    """The note as the folder writes its notes: its frontmatter keys, its sections or its template;
    a decision record's number in its title and its day under it, as the folder's records have them."""
    rules = rules or FolderRules("")
    meta = _meta(note, today, rules.frontmatter)
    content = note.content
    given = front_matter(content) if meta is not None and content.lstrip().startswith("---") else None
    if meta is not None and given:  # the agent's own frontmatter joins the note's: it was left as text
        meta.update((str(k), v) for k, v in given.items() if str(k) not in meta)  # (a Logseq page's first block)
        content = after_front_matter(content)
    if meta is not None and rules.properties:
        front = _properties(meta)
    elif meta is not None:
        front = f"---\n{yaml.safe_dump(meta, allow_unicode=True, sort_keys=False).strip()}\n---\n\n"
    else:
        front = ""
    related = _note_names(note.related)
    links = "\n".join(f"- [[{r}]]" for r in related)
    content = _without_blank_lines_around(content)
    template = ""
    if rules.template and vault is not None:
        # a template symlinked out of the vault (a cloned repo's `templates/decision.md` →
        # `~/.aws/credentials`) would copy that file into a note an agent may commit: not used
        with contextlib.suppress(OutsideVault):
            template = read_text_file(confine(vault, rules.template))
    if template:
        values = {
            "title": note.title.strip(),
            "date": today.isoformat(),
            "content": content,
            "summary": content.split("\n\n", 1)[0],
            "category": note.category.strip().lower(),
            "tags": ", ".join(_tag_names(note)),
            "related": ", ".join(f"[[{r}]]" for r in related),
            "relatednotes": ", ".join(f"[[{r}]]" for r in related),
        }
        used = {m.lower().replace("_", "") for m in _TEMPLATE_VAR.findall(template)}
        body = _TEMPLATE_VAR.sub(lambda m: values.get(m.group(1).lower().replace("_", ""), m.group(0)), template)
        body = body.strip()
        if "content" not in used:
            body += f"\n\n{content}"
        if links and "related" not in used and "relatednotes" not in used:
            body += f"\n\n## Related\n\n{links}"
        if body.startswith("---"):
            front = ""
        if not front and (superseded := _superseded_line(note)):  # the template's frontmatter has no place
            body += f"\n\n{superseded}"
        if "tags" not in used and not front and (hashtags := _hashtag_line(note, body)):
            body += f"\n\n{hashtags}"  # the template's own frontmatter, or none, has no place for them
        return f"{front}{body}\n"
    body = content
    if rules.sections:
        body = _with_sections(body, rules.sections, note.category)
    if not body.startswith("# "):
        title = f"{number}. {note.title.strip()}" if number and rules.record_heading else note.title.strip()
        body = f"# {title}\n\n{f'Date: {today.isoformat()}{chr(10)}{chr(10)}' if rules.date_line else ''}{body}"
    if meta is None and (superseded := _superseded_line(note)):  # under the title, where an ADR says it
        title, _, rest = body.partition("\n")
        body = f"{title}\n\n{superseded}\n\n{rest.lstrip(chr(10))}".rstrip("\n")
    if links:
        body += f"\n\n## Related\n\n{links}"
    if meta is None and (hashtags := _hashtag_line(note, body)):  # the folder's notes have no frontmatter
        body += f"\n\n{hashtags}"
    if rules.properties:  # a Logseq page: an outline of blocks, as Logseq writes its pages
        body = logseq_outline(body, note.title)
    return f"{front}{body}\n"


def _properties(meta: dict[str, object]) -> str:
    """Logseq's page properties: `key:: value` lines that open the page (lists comma-separated)."""
    lines = []
    for key, value in meta.items():
        text = ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
        text = " ".join(text.split())  # one line each
        if text:
            lines.append(f"{key}:: {text}")
    return "\n".join(lines) + "\n\n" if lines else ""


def _without_blank_lines_around(text: str) -> str:
    """What an agent wrote without the blank lines around it, and only those: `strip()` took the
    indentation of its first line too (an indented code block of command output became a
    paragraph) and the spaces that end its last line (a Markdown hard break)."""
    end = len(text.rstrip())
    if not end:
        return ""
    last_line_end = text.find("\n", end)
    if last_line_end >= 0:
        text = text[:last_line_end].removesuffix("\r")
    first = len(text) - len(text.lstrip())
    return text[text.rfind("\n", 0, first) + 1 :]


_UNCOMPARED = DATE_KEYS | {"id"}  # a Dendron note's id is new at every write


def same_ignoring_dates(a: str, b: str) -> bool:
    """Equal notes but for the write date in the frontmatter (flushed again on another day)."""
    return _undated(a) == _undated(b)


def _undated(text: str) -> str:
    if RECORD_HEADING.match(text):  # a decision record: its number and its date line are the write's
        lines = text.split("\n")
        lines[0] = RECORD_HEADING.sub("# ", lines[0], count=1)
        text = "\n".join(ln for i, ln in enumerate(lines) if i > 4 or not stated_day(ln))
    if not text.startswith("---\n"):  # Logseq's properties, or none
        lines = text.split("\n")
        top = next((i for i, ln in enumerate(lines) if "::" not in ln), len(lines))
        return "\n".join(
            ln for i, ln in enumerate(lines) if i >= top or ln.split("::", 1)[0].strip() not in _UNCOMPARED
        )
    end = text.find("\n---", 4)
    if end < 0:
        return text
    front = [ln for ln in text[4:end].splitlines() if ln.split(":", 1)[0].strip().lower() not in _UNCOMPARED]
    return "\n".join(front) + text[end:]


def _existing_folder(vault: Path, category: str) -> str | None:
    """A category naming a folder that exists, as names compare (`projects` finds `Projects`, and
    `1_Projects`)."""
    here, parts = vault, []
    for part in [p.strip() for p in category.replace("\\", "/").split("/") if p.strip()]:
        want = name_key(part)
        try:
            names = sorted(e.name for e in os.scandir(here) if e.is_dir() and not e.name.startswith("."))
        except OSError:
            return None
        hit = next((n for n in names if name_key(n) == want), None) or next(
            (n for n in names if name_key(NUMBERED_PREFIX.sub("", n)) == want), None
        )
        if hit is None:
            return None
        parts.append(hit)
        here = here / hit
    return "/".join(parts) if parts else None


class FlushEngine:
    def __init__(self, vault: Path, folder: VaultFolder | None = None) -> None:
        self.vault = vault.resolve()
        self.folder = folder or VaultFolder(vault)  # notes are written only into a vault that is there

    def flush(self, note: FlushNote, today: dt.date | None = None) -> tuple[str, str]:
        """Write the note; return (vault-relative path, outcome: created | up_to_date | versioned).

        The folder: the category's folder in the conventions, else an existing folder the category
        names, else the vault root (B.7: an unknown category is generic). The name, sections and
        frontmatter follow that folder's notes (or the rules file, or its template).
        """
        _validate(note)
        day = today or dt.date.today()
        conv = sniff(self.vault)
        key = conv.category_key(note.category) if note.category.strip() else "log"
        folder = conv.folders.get(key)
        if folder is None:
            folder = ("" if conv.tool else _existing_folder(self.vault, note.category)) or conv.default_folder
            conv.learn_folder(self.vault, folder)
        rules = conv.rules_for(note.category, folder)
        carried = {t.strip().lstrip("#").lower() for t in note.tags}
        if shared := [t for t in rules.tags if t not in carried]:  # as the folder's own notes are tagged
            note = replace(note, tags=(*note.tags, *shared))
        directory = confine(self.vault, folder) if folder else self.vault
        self.folder.check(f"the note {note.title.strip()!r}", directory)
        hierarchy = f"{conv.hierarchy_for(note.category)}." if conv.tool == "dendron" else ""
        if hierarchy:  # Dendron's own frontmatter: an id, and times in ms
            now = int(dt.datetime.combine(day, dt.datetime.now().time()).timestamp() * 1000)
            dendron = {"id": secrets.token_hex(12), "desc": "", "updated": now, "created": now}
            note = replace(note, extra_frontmatter={**dendron, **note.extra_frontmatter})
        with _NUMBERING:
            number = next_number(directory) if rules.naming.prefix == "number" else 0
            text = render(note, day, rules, self.vault, number)
            earlier, named_alike = _same_note(directory, note.title, text, hierarchy)
            if earlier is not None:
                return earlier.relative_to(self.vault).as_posix(), "up_to_date"
            stem = hierarchy + rules.naming.stem(note.title, day, directory)  # write_versioned makes the folder
            target, outcome = write_versioned(directory, stem, text, same_ignoring_dates)
            if named_alike and number:  # a record of that name under another number: another version of it
                outcome = "versioned"  # (a log of a title used on another day is a note of its own day)
        rel = target.relative_to(self.vault).as_posix()
        confine(self.vault, rel)
        return rel, outcome


def _same_note(directory: Path, title: str, text: str, hierarchy: str = "") -> tuple[Path | None, bool]:
    """A note of this title already in the folder (under this Dendron hierarchy) with this content
    (any date or number in its name), and whether one of this title is there at all. A decision
    of a title a record already has, in a numbered folder, took the next number and was said
    "created": the agent was not told that it now had two records of one name."""
    want = core_words(title)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return None, False
    alike = False
    for entry in entries:
        if not (entry.name.startswith(hierarchy) and entry.name.endswith(".md")):
            continue
        leaf = entry.name[len(hierarchy) : -3]
        if hierarchy and "." in leaf:  # a note deeper in the hierarchy
            continue
        if core_words(leaf) == want and entry.is_file():
            alike = True
            if same_ignoring_dates(read_text_file(Path(entry.path), 10 * len(text.encode()) + 1024), text):
                return Path(entry.path), True
    return None, alike


def _create_exclusive(target: Path, text: str) -> bool:
    """Atomically create `target` with `text`; False if the name is taken.

    The temp file is opened with mode 0666 so the process umask applies (0644 under the
    usual 022), like any file an editor would create; mkstemp's 0600 would hide notes
    from other readers of the vault.
    """
    what = f"the note {target.parent.name}/{target.name}"
    try:
        tmp = _open_temp(target.parent)
    except OSError as exc:  # a read-only folder: no note goes there (not "this name", a human's note)
        raise CannotWrite(f"a note in {target.parent.name}/", exc) from exc
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, target)
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            return _create_by_rename(tmp, target)
        return True
    except FileExistsError:
        return False
    except OSError as exc:  # a full disk, a read-only folder: no note, and no temp file left
        raise CannotWrite(what, exc) from exc
    finally:
        if tmp.exists():
            os.unlink(tmp)


# exFAT and FAT drives, some SMB and FUSE mounts: no hard links (every flush failed with "Operation
# not permitted" there)
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK})


def _create_by_rename(tmp: Path, target: Path) -> bool:
    """`_create_exclusive` where the file system has no hard links: the name is claimed with an
    empty file (O_EXCL: False if taken), and the written text renamed over it, so the note is
    never seen half written; a crash between the two leaves it empty, never another's note lost."""
    try:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except FileExistsError:
        return False
    os.replace(tmp, target)
    return True


def _open_temp(directory: Path) -> Path:
    for _ in range(100):
        tmp = directory / f".k0-flush-{secrets.token_hex(8)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temp name in {directory}")


# A file name holds at most 255 bytes on Linux's file systems (ext4, btrfs, XFS): a title of 80
# Chinese characters behind a date made a 254-byte name whose `-v2` the disk refused (a 4-byte
# character's title, the first). Windows refuses its device names with any extension (`con.md`),
# and a vault synced there or checked out by git on Windows could not hold such a note.
NAME_BYTES = 255
WINDOWS_DEVICES = frozenset({"con", "prn", "aux", "nul", *(f"{d}{i}" for d in ("com", "lpt") for i in range(1, 10))})


def portable_stem(stem: str) -> str:
    """`stem` cut to the bytes that leave room for its last version's `-vN.md`, and not a Windows
    device name (`Con` → `Con-note`). Cut at a character, and without a trailing dot, blank or
    separator (Windows drops a trailing dot or blank)."""
    room = NAME_BYTES - len(f"-v{MAX_VERSIONS}.md")
    if len(stem.encode("utf-8")) > room:
        stem = stem.encode("utf-8")[:room].decode("utf-8", "ignore").rstrip(" .-_") or "note"
    if stem.split(".")[0].strip().lower() in WINDOWS_DEVICES:
        stem += "-note"
    return stem


def write_versioned(
    directory: Path, stem: str, text: str, equal: Callable[[str, str], bool] = str.__eq__
) -> tuple[Path, str]:
    """Write `stem.md`, or `stem-v2.md`, … if a different file holds the name, or a name spelled
    the same as names compare (`name_key`); never overwrite. The stem is made `portable_stem`.

    Returns (path, outcome) with outcome created | versioned | up_to_date (same text already there).
    """
    stem = portable_stem(stem)
    make_folder(directory)
    try:
        present = set(os.listdir(directory))
    except OSError as exc:
        raise CannotWrite(f"the folder {directory.name}", exc) from exc
    sweep_stale_temps(directory, ".k0-flush-", present)  # a killed write's
    spelled = {name_key(name): name for name in present}
    for n in range(1, MAX_VERSIONS + 1):
        name = f"{stem}.md" if n == 1 else f"{stem}-v{n}.md"
        # the name itself if present, else one spelled the same (`Rust.md` stands for `rust.md`)
        target = directory / (name if name in present else spelled.get(name_key(name), name))
        if target.name == name and _create_exclusive(target, text):
            return target, "created" if n == 1 else "versioned"
        if equal(read_text_file(target, 10 * len(text.encode()) + 1024), text):
            return target, "up_to_date"
    raise InvalidInput(f"more than {MAX_VERSIONS} versions of {stem}.md exist")
