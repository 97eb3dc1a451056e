"""Two known-item query sets from a vault whose answers owe nothing to its links: a note's title
(titles that no other note shares) → that note, and a sentence of a note's body (one that no
other note holds) → that note. Feeds `k0maru eval vault`.

Run: .venv/bin/python bench/vault_own_items.py VAULT OUT_DIR
Writes OUT_DIR/titles/ and OUT_DIR/sentences/, each with queries.jsonl and qrels.tsv.

Why: `vault_known_items.py` takes the text next to a wikilink as the query and the linked note as
the answer, so every answer is a link target, and a ranking that favours notes many others link to
gains there whatever it does to other queries (the thirty-first wave measured a link-authority
prior: +0.05 nDCG@10 on those queries, −0.03 on these). Choices about links are made on both kinds.
Titles and sentences come from the scanner's own parser (frontmatter titles, first headings); a
sentence has 8–30 words and is not a heading, table row, code fence, image or HTML line.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

from k0maru_scanner._markdown import parse_note
from k0maru_scanner._scanner import read_note_text

SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
NOT_PROSE = ("#", "|", "```", "!", "- [", "<", "---")
FRONTMATTER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)


def notes_of(vault: Path) -> dict[str, tuple[str, str]]:
    """vault-relative path → (title, body text) of every Markdown note outside hidden folders."""
    out: dict[str, tuple[str, str]] = {}
    for p in sorted(vault.rglob("*.md")):
        rel = p.relative_to(vault).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        _data, text, _how = read_note_text(p, 2 * 1024 * 1024)
        out[rel] = (parse_note(rel, text).title, FRONTMATTER.sub("", text))
    return out


def title_items(notes: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    by_title: dict[str, list[str]] = {}
    for path, (title, _body) in notes.items():
        by_title.setdefault(" ".join(title.lower().split()), []).append(path)
    return [(notes[paths[0]][0], paths[0]) for key, paths in sorted(by_title.items()) if key and len(paths) == 1]


def sentence_items(notes: dict[str, tuple[str, str]], seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    bodies = [body for _title, body in notes.values()]
    out = []
    for path, (_title, body) in notes.items():
        candidates = [s.strip() for s in SENTENCE_END.split(body)]
        candidates = [s for s in candidates if 8 <= len(s.split()) <= 30 and not s.startswith(NOT_PROSE)]
        candidates = [s for s in candidates if sum(s in b for b in bodies) == 1]  # no other note holds it
        if candidates:
            out.append((rng.choice(candidates), path))
    return out


def write(out: Path, prefix: str, items: list[tuple[str, str]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "queries.jsonl").open("w", encoding="utf-8") as q, (out / "qrels.tsv").open("w") as r:
        r.write("query-id\tcorpus-id\tscore\n")
        for i, (text, path) in enumerate(items):
            q.write(json.dumps({"_id": f"{prefix}{i}", "text": text}, ensure_ascii=False) + "\n")
            r.write(f"{prefix}{i}\t{path}\t1\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    notes = notes_of(args.vault.resolve())
    titles, sentences = title_items(notes), sentence_items(notes)
    write(args.out / "titles", "t", titles)
    write(args.out / "sentences", "s", sentences)
    print(
        json.dumps({"bench": "own_items", "vault": str(args.vault), "titles": len(titles), "sentences": len(sentences)})
    )


if __name__ == "__main__":
    main()
