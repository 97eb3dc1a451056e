"""TagMemo benchmarks.

Run: .venv/bin/python bench/tagmemo_bench.py [--workdir DIR --queries QUERIES.jsonl] [--tags N]
  - in-process at N tags (wall time, and this thread's CPU time: the machine is shared) (default 1,000, 384-d): EPA build, the whole V3.7 reshaping of one
    query (EPA projection, pyramid, both passes, fused vector), SVD dedup of 30 candidates;
    the tag vectors are real-looking: 40 topics, each tag a topic centre plus noise
  - the hybrid search path in-process (HybridSearcher, no gRPC) over 10k chunks with vectors
    and 1k embedded tags, query vectors from its cache: TagMemo off / on / on + dedup, interleaved
  - through gRPC on an eval index built by `k0maru eval beir` (--workdir, optional): hybrid
    search p50/p99 with TagMemo off, on (raw+fused, fused) and on + dedup, in blocks
    alternated over 3 rounds so the shared machine's load drift hits all alike
  - --synth DIR [--notes 10000 --tags 1000]: writes a tagged vault of small generated notes into
    DIR/vault (text from the tags' vocabularies in --vocab, a tagged BEIR corpus), builds its index
    through the stack (real embedding) and measures it through gRPC as above; --grpc-only skips
    the in-process rows
  - --paired REPS (with --workdir/--queries or --synth): instead of blocks, every query runs off /
    on / on + dedup back to back in a random order, REPS times; reports the p50 of the per-query
    differences (client wall, server took_ms, retriever CPU of all its threads), which a shared
    machine's load drift does not move
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the retriever runs (its __main__)

import numpy as np
from _common import SHARED, emit, summary

from k0maru.v1 import common_pb2, retriever_pb2
from k0maru_cli._eval import load_jsonl, percentile, stack_for, wait_indexed
from k0maru_cli._state import StackState
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index
from k0maru_retriever._dedup import deduplicate
from k0maru_retriever._epa import EpaBasis
from k0maru_retriever._index import NoteIndex, chunk_id, vector_key
from k0maru_retriever._params import ParamsFile, RagParams
from k0maru_retriever._search import FusionParams, HybridSearcher, QueryEmbedder
from k0maru_retriever._shaping import QueryShaper
from k0maru_retriever._state import IndexState
from k0maru_retriever._tagmemo import TagSpace, reshape_query
from k0maru_retriever._tags import CoOccurrence, TagIndex, tag_key
from k0maru_retriever._vectors import EdgeVectorStore


def clustered(n: int, d: int, rng: np.random.Generator, topics: int = 40) -> np.ndarray:
    centres = rng.standard_normal((topics, d))
    v = centres[rng.integers(0, topics, n)] + 0.6 * rng.standard_normal((n, d))
    out: np.ndarray = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return out


def in_process(n_tags: int, d: int = 384) -> None:
    rng = np.random.default_rng(3)
    vectors = clustered(n_tags, d, rng)
    names = [f"tag{i}" for i in range(n_tags)]
    t0 = time.perf_counter()
    epa = EpaBasis.build(names, vectors)
    build_ms = (time.perf_counter() - t0) * 1000
    cooc = CoOccurrence()
    for _ in range(3 * n_tags):  # notes with 2–4 tags
        cooc.add(rng.choice(names, rng.integers(2, 5), replace=False).tolist())
    space = TagSpace(names, vectors, epa, cooc.neighbours)
    params = RagParams()
    queries = clustered(300, d, rng)
    lat, cpu = [], []
    for q in queries:
        t1, c1 = time.perf_counter(), time.thread_time()
        reshape_query(q, space, params, None, [])
        lat.append((time.perf_counter() - t1) * 1000)
        cpu.append((time.thread_time() - c1) * 1000)
    dd = []
    for _ in range(200):
        cands = clustered(30, d, rng)
        c1 = time.thread_time()
        deduplicate(cands, np.linspace(1, 0.3, 30), queries[0], 10)
        dd.append((time.thread_time() - c1) * 1000)
    emit(
        "tagmemo_in_process",
        tags=n_tags,
        epa_build_ms=round(build_ms, 1),
        epa_axes=epa.dimension if epa else 0,
        reshape_wall=summary(lat[20:]),
        reshape_cpu=summary(cpu[20:]),
        dedup_30_cpu=summary(dd[20:]),
    )


def searcher_10k(tmp: Path, n_chunks: int = 10_000, n_tags: int = 1000, d: int = 384) -> None:
    """HybridSearcher in-process (no gRPC) over 10k chunks with vectors and 1k embedded tags:
    the search path with TagMemo off / on, query vectors from the searcher's cache (no embedder)."""
    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(3000)]
    tag_names = [f"topic-{i}" for i in range(n_tags)]
    tag_vectors = clustered(n_tags, d, rng)
    index = NoteIndex(
        Bm25Index(tmp / "bm25", BM25Analyzer()),
        EdgeVectorStore(tmp / "vectors", d),
        IndexState(tmp / "state.sqlite"),
        d,
        "bench",
        TagIndex(tmp / "tags.sqlite", "bench", d),
    )
    results = []
    for n in range(n_chunks // 4):
        tags = [tag_names[int(i)] for i in rng.choice(n_tags, 3, replace=False)]
        doc = common_pb2.Document(path=f"n{n}.md", title=f"Note {n}", diary="Root", tags=tags)
        centre = tag_vectors[[tag_names.index(t) for t in tags]].mean(axis=0)
        for c in range(4):
            doc.chunks.append(common_pb2.Chunk(index=c, text=" ".join(rng.choice(words, 40)), hash=f"{n}-{c}"))
        index.apply(doc)
        for chunk in doc.chunks:
            v = centre + 0.5 * rng.standard_normal(d) / np.sqrt(d)
            results.append(
                (
                    chunk_id(doc.path, chunk.index),
                    vector_key(doc, chunk, "bench"),
                    (v / np.linalg.norm(v)).astype(np.float32),
                )
            )
    index.commit()
    index.apply_vectors(results)
    index.tags.apply_vectors([(t, tag_key(t, "bench"), tag_vectors[i]) for i, t in enumerate(tag_names)])
    index.tags.rebuild_epa()
    embedder = QueryEmbedder("127.0.0.1:9")  # never called: every query vector is cached
    searcher = HybridSearcher(
        index, embedder, FusionParams(), "bench", QueryShaper(index, ParamsFile(tmp / "rag.json"))
    )
    queries = []
    for _ in range(200):
        text = " ".join(rng.choice(words, 4))
        embedder.remember(text, results[int(rng.integers(len(results)))][2])
        queries.append(text)
    on = retriever_pb2.TagMemoOptions(enabled=True)
    settings: list[tuple[str, dict[str, object]]] = [
        ("off", {}),
        ("tagmemo", {"tagmemo": on}),
        ("tagmemo+dedup", {"tagmemo": on, "dedup": True}),
    ]
    lat: dict[str, list[float]] = {name: [] for name, _ in settings}
    cpu: dict[str, list[float]] = {name: [] for name, _ in settings}
    for _round in range(3):
        for q in queries:
            for name, extra in settings:
                t0, c0 = time.perf_counter(), time.process_time()
                searcher.search(retriever_pb2.SearchRequest(query=q, limit=10, **extra))  # type: ignore[arg-type]
                lat[name].append((time.perf_counter() - t0) * 1000)
                cpu[name].append((time.process_time() - c0) * 1000)
    emit(
        "tagmemo_hybrid_in_process",
        chunks=n_chunks,
        tags=n_tags,
        wall={k: summary(v[len(queries) :]) for k, v in lat.items()},
        cpu={k: summary(v[len(queries) :]) for k, v in cpu.items()},
    )
    embedder.close()
    index.close()


def through_grpc(workdir: Path, queries: list[str], limit: int = 300, rounds: int = 3) -> None:
    """Blocks of every query per setting, the settings alternated over rounds (load drifts)."""
    vault = workdir / "vault"
    params_path = workdir / "data" / "rag_params.json"
    queries = queries[:limit]
    on = {"tagmemo": retriever_pb2.TagMemoOptions(enabled=True)}
    configs: dict[str, tuple[str, dict[str, object]]] = {
        "off": ("raw+fused", {}),
        "tagmemo_raw+fused": ("raw+fused", on),
        "tagmemo_fused": ("fused", on),
        "tagmemo_raw+fused+dedup": ("raw+fused", {**on, "dedup": True}),
    }
    with stack_for(vault, workdir / "data", embedders=1) as client:
        wait_indexed(client, need_vectors=True)
        status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
        for q in queries:  # warm the query-vector cache: every setting then pays the same
            client.call(client.retriever.Search, retriever_pb2.SearchRequest(query=q, limit=10))
        lat: dict[str, list[float]] = {name: [] for name in configs}
        for _round in range(rounds):
            for name, (vector_query, extra) in configs.items():
                params_path.write_text(json.dumps({"Retriever": {"vectorQuery": vector_query}}))
                for q in queries:
                    t0 = time.perf_counter()
                    client.call(client.retriever.Search, retriever_pb2.SearchRequest(query=q, limit=10, **extra))  # type: ignore[arg-type]
                    lat[name].append((time.perf_counter() - t0) * 1000)
        params_path.unlink(missing_ok=True)
        emit(
            "tagmemo_hybrid_grpc",
            chunks=status.chunks,
            tags=status.tags_with_vectors,
            epa_axes=status.epa_axes,
            **{name: summary(v) for name, v in lat.items()},
        )


def process_cpu_ns(pid: int) -> int:
    """CPU time so far of every thread of a process (ns; /proc/PID/task/*/schedstat), threads that
    ended excepted: the retriever's gRPC handler and Qdrant Edge's search threads alike."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
    return total


def paired_grpc(workdir: Path, queries: list[str], reps: int, limit: int = 300, seed: int = 1) -> None:
    """TagMemo's added latency, robust to a shared machine: for every query the settings run back
    to back in a random order (off, on, on + dedup; `vectorQuery` as configured), against the same
    stack, `reps` times over. The added time is the p50 of the per-query paired differences
    (on − off), so load drifts that last longer than one query cancel out; measured as client wall
    time, the server's own took_ms, and the retriever process's CPU (all threads). The first
    repetition is also reported alone: the first time a tag takes part in a query costs one
    product over the tag vectors (its near-duplicate set), later queries look it up."""
    queries = queries[:limit]
    on = retriever_pb2.TagMemoOptions(enabled=True)
    settings: dict[str, dict[str, object]] = {
        "off": {},
        "on": {"tagmemo": on},
        "on+dedup": {"tagmemo": on, "dedup": True},
    }
    rng = np.random.default_rng(seed)
    with stack_for(workdir / "vault", workdir / "data", embedders=1) as client:
        wait_indexed(client, need_vectors=True)
        state = StackState.load(workdir / "data")
        pid = state.pids.get("retriever", 0) if state is not None else 0
        status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
        for q in queries:  # the query vectors into the retriever's cache: every setting then pays the same
            client.call(client.retriever.Search, retriever_pb2.SearchRequest(query=q, limit=10))
        names = list(settings)
        wall: dict[str, list[list[float]]] = {n: [] for n in names}  # [rep][query]
        took: dict[str, list[list[float]]] = {n: [] for n in names}
        cpu: dict[str, list[list[float]]] = {n: [] for n in names}
        for _rep in range(reps):
            for n in names:
                for measure in (wall, took, cpu):
                    measure[n].append([])
            for q in queries:
                for i in rng.permutation(len(names)).tolist():
                    request = retriever_pb2.SearchRequest(query=q, limit=10, **settings[names[i]])  # type: ignore[arg-type]
                    c0 = process_cpu_ns(pid) if pid else 0
                    t0 = time.perf_counter()
                    reply = client.call(client.retriever.Search, request)
                    wall[names[i]][-1].append((time.perf_counter() - t0) * 1000)
                    cpu[names[i]][-1].append((process_cpu_ns(pid) - c0) / 1e6 if pid else 0.0)
                    took[names[i]][-1].append(reply.took_ms)

    def flat(rows: list[list[float]]) -> list[float]:
        return [x for row in rows for x in row]

    def diff(name: str, measure: dict[str, list[list[float]]], reps_: slice = slice(None)) -> list[float]:
        return [a - b for a, b in zip(flat(measure[name][reps_]), flat(measure["off"][reps_]), strict=True)]

    def p50(values: list[float]) -> float:
        return round(percentile(values, 0.5), 2)

    emit(
        "tagmemo_hybrid_grpc_paired",
        chunks=status.chunks,
        tags=status.tags_with_vectors,
        epa_axes=status.epa_axes,
        queries=len(queries),
        reps=reps,
        wall_p50={n: p50(flat(wall[n])) for n in names},
        added_wall_p50={n: p50(diff(n, wall)) for n in names[1:]},
        added_took_p50={n: p50(diff(n, took)) for n in names[1:]},
        added_cpu_p50={n: p50(diff(n, cpu)) for n in names[1:]},
        cpu_p50={n: p50(flat(cpu[n])) for n in names},
        added_wall_p50_first_rep={n: p50(diff(n, wall, slice(0, 1))) for n in names[1:]},
        added_wall_p50_later_reps={n: p50(diff(n, wall, slice(1, None))) for n in names[1:]},
    )


_WORD = re.compile(r"[a-z][a-z'-]{2,}")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "have",
        "from",
        "not",
        "but",
        "are",
        "was",
        "can",
        "you",
        "when",
        "what",
        "how",
        "any",
        "there",
        "its",
        "has",
        "use",
        "get",
        "all",
        "one",
        "just",
        "now",
        "out",
        "like",
        "does",
        "which",
        "will",
        "been",
        "would",
        "they",
        "their",
        "them",
        "then",
        "than",
        "also",
        "only",
    ]
)


def tag_vocabulary(corpus: Path, n_tags: int) -> dict[str, list[str]]:
    """The `n_tags` most used tags of a tagged BEIR corpus, each with the 40 words most typical of
    its documents (frequency in them / √(documents with it), words in ≥ 10 documents): what a generated note about it says."""
    by_tag: dict[str, Counter[str]] = {}
    overall: Counter[str] = Counter()
    for doc in load_jsonl(corpus):
        words = _WORD.findall(f"{doc.get('title', '')} {doc.get('text', '')}".lower())
        words = [w for w in words if w not in _STOP]
        overall.update(set(words))
        for tag in doc.get("tags") or []:
            by_tag.setdefault(str(tag), Counter()).update(words)
    top = sorted(by_tag, key=lambda t: (-sum(by_tag[t].values()), t))[:n_tags]
    vocab = {}
    for tag in top:
        common = [(w, c) for w, c in by_tag[tag].items() if overall[w] >= 10]
        scored = sorted(common, key=lambda kv: (-kv[1] / overall[kv[0]] ** 0.5, kv[0]))
        vocab[tag] = [w for w, _ in scored[:40]]
    return vocab


def synth_tagged_vault(root: Path, corpus: Path, n_notes: int, n_tags: int, seed: int = 5) -> list[str]:
    """A vault of `n_notes` small notes (one chunk each) carrying 2–4 of `n_tags` tags (Zipf-like
    popularity) in frontmatter, in 10 diaries; the text is drawn from the tags' vocabularies.
    Returns 300 queries drawn the same way. Unchanged files are left alone."""
    rng = np.random.default_rng(seed)
    vocab = tag_vocabulary(corpus, n_tags)
    tags = list(vocab)
    popularity = 1.0 / np.arange(1, len(tags) + 1) ** 0.8
    popularity /= popularity.sum()
    filler = ["the", "a", "to", "of", "in", "on", "my", "is", "it", "i", "and", "with"]

    def sentence(picked: list[str], words: int) -> str:
        pool = [w for t in picked for w in vocab[t]]
        out = [str(rng.choice(filler)) if rng.random() < 0.3 else str(rng.choice(pool)) for _ in range(words)]
        return " ".join(out)

    for i in range(n_notes):
        picked = [tags[int(j)] for j in rng.choice(len(tags), int(rng.integers(2, 5)), replace=False, p=popularity)]
        folder = root / f"diary{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        text = (
            f"---\ntags: {json.dumps(picked)}\n---\n# {sentence(picked, 8).capitalize()}\n\n"
            f"{sentence(picked, 40).capitalize()}.\n"
        )
        path = folder / f"note-{i:05d}.md"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    rng = np.random.default_rng(seed + 1)  # the queries do not depend on the number of notes
    queries = []
    for _ in range(300):
        picked = [tags[int(j)] for j in rng.choice(len(tags), int(rng.integers(1, 3)), replace=False, p=popularity)]
        queries.append(sentence(picked, int(rng.integers(5, 10))))
    return queries


def synth_grpc(
    workdir: Path, corpus: Path, n_notes: int, n_tags: int, embedders: int, rounds: int, paired: int
) -> None:
    """Build (or reuse) a synthetic tagged eval index and measure it through gRPC."""
    queries = synth_tagged_vault(workdir / "vault", corpus, n_notes, n_tags)
    t0 = time.perf_counter()
    with stack_for(workdir / "vault", workdir / "data", embedders=embedders) as client:
        wait_indexed(client, need_vectors=True)
        while True:  # the tag vectors go through the same queue, then the EPA basis is built
            status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
            if status.tags_with_vectors >= status.tags and status.epa_axes:
                break
            time.sleep(1.0)
        emit(
            "tagmemo_synth_index",
            notes=status.documents,
            chunks=status.chunks,
            tags=status.tags_with_vectors,
            epa_axes=status.epa_axes,
            embedders=embedders,
            ready_s=round(time.perf_counter() - t0, 1),
        )
    if paired:
        paired_grpc(workdir, queries, paired)
    else:
        through_grpc(workdir, queries, rounds=rounds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", type=Path, help="an eval workdir (vault/ and data/) to measure through gRPC")
    parser.add_argument("--queries", type=Path, help="the dataset's queries.jsonl (with --workdir)")
    parser.add_argument("--tags", type=int, default=1000)
    parser.add_argument("--synth", type=Path, help="workdir of a synthetic tagged vault, built here, measured via gRPC")
    parser.add_argument("--notes", type=int, default=10_000, help="notes (one chunk each) of the --synth vault")
    parser.add_argument("--vocab", type=Path, default=SHARED / "data/beir/tagged_android/corpus.jsonl")
    parser.add_argument("--embedders", type=int, default=2, help="embedder workers while building --synth")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--grpc-only", action="store_true", help="skip the in-process measurements")
    parser.add_argument(
        "--paired",
        type=int,
        default=0,
        metavar="REPS",
        help="through gRPC: settings interleaved per query in random order, REPS repetitions, p50 of paired differences",
    )
    args = parser.parse_args()
    if not args.grpc_only:
        in_process(args.tags)
        with tempfile.TemporaryDirectory() as d:
            searcher_10k(Path(d))
    if args.workdir and args.queries:
        texts = [q["text"] for q in load_jsonl(args.queries)]
        if args.paired:
            paired_grpc(args.workdir, texts, args.paired)
        else:
            through_grpc(args.workdir, texts, rounds=args.rounds)
    if args.synth:
        synth_grpc(args.synth, args.vocab, args.notes, args.tags, args.embedders, args.rounds, args.paired)
    print(json.dumps({"done": True}))


if __name__ == "__main__":
    main()
