"""Fusion choices measured offline on the channels' own rankings (dev sets only).

Run:
  .venv/bin/python bench/fusion_sweep.py dump DATASET --split dev --workdir W --out D.jsonl
      (W: the workdir of a finished `k0maru eval beir DATASET --workdir W`, vectors included)
  .venv/bin/python bench/fusion_sweep.py sweep D1.jsonl D2.jsonl ...

`dump` runs every query through Retriever.Search twice (bm25 and vector, top 100 notes each,
with their channel scores) and stores the two rankings with the qrels. `sweep` fuses them with
each candidate method in `k0maru_retriever._fusion` terms and prints nDCG@10 / Recall@10 per set
and method, so a fusion rule is chosen on all sets at once instead of one at a time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from k0maru.v1 import retriever_pb2
from k0maru_cli._eval import (
    load_jsonl,
    load_qrels,
    load_vault_set,
    ndcg_at_k,
    recall_at_k,
    stack_for,
    wait_indexed,
    without_ignored,
    write_vault,
)

Ranking = list[tuple[str, float]]


def dump(dataset: Path, split: str, workdir: Path, out: Path, max_queries: int, vault_set: list[Path]) -> None:
    if vault_set:  # a vault as it is, with its own queries and qrels (`k0maru eval vault`)
        queries, qrels = load_vault_set(dataset, vault_set[0], vault_set[1])
        vault, mapping = dataset, {}
    else:
        qrels = load_qrels(dataset / "qrels" / f"{split}.tsv")
        queries = {q["_id"]: q["text"] for q in load_jsonl(dataset / "queries.jsonl") if q["_id"] in qrels}
        vault = workdir / "vault"
        mapping = write_vault(dataset, vault)
    if max_queries:
        queries = dict(list(queries.items())[:max_queries])
    modes = {"bm25": retriever_pb2.SEARCH_MODE_BM25, "vector": retriever_pb2.SEARCH_MODE_VECTOR}
    with stack_for(vault, workdir / "data", 1) as client, out.open("w") as f:
        wait_indexed(client, need_vectors=True)
        model = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 30).embedding_model
        started = time.perf_counter()
        for qid, text in queries.items():
            row: dict[str, object] = {"qid": qid, "rel": qrels[qid], "model": model}
            for name, mode in modes.items():
                reply = client.call(
                    client.retriever.Search,
                    retriever_pb2.SearchRequest(query=text, limit=100, mode=mode, explain=True),
                    30,
                )
                row[name] = [
                    [mapping.get(h.path, h.path), (h.explain.bm25 if name == "bm25" else h.explain.vector).score]
                    for h in reply.hits
                ]
            f.write(json.dumps(row) + "\n")
        print(f"{len(queries)} queries dumped in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def load(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.open()]


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("dataset", type=Path)
    d.add_argument("--split", default="dev")
    d.add_argument("--workdir", type=Path, required=True)
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--max-queries", type=int, default=0)
    d.add_argument("--vault-set", type=Path, nargs=2, metavar=("QUERIES", "QRELS"), help="DATASET is a vault")
    s = sub.add_parser("sweep")
    s.add_argument("dumps", type=Path, nargs="+")
    s.add_argument("--vault", type=Path, help="also sweep graph-boost variants on this vault's links")
    args = parser.parse_args()
    if args.cmd == "dump":
        dump(args.dataset.resolve(), args.split, args.workdir.resolve(), args.out, args.max_queries, args.vault_set)
        return
    from fusion_methods import METHODS, boosted, neighbour_boost, set_model, vault_graph

    if args.vault:
        graph = vault_graph(args.vault)
        for g in (0.0, 0.05, 0.1, 0.2, 0.3):
            METHODS[f"convex+boost {g}"] = boosted(graph, g)
            METHODS[f"rrf+boost {g}"] = boosted(graph, g, "rrf")
        for g in (0.1, 0.3, 0.5):
            METHODS[f"neighbour boost {g}"] = neighbour_boost(graph, g)
    sets = {p.stem: load(p) for p in args.dumps}
    print("nDCG@10 / Recall@10; worst-gap: the method's nDCG minus the better channel's, on its worst set")
    print("method".ljust(28) + "".join(name[:16].rjust(18) for name in sets) + "   worst-gap")
    for name, method in METHODS.items():
        cells, gaps = [], []
        for rows in sets.values():
            set_model(str(rows[0].get("model", "")) if rows else "")
            ndcg, recall = evaluate(rows, method)
            best = max(evaluate(rows, METHODS["bm25"])[0], evaluate(rows, METHODS["vector"])[0])
            cells.append(f"{ndcg:.4f}/{recall:.3f}".rjust(18))
            gaps.append(ndcg - best)
        print(name.ljust(28) + "".join(cells) + f"   {min(gaps):+.4f}")


def evaluate(rows: list[dict], method: Callable[[Ranking, Ranking], list[str]]) -> tuple[float, float]:  # type: ignore[type-arg]
    ndcg = recall = 0.0
    for row in rows:
        ranked = without_ignored(method([tuple(x) for x in row["bm25"]], [tuple(x) for x in row["vector"]]), row["rel"])
        ndcg += ndcg_at_k(ranked, row["rel"])
        recall += recall_at_k(ranked, row["rel"])
    n = max(len(rows), 1)
    return ndcg / n, recall / n


if __name__ == "__main__":
    main()
