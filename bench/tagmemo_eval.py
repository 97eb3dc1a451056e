"""TagMemo on a tagged BEIR set: nDCG@10 with TagMemo off and on, per mode and setting, and β.

Run: .venv/bin/python bench/tagmemo_eval.py DATASET --workdir DIR [--split dev]
One stack for every configuration (the index built by `k0maru eval beir` in the same workdir
is reused); settings that live in rag_params.json (`vectorQuery`) are switched by rewriting
the file, which the retriever hot-reloads. Prints one JSON line per configuration, then the
distribution of β (effective) and β₀ over the queries for the default setting.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from _common import emit

from k0maru.v1 import retriever_pb2
from k0maru_cli._eval import (
    load_jsonl,
    load_qrels,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    recall_at_k,
    search_request,
    stack_for,
    wait_indexed,
    write_vault,
)
from k0maru_common import StackClient


def wait_tags(client: StackClient, timeout_s: float = 900) -> retriever_pb2.IndexStatusResponse:
    deadline = time.monotonic() + timeout_s
    while True:
        s = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 30)
        if (s.tags == s.tags_with_vectors and (s.epa_axes > 0 or s.tags < 8)) or time.monotonic() > deadline:
            return s
        time.sleep(2)


def run(
    client: StackClient,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    mapping: dict[str, str],
    mode: str,
    tagmemo: float | None,
    dedup: bool = False,
) -> tuple[dict[str, Any], list[retriever_pb2.TagMemoExplanation]]:
    totals = {"ndcg": 0.0, "recall": 0.0, "mrr": 0.0}
    per_query: list[float] = []
    explanations = []
    for qid, text in queries.items():
        reply = client.call(client.retriever.Search, search_request(text, mode, tagmemo, dedup, explain=True), 30)
        ranked = [mapping.get(h.path, h.path) for h in reply.hits]
        n = ndcg_at_k(ranked, qrels[qid])
        per_query.append(n)
        totals["ndcg"] += n
        totals["recall"] += recall_at_k(ranked, qrels[qid])
        totals["mrr"] += mrr_at_k(ranked, qrels[qid])
        explanations.append(reply.tagmemo)
    count = max(len(queries), 1)
    return {
        "ndcg@10": round(totals["ndcg"] / count, 4),
        "recall@10": round(totals["recall"] / count, 4),
        "mrr@10": round(totals["mrr"] / count, 4),
        "per_query": per_query,
    }, explanations


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--modes", nargs="*", default=["hybrid", "vector"])
    parser.add_argument("--weights", nargs="*", type=float, default=[0.0, 0.15, 0.3, 0.5])
    parser.add_argument("--vector-queries", nargs="*", default=["fused", "raw+fused"])
    parser.add_argument("--params", default="{}", help="rag_params.json content to run under (JSON)")
    parser.add_argument("--no-dedup", action="store_true")
    args = parser.parse_args()
    base_params = json.loads(args.params)
    qrels = load_qrels(args.dataset / "qrels" / f"{args.split}.tsv")
    queries = {q["_id"]: q["text"] for q in load_jsonl(args.dataset / "queries.jsonl") if q["_id"] in qrels}
    mapping = write_vault(args.dataset, args.workdir / "vault")
    params_path = args.workdir / "data" / "rag_params.json"
    with stack_for(args.workdir / "vault", args.workdir / "data", 2) as client:
        wait_indexed(client, need_vectors=True)
        status = wait_tags(client)
        emit("index", chunks=status.chunks, tags=status.tags, tag_vectors=status.tags_with_vectors, epa=status.epa_axes)
        baseline: dict[str, list[float]] = {}
        for vector_query in args.vector_queries:
            retriever = {**base_params.get("Retriever", {}), "vectorQuery": vector_query}
            params_path.write_text(json.dumps({**base_params, "Retriever": retriever}))
            client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 30)  # reload now
            for mode in args.modes:
                settings: list[float | None] = [None, *args.weights] if vector_query == "fused" else args.weights
                for weight in settings:
                    if weight is None and mode in baseline:
                        continue
                    result, explanations = run(client, queries, qrels, mapping, mode, weight)
                    per_query = result.pop("per_query")
                    if weight is None:
                        baseline[mode] = per_query
                        wins = losses = 0
                    else:
                        wins = sum(a > b + 1e-9 for a, b in zip(per_query, baseline[mode], strict=True))
                        losses = sum(a + 1e-9 < b for a, b in zip(per_query, baseline[mode], strict=True))
                    applied = [e for e in explanations if e.applied]
                    betas = [e.beta for e in applied]
                    emit(
                        "tagmemo_eval",
                        mode=mode,
                        vector_query=vector_query,
                        params=base_params,
                        tagmemo="off" if weight is None else (weight or "dynamic"),
                        **result,
                        better=wins,
                        worse=losses,
                        applied=len(applied),
                        beta_p10_p50_p90=[round(percentile(betas, q), 3) for q in (0.1, 0.5, 0.9)] if betas else [],
                        base_beta_p50=round(percentile([e.base_beta for e in applied], 0.5), 3) if applied else None,
                        logic_depth_p50=round(percentile([e.logic_depth for e in applied], 0.5), 3)
                        if applied
                        else None,
                        coverage_p50=round(percentile([e.coverage for e in applied], 0.5), 3) if applied else None,
                    )
        params_path.unlink(missing_ok=True)
        for mode in args.modes if not args.no_dedup else []:
            result, _ = run(client, queries, qrels, mapping, mode, 0.0, dedup=True)
            result.pop("per_query")
            emit("tagmemo_eval", mode=mode, vector_query="fused", tagmemo="dynamic", dedup=True, **result)


if __name__ == "__main__":
    main()
