"""A smaller BEIR set for slow machines: a seeded sample of one split's queries, their relevant
documents, and a seeded sample of the other documents as distractors.

Run: .venv/bin/python bench/beir_sample.py DATASET OUT --split dev --queries 250 --docs 1500
Scores on a sample are higher than on the full corpus (fewer distractors); compare methods on
the same sample, not against full-corpus numbers.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from k0maru_cli._eval import load_jsonl, load_qrels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--queries", type=int, default=250)
    parser.add_argument("--docs", type=int, default=1500, help="corpus size, relevant documents included")
    args = parser.parse_args()
    rng = random.Random(0)
    qrels = load_qrels(args.dataset / "qrels" / f"{args.split}.tsv")
    kept = sorted(rng.sample(sorted(qrels), min(args.queries, len(qrels))))
    relevant = {d for q in kept for d in qrels[q]}
    corpus = list(load_jsonl(args.dataset / "corpus.jsonl"))
    others = [d for d in corpus if d["_id"] not in relevant]
    extra = {d["_id"] for d in rng.sample(others, max(0, min(len(others), args.docs - len(relevant))))}
    (args.out / "qrels").mkdir(parents=True, exist_ok=True)
    with (args.out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for d in corpus:
            if d["_id"] in relevant or d["_id"] in extra:
                f.write(json.dumps(d, ensure_ascii=False) + "\n")
    wanted = set(kept)
    with (args.out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for q in load_jsonl(args.dataset / "queries.jsonl"):
            if q["_id"] in wanted:
                f.write(json.dumps(q, ensure_ascii=False) + "\n")
    with (args.out / "qrels" / f"{args.split}.tsv").open("w") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q in kept:
            for d, r in qrels[q].items():
                f.write(f"{q}\t{d}\t{r}\n")
    print(json.dumps({"bench": "beir_sample", "queries": len(kept), "docs": len(relevant) + len(extra)}))


if __name__ == "__main__":
    main()
