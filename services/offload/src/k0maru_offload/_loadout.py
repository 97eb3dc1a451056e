"""ProjectLoadout (ALGORITHMS.md B.10): what an agent reads first, as an L0–L3 hierarchy in ≤ 300 tokens.

  L0 project    the project's name and scope (first blockquote, else first paragraph, of its
                note: a note named after the project, else README/index/home, else the rules file)
  L1 conventions where each kind of note goes and how it is written here (naming, sections,
                frontmatter), and which rules file governs
  L2 recent     the newest decisions and logs (by the date in their names, else their last
                commit's in a vault kept in git, else modification time)
  L3 evergreen  principles from the rules file, skills and hub notes (maps of content; not
                changelogs, journals, logs or notes dated by their names)

For a named project (`project_name`), L2 and L3 list the notes about it first: those whose path or
text names it or its note (a vault of several projects), then the rest.

Lines are added in that order, item by item, while the token estimate (B.10) stays within the
budget; the default budget is 300 tokens and a caller may raise it.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from k0maru_common import (
    CommitDays,
    estimate_tokens,
    name_day,
    note_date,
    page_name,
    stated_day,
    utc_day,
    vault_notes,
)

from ._conventions import Conventions, after_front_matter, front_matter, sniff
from ._files import read_text_file

_WIKILINK = re.compile(r"\[\[[^\]\n]+\]\]")
_HUB_NAME = re.compile(r"(^|[-_ ])(index|moc|hub|map|readme|home|overview)([-_ .]|$)", re.IGNORECASE)
# notes of the moment, however many links they hold: no evergreen hubs (a Dendron vault's changelogs
# were six of its eight); a note dated by its name is one too
_LOG_NAME = re.compile(
    r"(^|[./_ -])(changelog|changes|releases?|release-notes|journals?|daily|logs?|diary|standups?|meetings?)([./_ -]|$)",
    re.IGNORECASE,
)
_PROJECT_NOTES = ("README.md", "readme.md", "index.md", "Index.md", "Home.md", "home.md", "00 Index.md")
MAX_FILES = 5000
_MAX_FRONTMATTER = 20_000  # characters read for a note's frontmatter date
_MAX_DATED_BYTES = 2 * 1024 * 1024  # a bigger file is not read for its commit's day (the scanner's limit)
DEFAULT_TOKENS = 300


@dataclass
class Loadout:
    project: str = ""
    scope: str = ""
    rules: list[tuple[str, str]] = field(default_factory=list)
    conventions: Conventions = field(default_factory=Conventions)
    hubs: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    markdown: str = ""
    tokens: int = 0


def _recency(vault: Path, commit_days: CommitDays | None) -> Callable[[Path], tuple[str, int, str]]:
    """How recent a note is: the day it says it was written, as the scanner dates it (`note_date`:
    its frontmatter's `updated`, `date`, `created`…, else the day its name carries: `2026-11-30-x.md`,
    Dendron's `adr.2026-11-30-x.md`, `20261130 x.md`), else, in a vault kept in git, the day of the
    last commit that changed it (while unedited since), else its file's modification day; then the
    mtime. A git clone or a sync stamps every file alike, so by mtime alone the newest decisions
    of a cloned vault could miss the 30 kept. Each note's is worked out once (a folder's order,
    then L2's); a note gone since it was listed is the oldest."""
    known: dict[Path, tuple[str, int, str]] = {}

    def key(path: Path) -> tuple[str, int, str]:
        if path in known:
            return known[path]
        try:
            st = path.stat()
        except OSError:
            return known.setdefault(path, ("", 0, path.name))
        head = _read(path, _MAX_FRONTMATTER)
        day = note_date(front_matter(head) or {}, stated_day(after_front_matter(head)) or name_day(path.as_posix()))
        if not day and commit_days is not None and st.st_size <= _MAX_DATED_BYTES:
            try:
                day = commit_days.day(path.relative_to(vault).as_posix(), path.read_bytes())
            except OSError:  # gone or unreadable since it was listed: its mtime says
                day = ""
        return known.setdefault(path, (day or utc_day(st.st_mtime_ns), st.st_mtime_ns, path.name))

    return key


def _notes(directory: Path) -> list[Path]:
    """The notes under `directory`, as the scanner walks (no hidden folder, no `node_modules`, no
    virtual environment: a project's packages are no hubs), a little past MAX_FILES at most. Not a
    file whose name is no UTF-8 (a zip from Chinese Windows): the scanner indexes none such, and
    its name broke the whole loadout's answer ("surrogates not allowed")."""
    return [Path(p) for p in vault_notes(directory, (".md",), MAX_FILES) if _utf8(str(p))]


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read(path: Path, limit: int = 100_000) -> str:
    return read_text_file(path, limit)


_MD_LINK = re.compile(r"!?\[([^\[\]\n]*)\]\([^)\n]*\)")  # [text](url), ![alt](src); a badge nests one in another
_WIKI_TEXT = re.compile(r"!?\[\[(?:[^\]|\n]*\|)?([^\]\n]*)\]\]")  # [[target|text]] → text
_NOT_PROSE = ("#", "---", "***", "|", "```", "~~~", "<", "- ", "* ", "+ ", "[!")


def _unlinked(text: str, keep_text: bool) -> str:
    """`text` with its links (wikilinks, Markdown's, images, badges) as their text, or gone."""
    while (done := _MD_LINK.sub(r"\1" if keep_text else "", text)) != text:
        text = done
    return _WIKI_TEXT.sub(r"\1" if keep_text else "", text)


def _plain(text: str) -> str:
    """Markdown inline syntax as the words it shows: links as their text, no emphasis markers."""
    text = _unlinked(text, keep_text=True)
    return " ".join(re.sub(r"(\*\*|__|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w))", "", text).split())


def project_scope(text: str) -> str:
    """The project's summary: the first block of text under the title (B.10's blockquote when it
    comes first, a `[!callout]` not), as plain words. Headings, badges and images (a block that is
    only links), HTML, tables, code, lists and rules are passed over. B.10 takes the first
    blockquote anywhere: a README's quote from a user far down was then its summary."""
    for block in re.split(r"\n\s*\n", after_front_matter(text)):
        lines = [line.strip() for line in block.strip().splitlines()]
        if not lines or lines[0].startswith(_NOT_PROSE) or re.match(r"\d+[.)] ", lines[0]):
            continue
        if lines[0].startswith(">"):
            quote = [line.lstrip("> ").strip() for line in lines]
            if quote[0].startswith("[!"):
                continue  # a callout (a note, a warning) is no summary
            lines = quote
        if re.search(r"\w", _unlinked(" ".join(lines), keep_text=False)):  # not only badges or links
            return _plain(" ".join(lines))
    return ""


def _title(text: str, fallback: str) -> str:
    """The note's `# ` heading, else its frontmatter's `title` (Dendron's notes have only that)."""
    m = re.search(r"^# +(.+?)\s*$", after_front_matter(text), flags=re.MULTILINE)
    if m:
        return m.group(1).strip()
    title = (front_matter(text) or {}).get("title")
    return title.strip() if isinstance(title, str) and title.strip() else fallback


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _project_text(vault: Path, notes: list[Path], project: str, tool: str) -> tuple[str, str | None]:
    """The text of the project's note ("" when the vault has none), and the name of the note or
    folder `project` names (None: the text is the vault's own, nothing being named so). A folder
    named so (`projects/kiwi/`) stands for its front page (`README.md`…), else its first note."""
    if project:
        want = project.strip().lower()
        stems = [(p, page_name(p.stem).lower()) for p in notes]  # Logseq's `project___alpha` is `project/alpha`
        hit = next((p for p, s in stems if s == want), None)
        if hit is None and tool == "logseq":  # a page named by its `title::` or an `alias::`
            hit = next((p for p in notes if want in _logseq_names(_read(p, 2000))), None)
        if hit is not None:
            return _read(hit), page_name(hit.stem)
        inside = sorted((p for p in notes if p.parent.name.lower() == want), key=lambda p: (len(p.parts), p))
        if inside:
            front = next((p for p in inside if p.name in _PROJECT_NOTES), inside[0])
            return _read(front), front.parent.name
        for test in (
            lambda s: s.startswith(want),
            lambda s: want in s,
        ):
            hit = next((p for p, s in stems if test(s)), None)
            if hit is not None:
                return _read(hit), hit.stem
    # the usual front pages, then a note named after the vault's folder, then (Dendron) the root
    # note of its biggest hierarchy (`dendron.md` over 600 `dendron.*.md`) and Dendron's own root
    # note; the first with a summary, else the first found
    top = [p for p in notes if p.parent == vault]
    named = [p for p in top if p.stem.lower() == vault.name.lower()]
    if tool == "dendron" and top:
        sizes = Counter(p.name.split(".", 1)[0].lower() for p in top)
        named += [p for p in top if p.stem.lower() == max(sizes, key=lambda h: (sizes[h], h))]
    found = [(p, _read(p)) for p in (*(vault / n for n in _PROJECT_NOTES), *named, vault / "root.md") if p.is_file()]
    fallback = next((text for p, text in found if p.name != "root.md"), "")  # Dendron's root is titled "Root"
    return next((text for _p, text in found if project_scope(text)), fallback), None


_LOGSEQ_NAMES = re.compile(r"^(?:- )?(?:title|alias)::[ \t]*(.+)$", re.MULTILINE | re.IGNORECASE)


def _logseq_names(text: str) -> set[str]:
    """The names a Logseq page gives itself: its `title::` and each `alias::`, lower-cased."""
    return {
        n.strip().strip("[]").strip().lower() for found in _LOGSEQ_NAMES.findall(text) for n in found.split(",")
    } - {""}


_PROPERTY_LINE = re.compile(r"^[ \t]*(?:- )?[\w-]+::")


def _logseq_prose(text: str) -> str:
    """A Logseq page as the paragraphs its top-level blocks are, without its properties: its first
    block (`title::`, `alias::`) was taken for the project's summary."""
    paragraphs = [
        line.removeprefix("- ").strip()
        for line in text.splitlines()
        if line.startswith("- ") and not _PROPERTY_LINE.match(line)
    ]
    return "\n\n".join(paragraphs)


_LOGSEQ_KIND = re.compile(r"^(?:- )?(?:category|type)::[ \t]*\[*([^\],\n]+)", re.MULTILINE | re.IGNORECASE)
_KIND_OF = {"decision": "decision", "adr": "decision", "log": "log", "session": "log", "skill": "skill"}


def _logseq_kind(text: str) -> str:
    """The kind (decision, log, skill) a Logseq page says it is in a `category::` or `type::`
    property of its first block, as flush_session writes them; "" for any other page."""
    found = _LOGSEQ_KIND.search(text, 0, 2000)
    return _KIND_OF.get(found.group(1).strip().lower(), "") if found is not None else ""


def _about(project: str, name: str | None, vault: Path) -> Callable[[list[str]], list[str]]:
    """A list of notes with those about `project` first, each part in its order: a note whose path
    or text names the project or its note (`decisions/kiwi-sqlite.md`, `[[Billing Bridge]]`,
    `project: kiwi`), as a vault of several projects says whose each note is. The others follow:
    a decision for every project is the named one's too. `name`: the project's note or folder (None:
    none was found, and the list is as given)."""
    if name is None:
        return lambda rels: rels
    names = {project.strip().lower(), name.lower()}
    forms = sorted({n.replace(" ", sep) for n in names for sep in (" ", "-", "_")}, key=len, reverse=True)
    # not inside a longer word or number (`kiwi` is not `kiwifruit`); `_` and `-` join words here
    names_it = re.compile(rf"(?<![^\W_])(?:{'|'.join(map(re.escape, forms))})(?![^\W_])", re.IGNORECASE)

    verdicts: dict[str, bool] = {}  # each note read once (L2 orders the decisions and logs again)

    def is_about(rel: str) -> bool:
        if rel not in verdicts:
            verdicts[rel] = bool(names_it.search(rel) or names_it.search(_read(vault / rel, 200_000)))
        return verdicts[rel]

    def first(rels: list[str]) -> list[str]:
        return sorted(rels, key=lambda rel: not is_about(rel))

    return first


def _rule_bullets(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        m = re.match(r"^\s*[-*+] +(.+)$", line)
        if m:
            item = m.group(1).strip()
            if not re.match(r"^[\w ./`*_-]+:\s*\S+/?$", item):  # not a `kind: folder` mapping (that is L1)
                out.append(_clip(item, 120))
    return out


SUCCESSION_DEPTH = 4  # a chain of revisions followed this far (the retriever's search follows as far)


def _current(
    superseded: Mapping[str, Sequence[str]], exists: Callable[[str], bool]
) -> Callable[[list[str]], list[str]]:
    """A list of notes with each note a later one replaces given way to the notes that replace it
    (followed along a chain to the newest, `SUCCESSION_DEPTH` steps at most), each note once.
    An agent reading the brief first would otherwise build on a decision that was revised."""

    def newest(rel: str, depth: int, seen: frozenset[str]) -> list[str]:
        successors = [s for s in superseded.get(rel, ()) if s not in seen and exists(s)]
        if not successors or depth == 0:
            return [rel]
        return [n for s in successors for n in newest(s, depth - 1, seen | {rel})]

    def apply(rels: list[str]) -> list[str]:
        if not superseded:
            return rels
        return list(dict.fromkeys(n for rel in rels for n in newest(rel, SUCCESSION_DEPTH, frozenset())))

    return apply


def build_loadout(
    vault: Path,
    max_tokens: int = DEFAULT_TOKENS,
    project: str = "",
    max_chars: int = 0,
    commit_days: CommitDays | None = None,
    superseded: Mapping[str, Sequence[str]] | None = None,
) -> Loadout:
    """The loadout of `vault`. `superseded`: note → the notes that replace it (the retriever's
    `Superseded`); a listed note that is one gives way to them (`_current`)."""
    vault = vault.resolve()
    current = _current(superseded or {}, lambda rel: (vault / rel).is_file())
    recency = _recency(vault, commit_days)
    conv = sniff(vault)
    loadout = Loadout(conventions=conv)
    for name in conv.rule_files:
        loadout.rules.append((name, _read(vault / name, 2000)))
    logseq = conv.tool == "logseq"
    # a Logseq graph's notes are its pages and journals (`logseq/bak/` holds old copies of them)
    notes = [p for d in ("pages", "journals") for p in _notes(vault / d)] if logseq else _notes(vault)
    note_text, named = _project_text(vault, notes, project, conv.tool)
    if logseq:
        note_text = _logseq_prose(note_text)
    about = _about(project, named, vault)
    rules_text = loadout.rules[0][1] if loadout.rules else ""
    loadout.project = project.strip() or _title(note_text, "") or _title(rules_text, vault.name)
    loadout.scope = project_scope(note_text) or project_scope(rules_text) or "no project summary in the vault yet"
    if project.strip() and named is None:  # it was the vault's brief under the name asked for, saying nothing
        loadout.scope = f"no note is named after {project.strip()!r}; the vault's own: {loadout.scope}"
    scored = []
    # Logseq keeps every kind in pages/: a page's `category::` (or `type::`) property says which
    kinds: dict[str, str] = {}  # vault path → decision | log | skill
    of_the_moment = (
        ("journals/",) if logseq else tuple(f"{conv.folders[k]}/" for k in ("decision", "log") if conv.folders.get(k))
    )
    for path in notes:
        rel = path.relative_to(vault).as_posix()
        if name_day(rel) or _LOG_NAME.search(rel) or rel.startswith(of_the_moment):  # L2's, not hubs:
            continue  # a changelog lists many links and none lasts; a decision's `supersedes` link made it one
        text = _read(path, 200_000)
        if logseq and (kind := _logseq_kind(text)):
            kinds[rel] = kind
            continue
        scored.append((len(_WIKILINK.findall(text)) + (20 if _HUB_NAME.search(path.stem) else 0), rel))
    loadout.hubs = current(about([rel for score, rel in sorted(scored, key=lambda s: (-s[0], s[1])) if score > 0]))[:8]

    def of_kind(category: str) -> list[str]:
        """The notes of a kind, newest first: its folder's, or a Logseq graph's pages of that
        `category::` (its log: the journals too). Every page of a graph was each kind, and L2 and
        L3 listed the same pages."""
        if logseq:
            found = [vault / rel for rel, kind in kinds.items() if kind == category]
            found += _notes(vault / "journals") if category == "log" else []
        else:
            folder = conv.folders.get(category)
            found = _notes(vault / folder) if folder and (vault / folder).is_dir() else []
        return current(about([p.relative_to(vault).as_posix() for p in sorted(found, key=recency, reverse=True)]))[:30]

    loadout.decisions.extend(of_kind("decision"))
    loadout.skills.extend(of_kind("skill"))
    logs = of_kind("log")

    def link(rel: str) -> str:
        if logseq and rel.startswith("pages/"):  # a page by its name: `[[pages/X]]` would be a new page in Logseq
            return f"[[{page_name(Path(rel).stem)}]]"
        return f"[[{rel.removesuffix('.md')}]]"

    lines = [
        f"# {loadout.project}: loadout",
        f"L0 project: {loadout.project} — {_clip(loadout.scope, 160)}",
    ]
    l1 = [_clip(d, 140) for d in conv.describe()] + (
        [f"rules: {', '.join(conv.rule_files)}"] if conv.rule_files else []
    )
    # newest first by the same day as each folder's own order: by the names alone, an undated
    # `auth-oidc.md` came before every dated note (`a` > `2`) and a dated log after any decision.
    # Decisions and logs take turns, the newer first: by recency alone a month of daily logs
    # filled the default budget with six links to days, and no decision was listed
    newest = [
        about(current(sorted(kind, key=lambda r: recency(vault / r), reverse=True)))
        for kind in (loadout.decisions, [r for r in logs if r not in loadout.decisions])
    ]
    if newest[0] and newest[1] and recency(vault / newest[1][0]) > recency(vault / newest[0][0]):
        newest.reverse()
    l2 = [link(r) for pair in itertools.zip_longest(*newest) for r in pair if r is not None]
    l3 = _rule_bullets(rules_text)[:10] + [link(s) for s in loadout.skills] + [link(h) for h in loadout.hubs]
    levels = [("L1 conventions", l1), ("L2 recent", l2), ("L3 evergreen", l3)]
    footer = 'next: recall_memory(query="…") for details; flush_session to record a decision'
    budget = max(50, max_tokens)

    def render(parts: list[tuple[str, list[str]]]) -> str:
        body = list(lines)
        for name, items in parts:
            if items:
                body.append(f"{name}:")
                body.extend(f"- {i}" for i in items)
        body.append(footer)
        return "\n".join(body)

    chosen: list[tuple[str, list[str]]] = [(name, []) for name, _ in levels]
    open_levels = set(range(len(levels)))
    for k in range(max(len(items) for _, items in levels)):  # round robin: every level gets its first items
        for index, (_name, items) in enumerate(levels):
            if index not in open_levels or k >= len(items):
                continue
            chosen[index][1].append(items[k])
            if estimate_tokens(render(chosen)) > budget:
                chosen[index][1].pop()
                open_levels.discard(index)
    text = render(chosen)
    if estimate_tokens(text) > budget:  # even L0 alone is over: cut the scope
        lines[1] = f"L0 project: {_clip(loadout.project, 60)} — {_clip(loadout.scope, 60)}"
        text = render([])
    if max_chars and len(text) > max_chars:
        text = text[: max_chars - 1].rstrip() + "…"
    loadout.markdown = text
    loadout.tokens = estimate_tokens(text)
    return loadout
