"""A whole vault embedded by the stack against bare onnxruntime on the same cores, in one run.

Run: nice -n 10 .venv/bin/python bench/embed_vault.py [--notes 1500] [--embedders 2] [--vault DIR] [--model M]
     [--bare-processes N]
  - the stack: `k0maru up` (launcher in this process) on a fresh data dir (fresh Valkey: no vector
    cache), with N embedder workers; timed from the start until BM25 answers for every note, and
    until every chunk has its vector
  - bare onnxruntime: the very texts the stack embedded (read back from the retriever's state),
    split over N processes of one intra-op thread each (as many as the stack's workers, or
    `--bare-processes`: a lone embedder gets the cores as threads from the launcher), the same
    model (`--model`, default the embedder's default) batched as the embedder does (`embed_bench.bare_onnxruntime`);
    run before and after the stack's run, averaged, to bracket drift
  - printed: chunks/s of both, end to end (from `up` to the last vector: start-up, scan and BM25
    included) and from the first vector to the last, and the stack's share of bare onnxruntime
Default vault: the first N notes of SciFact written as notes (needs ../shared); any vault works.
Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import tempfile
import time
from pathlib import Path

from _common import SHARED, emit
from embed_bench import bare_onnxruntime

from k0maru.v1 import retriever_pb2
from k0maru_cli import Launcher
from k0maru_embedder._presets import DEFAULT_PRESET
from k0maru_retriever._index import embed_text
from k0maru_retriever._state import IndexState


def scifact_vault(root: Path, notes: int) -> Path:
    """The first `notes` notes of SciFact written as a vault (the way `k0maru eval beir` does)."""
    from k0maru_cli._eval import write_vault

    full = root / "full"
    write_vault(SHARED / "data" / "beir" / "scifact", full)
    vault = root / "vault"
    vault.mkdir()
    for path in sorted(full.rglob("*.md"))[:notes]:
        target = vault / path.relative_to(full)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(path, target)
    shutil.rmtree(full)
    return vault


def stack_run(vault: Path, data: Path, embedders: int, need_vectors: bool, model: str) -> dict[str, float]:
    launcher = Launcher(vault, data, embedders=embedders, http_port=0, model=model)
    t0 = time.perf_counter()
    state = launcher.start()
    healthy = time.perf_counter() - t0
    client = state.client()
    first_vector = searchable = 0.0
    try:
        notes = sum(1 for _ in vault.rglob("*.md"))
        while True:
            status = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())
            now = time.perf_counter() - t0
            if not searchable and status.documents >= notes:
                searchable = now
            if not first_vector and status.chunks_with_vectors:
                first_vector = now
            if searchable and (not need_vectors or (status.chunks and status.chunks_with_vectors == status.chunks)):
                return {
                    "healthy_s": healthy,
                    "bm25_searchable_s": searchable,
                    "first_vector_s": first_vector,
                    "all_vectors_s": now,
                    "chunks": status.chunks,
                }
            time.sleep(0.2)
    finally:
        client.close()
        launcher.stop()


def embedded_texts(data: Path) -> list[str]:
    state = IndexState(data / "retriever" / "state.sqlite")
    try:
        return [embed_text(doc, chunk) for doc in state.docs.values() for chunk in doc.chunks]
    finally:
        state.close()


def bare_parallel(texts: list[str], processes: int, model: str) -> float:
    """Wall seconds for `processes` bare onnxruntime processes to embed the texts between them."""
    shares = [texts[i::processes] for i in range(processes)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes) as pool:
        pool.starmap(bare_onnxruntime, [(shares[0][:32], model)] * processes)  # load and warm up first
        t0 = time.perf_counter()
        pool.starmap(bare_onnxruntime, [(share, model) for share in shares])
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1500, help="SciFact notes in the default vault")
    parser.add_argument("--vault", type=Path, help="embed this vault instead")
    parser.add_argument("--embedders", type=int, default=2)
    parser.add_argument("--model", default=DEFAULT_PRESET, help="embedding model preset")
    parser.add_argument(
        "--bare-processes",
        type=int,
        default=0,
        help="bare onnxruntime processes (default: as many as embedders; 2 with one embedder on 2 cores, which the launcher gives 2 threads)",
    )
    args = parser.parse_args()
    bare_processes = args.bare_processes or args.embedders
    with tempfile.TemporaryDirectory(prefix="k0-embed-vault-") as d:
        tmp = Path(d)
        vault = args.vault or scifact_vault(tmp, args.notes)
        # the texts the stack will embed, from a BM25-only pass of the same vault, so that bare
        # onnxruntime runs once before and once after the stack's run
        bm25_only = stack_run(vault, tmp / "data-bm25", 0, need_vectors=False, model=args.model)
        texts = embedded_texts(tmp / "data-bm25")
        bare_before = bare_parallel(texts, bare_processes, args.model)
        emit("embed_vault_bare_before", texts=len(texts), seconds=round(bare_before, 2))
        stack = stack_run(vault, tmp / "data", args.embedders, need_vectors=True, model=args.model)
        emit("embed_vault_stack", **{k: round(v, 2) for k, v in stack.items()})
        bare_after = bare_parallel(texts, bare_processes, args.model)
        bare = (bare_before + bare_after) / 2
        bare_rate = len(texts) / bare
        end_to_end = stack["chunks"] / stack["all_vectors_s"]
        steady = stack["chunks"] / (stack["all_vectors_s"] - stack["first_vector_s"])
        emit(
            "embed_vault",
            notes=sum(1 for _ in vault.rglob("*.md")),
            embedders=args.embedders,
            model=args.model,
            **{k: round(v, 2) for k, v in stack.items()},
            bm25_only_searchable_s=round(bm25_only["bm25_searchable_s"], 2),
            bare_s=[round(bare_before, 2), round(bare_after, 2)],
            bare_chunks_per_s=round(bare_rate, 1),
            stack_chunks_per_s_end_to_end=round(end_to_end, 1),
            stack_chunks_per_s_first_to_last_vector=round(steady, 1),
            share_of_bare_end_to_end=round(end_to_end / bare_rate, 3),
            share_of_bare_first_to_last=round(steady / bare_rate, 3),
        )


if __name__ == "__main__":
    main()
