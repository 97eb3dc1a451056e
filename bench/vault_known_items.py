"""A known-item query set from a vault's own list items: the text written next to a link is the
query, the linked note the answer. Feeds `k0maru eval vault`.

Run: .venv/bin/python bench/vault_known_items.py VAULT OUT_DIR [--max N]
Writes OUT_DIR/queries.jsonl and OUT_DIR/qrels.tsv. A list item qualifies when it holds exactly
one wikilink that resolves to a note of the vault (Obsidian `[[target|label]]`, Dendron
`[[label|target]]` and `dendron://vault/target`, anchors dropped) and, once the link is replaced
by its label and markup removed, says at least 3 words. Items whose text points at more than one
note, and links from a note to itself, are dropped.

Bias, and how it is kept out: the note holding the list item contains the query verbatim, so
BM25 ranks it first for most queries (55 of 76 on foam, 530 of 769 on dendron) and it is linked to
the answer (a set of this kind favours link-aware ranking; the issue's held-out vault set was built
the same way). Each such source note is written to qrels.tsv with grade -1: `k0maru eval vault`
leaves it out of that query's ranking before scoring, as BEIR does for a query taken from a corpus
document. A user's real query rarely quotes another note verbatim.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
from pathlib import Path

LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
WIKILINK = re.compile(r"!?\[\[([^\]\n]+)\]\]")
CODE = re.compile(r"`[^`]*`")
MARKUP = re.compile(r"`[^`]*`|https?://\S+|[*_>#~]|\[([^\]]*)\]\([^)]*\)")


def note_for(inner: str, notes: dict[str, str]) -> tuple[str, str] | None:
    """(label, vault-relative path) of a wikilink's inside, or None when it names no note."""
    parts = inner.split("|")
    for label, target in ((parts[-1], parts[0]), (parts[0], parts[-1])):
        clean = re.sub(r"^dendron://[^/]+/", "", target.strip()).split("#")[0].strip().lower()
        clean = clean.removesuffix(".md")
        if clean in notes:
            return (label.strip() if len(parts) > 1 else clean.rsplit("/", 1)[-1]), notes[clean]
    return None


def build(vault: Path) -> dict[str, tuple[str, list[str]]]:
    """query text → (answer path, the source notes that hold it)."""
    files = sorted(p for p in vault.rglob("*.md") if not any(part.startswith(".") for part in p.parts))
    notes: dict[str, str] = {}
    for p in files:
        rel = p.relative_to(vault).as_posix()
        notes.setdefault(rel.removesuffix(".md").lower(), rel)
        notes.setdefault(p.stem.lower(), rel)
    answers: dict[str, set[str]] = {}
    sources: dict[str, set[str]] = {}
    for p in files:
        source = p.relative_to(vault).as_posix()
        for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
            item = LIST_ITEM.match(line)
            if not item:
                continue
            body = CODE.sub(" ", item.group(1))  # a link inside a code span is an example, not a link
            links = WIKILINK.findall(body)
            if len(links) != 1:
                continue
            found = note_for(links[0], notes)
            if found is None or found[1] == source:
                continue
            text = WIKILINK.sub(found[0].replace("\\", " "), body)
            text = " ".join(MARKUP.sub(lambda m: m.group(1) or " ", text).split()).strip(" :-–")
            if len(text.split()) >= 3:
                answers.setdefault(text, set()).add(found[1])
                sources.setdefault(text, set()).add(source)
    return {text: (next(iter(paths)), sorted(sources[text])) for text, paths in answers.items() if len(paths) == 1}


def copy_subset(vault: Path, out: Path, pairs: list[tuple[str, tuple[str, list[str]]]], distractors: int) -> None:
    involved = {p for _text, (answer, quoting) in pairs for p in [answer, *quoting]}
    rest = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
    rest = [p for p in rest if p not in involved]
    for rel in sorted(involved | set(random.Random(1).sample(rest, min(distractors, len(rest))))):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(vault / rel, target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--max", type=int, default=0, help="keep a random sample of this many (seed 0)")
    parser.add_argument(
        "--subset-vault",
        type=Path,
        help="also copy the notes the kept queries involve (answers, the notes quoting them) plus --distractors "
        "random others here: a smaller vault for slow machines (fewer distractors: higher scores)",
    )
    parser.add_argument("--distractors", type=int, default=100)
    args = parser.parse_args()
    pairs = sorted(build(args.vault.resolve()).items())
    if args.max and len(pairs) > args.max:
        pairs = sorted(random.Random(0).sample(pairs, args.max))
    if args.subset_vault:
        copy_subset(args.vault.resolve(), args.subset_vault, pairs, args.distractors)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "queries.jsonl").open("w", encoding="utf-8") as q, (args.out / "qrels.tsv").open("w") as r:
        r.write("query-id\tcorpus-id\tscore\n")
        for i, (text, (path, sources)) in enumerate(pairs):
            q.write(json.dumps({"_id": f"k{i}", "text": text}, ensure_ascii=False) + "\n")
            r.write(f"k{i}\t{path}\t1\n")
            for source in sources:  # the notes quoting the query: left out of its ranking
                r.write(f"k{i}\t{source}\t-1\n")
    print(json.dumps({"bench": "known_items", "vault": str(args.vault), "queries": len(pairs)}))


if __name__ == "__main__":
    main()
