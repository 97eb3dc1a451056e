"""Retrieval quality through the real services: `k0maru eval beir DIR` and `k0maru eval vault DIR`.

beir: writes every corpus document as a note (`# title` + text, its `tags` as frontmatter), runs the
stack on it (or uses one already running for that vault), waits until the index — and, for vector
modes, every
vector — is complete, then runs the split's queries through Retriever.Search and reports
nDCG@10 (linear gain, as trec_eval), Recall@10, MRR@10 and client-side latency p50/p99.
Nothing is tuned on any split.

vault: the same on a real vault as it is (folders, frontmatter, links, tags untouched; nothing is
written into it): queries are a JSONL of {"_id", "text"}, qrels a TSV of query id, vault-relative
note path, grade. It also lists the queries that missed (no expected note in the top 3) with
what came back instead, for a user tuning their own vault.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from k0maru.v1 import retriever_pb2, scanner_pb2
from k0maru_common import SEARCH_MODES, StackClient

from ._stack import Launcher
from ._state import StackState

K = 10


def note_name(doc_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", doc_id) + ".md"


def load_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as rows:
        for row in rows:
            parts = row.rstrip("\n").split("\t")
            if len(parts) < 3 or parts[0] == "query-id":
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return qrels


def write_vault(dataset: Path, vault: Path) -> dict[str, str]:
    """Write the corpus as notes (unchanged files are left alone); return note path → doc id."""
    vault.mkdir(parents=True, exist_ok=True)
    mapping: dict[str, str] = {}
    for doc in load_jsonl(dataset / "corpus.jsonl"):
        name = note_name(doc["_id"])
        mapping[name] = doc["_id"]
        title = " ".join(doc.get("title", "").split())
        text = f"# {title}\n\n{doc.get('text', '')}\n" if title else f"{doc.get('text', '')}\n"
        tags = doc.get("tags")
        if isinstance(tags, list) and tags:  # a JSON list is a YAML flow sequence: no quoting rules to get wrong
            text = f"---\ntags: {json.dumps([str(t) for t in tags], ensure_ascii=False)}\n---\n{text}"
        path = vault / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return mapping


def without_ignored(ranked: list[str], relevant: dict[str, int]) -> list[str]:
    """The ranking without the notes graded below 0 for this query (the note a known-item query was
    taken from: it quotes the query verbatim), as BEIR leaves a query's own document out."""
    return [d for d in ranked if relevant.get(d, 0) >= 0]


def ndcg_at_k(ranked: list[str], relevant: dict[str, int], k: int = K) -> float:
    dcg = sum(max(relevant.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((r for r in relevant.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: list[str], relevant: dict[str, int], k: int = K) -> float:
    positives = {d for d, r in relevant.items() if r > 0}
    return len(positives & set(ranked[:k])) / len(positives) if positives else 0.0


def mrr_at_k(ranked: list[str], relevant: dict[str, int], k: int = K) -> float:
    return next((1.0 / (i + 1) for i, d in enumerate(ranked[:k]) if relevant.get(d, 0) > 0), 0.0)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))] if ordered else 0.0


@contextmanager
def stack_for(vault: Path, data_dir: Path, embedders: int, model: str = "") -> Iterator[StackClient]:
    state = StackState.load(data_dir)
    launcher = None
    if state is None:
        launcher = Launcher(vault, data_dir, embedders=embedders, model=model, http_port=0, startup_timeout_s=600)
        state = launcher.start()
    client = state.client()
    try:
        yield client
    finally:
        client.close()
        if launcher is not None:
            launcher.stop()


def wait_indexed(client: StackClient, need_vectors: bool, log: TextIO = sys.stderr) -> None:
    last_report = 0.0
    while True:
        scanner = client.call(client.scanner.Status, scanner_pb2.ScannerStatusRequest(), 30)
        index = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 30)
        done = index.last_applied_seq >= scanner.last_seq and index.documents == scanner.documents
        if need_vectors:
            done = done and index.chunks_with_vectors == index.chunks
        if done:
            return
        if time.monotonic() - last_report > 10:
            last_report = time.monotonic()
            print(
                f"indexing: {index.documents}/{scanner.documents} notes, {index.chunks_with_vectors}/{index.chunks} vectors",
                file=log,
                flush=True,
            )
        time.sleep(1.0)


@dataclass
class Missed:
    qid: str
    text: str
    expected: list[str]
    got: list[str]  # top 3
    rank: int  # of the first expected note in the top 10, 0 = not there


def search_request(
    text: str, mode: str, tagmemo: float | None = None, dedup: bool = False, explain: bool = False, extra: int = 0
) -> retriever_pb2.SearchRequest:
    """The top-K (+ extra) request an evaluation sends (tagmemo: None = off, 0 = on with the configured β₀)."""
    return retriever_pb2.SearchRequest(
        query=text,
        limit=K + extra,
        mode=SEARCH_MODES[mode],
        explain=explain,
        tagmemo=retriever_pb2.TagMemoOptions(enabled=tagmemo is not None, beta=tagmemo or 0.0),
        dedup=dedup,
    )


def measure(
    client: StackClient,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    mode: str,
    to_doc: Callable[[str], str] = lambda path: path,
    missed: list[Missed] | None = None,
    tagmemo: float | None = None,
    dedup: bool = False,
) -> dict[str, object]:
    """Run every query through Retriever.Search; the metrics and latencies `eval` reports.

    tagmemo: None = off, 0 = on with the configured base weight, else the base weight β₀."""
    totals = {"ndcg": 0.0, "recall": 0.0, "mrr": 0.0}
    latencies: list[float] = []
    vector_left_out = 0
    for qid, text in queries.items():
        relevant = qrels[qid]
        extra = sum(r < 0 for r in relevant.values())
        t0 = time.perf_counter()
        reply = client.call(client.retriever.Search, search_request(text, mode, tagmemo, dedup, extra=extra), 30)
        latencies.append((time.perf_counter() - t0) * 1000)
        vector_left_out += any(c.channel == "vector" and not c.ran for c in reply.channels)
        ranked = without_ignored([to_doc(h.path) for h in reply.hits], relevant)[:K]
        totals["ndcg"] += ndcg_at_k(ranked, relevant)
        totals["recall"] += recall_at_k(ranked, relevant)
        totals["mrr"] += mrr_at_k(ranked, relevant)
        if missed is not None and not any(relevant.get(d, 0) > 0 for d in ranked[:3]):
            rank = next((i + 1 for i, d in enumerate(ranked) if relevant.get(d, 0) > 0), 0)
            expected = sorted(d for d, r in relevant.items() if r > 0)
            missed.append(Missed(qid, text, expected, ranked[:3], rank))
    n = max(len(queries), 1)
    status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest(), 30)
    return {
        "ndcg@10": round(totals["ndcg"] / n, 4),
        "recall@10": round(totals["recall"] / n, 4),
        "mrr@10": round(totals["mrr"] / n, 4),
        "p50_ms": round(percentile(latencies, 0.5), 2),
        "p99_ms": round(percentile(latencies, 0.99), 2),
        "mode": mode,
        "tagmemo": tagmemo,
        "dedup": dedup,
        "queries": len(queries),
        "model": status.embedding_model,
        "vector_left_out": vector_left_out,  # queries whose vector channel did not run (hybrid, vector)
    }


def run_beir(
    dataset: Path,
    workdir: Path,
    mode: str,
    split: str,
    embedders: int,
    model: str = "",
    tagmemo: float | None = None,
    dedup: bool = False,
) -> dict[str, object]:
    qrels = load_qrels(dataset / "qrels" / f"{split}.tsv")
    queries = {q["_id"]: q["text"] for q in load_jsonl(dataset / "queries.jsonl") if q["_id"] in qrels}
    vault = workdir / "vault"
    started = time.perf_counter()
    mapping = write_vault(dataset, vault)
    print(f"{dataset.name}: {len(mapping)} documents, {len(queries)} {split} queries", file=sys.stderr, flush=True)
    with stack_for(vault, workdir / "data", embedders, model) as client:
        wait_indexed(client, need_vectors=mode != "bm25")
        print(f"indexed in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        return measure(client, queries, qrels, mode, lambda path: mapping.get(path, path), None, tagmemo, dedup)


class EvalInputError(ValueError):
    """Queries or qrels that cannot be evaluated (missing, empty, or naming no note of the vault)."""


def load_vault_set(
    vault: Path, queries_file: Path, qrels_file: Path
) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """Queries that have qrels, and qrels restricted to notes that exist in the vault."""
    for f in (queries_file, qrels_file):
        if not f.is_file():
            raise EvalInputError(f"{f} does not exist")
    try:
        queries = {str(q["_id"]): str(q["text"]) for q in load_jsonl(queries_file)}
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise EvalInputError(f"{queries_file}: every line must be a JSON object with _id and text ({exc})") from exc
    qrels = load_qrels(qrels_file)
    absent = sorted({p for rel in qrels.values() for p in rel if not (vault / p).is_file()})
    if absent:
        print(f"{len(absent)} expected notes are not in the vault (ignored), e.g. {absent[0]}", file=sys.stderr)
    qrels = {q: {p: r for p, r in rel.items() if p not in absent} for q, rel in qrels.items() if q in queries}
    qrels = {q: rel for q, rel in qrels.items() if any(r > 0 for r in rel.values())}
    if not qrels:
        raise EvalInputError(f"no query of {queries_file} has an expected note of {vault} in {qrels_file}")
    return {q: queries[q] for q in qrels}, qrels


def run_vault(
    vault: Path,
    queries_file: Path,
    qrels_file: Path,
    workdir: Path,
    mode: str,
    embedders: int,
    model: str = "",
    out: TextIO = sys.stdout,
    tagmemo: float | None = None,
    dedup: bool = False,
) -> dict[str, object]:
    queries, qrels = load_vault_set(vault, queries_file, qrels_file)
    started = time.perf_counter()
    print(f"{vault.name}: {len(queries)} queries", file=sys.stderr, flush=True)
    missed: list[Missed] = []
    with stack_for(vault, workdir / "data", embedders, model) as client:
        wait_indexed(client, need_vectors=mode != "bm25")
        print(f"indexed in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        report = measure(client, queries, qrels, mode, missed=missed, tagmemo=tagmemo, dedup=dedup)
    for m in missed:
        where = f"#{m.rank}" if m.rank else "not in the top 10"
        print(f"missed {m.qid} ({where}): {m.text!r}", file=out)
        print(f"    expected {', '.join(m.expected)}", file=out)
        print(f"    got      {', '.join(m.got) or '-'}", file=out)
    report["missed"] = len(missed)
    return report
