"""A smaller copy of a BEIR set: every document relevant to the split's queries plus a seeded
random sample of the others, up to N documents (same queries and qrels).

Run: .venv/bin/python bench/beir_subsample.py DATASET OUT --docs 3000 [--split dev]
Used when embedding the full corpus does not fit the time (tagged_android: 29k chunks at the
2–5 chunks/s a shared 2-core machine gives). Scores on it are higher than on the full corpus
(fewer distractors); compare settings side by side on the same sample, never across.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = [r.split("\t") for r in (args.dataset / "qrels" / f"{args.split}.tsv").read_text().splitlines()]
    relevant = {r[1] for r in rows if len(r) >= 3 and r[0] != "query-id"}
    docs = [json.loads(line) for line in (args.dataset / "corpus.jsonl").open(encoding="utf-8") if line.strip()]
    keep = [d for d in docs if d["_id"] in relevant]
    others = [d for d in docs if d["_id"] not in relevant]
    keep += random.Random(args.seed).sample(others, max(0, args.docs - len(keep)))
    (args.out / "qrels").mkdir(parents=True, exist_ok=True)
    with (args.out / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for d in keep:
            out.write(json.dumps(d) + "\n")
    shutil.copy(args.dataset / "queries.jsonl", args.out / "queries.jsonl")
    shutil.copy(args.dataset / "qrels" / f"{args.split}.tsv", args.out / "qrels" / f"{args.split}.tsv")
    print(json.dumps({"documents": len(keep), "relevant": len(relevant)}))


if __name__ == "__main__":
    main()
