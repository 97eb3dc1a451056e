"""Hybrid search while a vault is still being embedded, measured offline (development sets only).

Run (dumps from `bench/fusion_sweep.py dump`, full vectors):
  .venv/bin/python bench/partial_vectors.py DUMP.jsonl --beir DATASET      (a BEIR set as `k0maru eval` writes it)
  .venv/bin/python bench/partial_vectors.py DUMP.jsonl --vault VAULT       (a vault's own known items)

During a first build the vector channel searches only the chunks embedded so far. Notes are
embedded in the order the index took them (path order on a first build), so the embedded part
was not a fair sample: on the dendron vault the changelogs came first. This simulates a coverage c
by keeping, in each query's vector ranking, only the first c of the vault's notes (in path order,
in a seeded random order as the unbiased case, and for a vault newest first, as the retriever
queues them now: `NoteIndex.missing_vectors`), and fuses with each candidate rule. For a vault it
also prints the queries whose note is among its newest quarter (`--newest-share`) on their own:
what an agent asking about recent work gets.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
from collections.abc import Callable
from pathlib import Path

from fusion_methods import MODEL_SCALE, POOL, set_model, top
from fusion_sweep import evaluate, load

from k0maru.v1 import common_pb2
from k0maru_cli._eval import load_jsonl, note_name
from k0maru_retriever._days import note_day
from k0maru_retriever._fusion import confident_weights, convex_fuse
from k0maru_retriever._search import FusionParams
from k0maru_scanner._markdown import parse_note

Ranking = list[tuple[str, float]]
COVERAGES = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)


def fused(b: Ranking, v: Ranking, embedded: set[str], weight: float, unseen_as_bm25: bool) -> list[str]:
    """The retriever's convex fusion over a partial vector channel: its per-query weight times
    `weight`; `unseen_as_bm25`: a note of BM25's pool with no vector counts in the vector channel
    as BM25 scores it (`HybridSearcher._unseen`), else as missing from it."""
    p = FusionParams()
    b, v = b[:POOL], v[:POOL]
    wb, wv = confident_weights(b, v, p.w_bm25, p.w_vector, p.adaptive, MODEL_SCALE["gap"])
    unseen = frozenset(d for d, _ in b if d not in embedded) if unseen_as_bm25 else frozenset()
    return top([h.path for h in convex_fuse(b, v, w_bm25=wb, w_vector=wv * weight, boost=0.0, unseen=unseen)])


def notes_of(args: argparse.Namespace) -> list[str]:
    """The vault's notes as the dumps name them, in the order a first build embeds them."""
    if args.beir:
        ids = {note_name(doc["_id"]): doc["_id"] for doc in load_jsonl(args.beir / "corpus.jsonl")}
        return [ids[name] for name in sorted(ids)]
    return sorted(p.relative_to(args.vault).as_posix() for p in args.vault.rglob("*.md"))


def newest_first(vault: Path, notes: list[str]) -> list[str]:
    """The vault's notes as the retriever queues them: by `note_day` (the note's own date, else its
    file's day: this bench reads no git history), then the mtime, newest first."""
    key: dict[str, tuple[str, int]] = {}
    for name in notes:
        path = vault / name
        date = parse_note(name, path.read_text(errors="replace")).date
        doc = common_pb2.Document(path=name, date=date, mtime_ns=path.stat().st_mtime_ns)
        key[name] = (note_day(doc), doc.mtime_ns)
    return sorted(notes, key=key.__getitem__, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dump", type=Path)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--beir", type=Path)
    where.add_argument("--vault", type=Path)
    parser.add_argument("--newest-share", type=float, default=0.25)
    args = parser.parse_args()
    rows = load(args.dump)
    set_model(str(rows[0].get("model", "")) if rows else "")
    notes = notes_of(args)
    shuffled = list(notes)
    random.Random(7).shuffle(shuffled)
    methods: dict[str, Callable[[Ranking, Ranking, set[str], float], list[str]]] = {
        "bm25": lambda b, v, e, c: top([d for d, _ in b]),
        "before: as if whole": lambda b, v, e, c: fused(b, v, e, 1.0, False),
        "weight x coverage": lambda b, v, e, c: fused(b, v, e, c, False),
        "unseen as bm25": lambda b, v, e, c: fused(b, v, e, 1.0, True),
        "now: both": lambda b, v, e, c: fused(b, v, e, c, True),
        "unseen, weight x coverage^2": lambda b, v, e, c: fused(b, v, e, c * c, True),
    }
    orders = [("path order", notes), ("random order", shuffled)]
    slices = [("all queries", rows)]
    if args.vault:
        newest = newest_first(args.vault, notes)
        orders.append(("newest first", newest))
        recent = set(newest[: round(args.newest_share * len(newest))])
        about_recent = [r for r in rows if any(d in recent for d, g in r["rel"].items() if g > 0)]
        slices.append((f"{len(about_recent)} queries about the newest {args.newest_share:.0%}", about_recent))
    for (order_name, order), (slice_name, sliced) in itertools.product(orders, slices):
        print(f"{args.dump.stem}, {order_name}, {slice_name}: nDCG@10 by the share of notes embedded")
        print("method".ljust(26) + "".join(f"{c:>8.2f}" for c in COVERAGES))
        for name, method in methods.items():
            cells = []
            for coverage in COVERAGES:
                embedded = set(order[: round(coverage * len(order))])

                def partial(b: Ranking, v: Ranking) -> list[str]:
                    return method(b, [x for x in v if x[0] in embedded], embedded, coverage)  # noqa: B023

                cells.append(f"{evaluate(sliced, partial)[0]:8.4f}")
            print(name.ljust(26) + "".join(cells))
        print(
            json.dumps({"bench": "partial_vectors", "dump": str(args.dump), "order": order_name, "slice": slice_name})
        )


if __name__ == "__main__":
    main()
