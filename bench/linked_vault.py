"""Write a stand-in for a large linked team vault: SciFact abstracts as sections of long notes.

    .venv/bin/python bench/linked_vault.py OUT [--notes 6571] [--sections 7] [--links 6.4]

The held-out vault that issue 15 measured (6,571 notes, 42k links, 48,001 chunks) is not here;
this writes one of the same shape from SciFact (needs ../shared): each note has a title, a few
tags in its frontmatter, `--sections` sections (one abstract each, with its heading) and on
average `--links` wikilinks to other notes, in 40 folders. Seeded: the same vault every time.
The default (7 sections) writes 105,761 chunks, 2.2x the held-out vault's; `--sections 3` writes
46,384 chunks and 38,492 links, that vault's shape.
Then, e.g.: `.venv/bin/python bench/up_timeline.py OUT DIR 2` (time to BM25-searchable with two
embedders starting beside it).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from _common import SHARED, emit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--notes", type=int, default=6571)
    parser.add_argument("--sections", type=int, default=7)
    parser.add_argument("--links", type=float, default=6.4, help="wikilinks per note, on average")
    args = parser.parse_args()
    rng = random.Random(15)
    rows = [json.loads(line) for line in (SHARED / "data" / "beir" / "scifact" / "corpus.jsonl").open()]
    names = [f"area-{i % 40:02}/note {i:05}" for i in range(args.notes)]
    links = 0
    for name in names:
        picked = rng.sample(rows, args.sections)
        n_links = min(len(names) - 1, int(rng.expovariate(1 / args.links)))
        targets = rng.sample(names, n_links)
        links += len(targets)
        tags = rng.sample(["biology", "trial", "review", "genetics", "cells", "cancer", "immunology", "method"], 2)
        body = [f"---\ntags: [{', '.join(tags)}]\n---\n", f"# {name.rsplit('/', 1)[1]}\n"]
        for s, row in enumerate(picked):
            see = f" See [[{targets[s % len(targets)].rsplit('/', 1)[1]}]]." if targets and s < len(targets) else ""
            body.append(f"## {row['title'][:80]}\n\n{row['text']}{see}\n")
        if len(targets) > args.sections:
            body.append("Related: " + ", ".join(f"[[{t.rsplit('/', 1)[1]}]]" for t in targets[args.sections :]) + "\n")
        path = args.out / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(body), encoding="utf-8")
    emit("linked_vault", notes=args.notes, sections_per_note=args.sections, links=links, out=str(args.out))


if __name__ == "__main__":
    main()
