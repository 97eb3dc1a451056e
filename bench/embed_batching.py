"""Embedding speed by batch budget and by arithmetic, in-process, side by side in one run.

Run: .venv/bin/python bench/embed_batching.py [--passes 2]
  - the float preset (minilm-l6-int8) with batch budgets of 2,048 / 1,024 / 512 / 256 padded
    tokens and one text per run, on SciFact chunks, LoCoMo turns, CoSQA code and SciFact claims
  - the float preset (its default budget) against minilm-l6-q8 (int8 MatMul, one text per run):
    in bulk, and one query at a time
Needs ../shared. Seconds per set are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import time

from _common import SHARED, emit

import k0maru_embedder._model as model
from k0maru_embedder._presets import resolve_preset

SETS = {
    "scifact_chunks": ("scifact/corpus.jsonl", 150),
    "locomo_turns": ("locomo_dev/beir_turns/corpus.jsonl", 600),
    "cosqa_code": ("cosqa_dev/corpus.jsonl", 300),
    "scifact_claims": ("scifact/queries.jsonl", 600),
}


def texts_of(path: str, n: int) -> list[str]:
    out = []
    with (SHARED / "data" / "beir" / path).open() as rows:
        for row in rows:
            doc = json.loads(row)
            out.append((doc.get("title", "") + "\n" + doc["text"]).strip())
            if len(out) == n:
                break
    return out


def timed(embedder: model.OnnxEmbedder, texts: list[str], one_at_a_time: bool = False) -> float:
    """Seconds to embed `texts`: in bulk (the embedder batches them), or one query per call."""
    t0 = time.perf_counter()
    if one_at_a_time:
        for text in texts:
            embedder.embed([text], is_query=True)
    else:
        embedder.embed(texts)
    return round(time.perf_counter() - t0, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=2)
    args = parser.parse_args()
    sets = {name: texts_of(path, n) for name, (path, n) in SETS.items()}
    default_budget = model.MAX_BATCH_TOKENS
    floats = model.OnnxEmbedder(resolve_preset("minilm-l6-int8"))
    q8 = model.OnnxEmbedder(resolve_preset("minilm-l6-q8"))
    for run in range(args.passes):
        for name, texts in sets.items():
            seconds = {}
            for budget in (2048, 1024, 512, 256, 1):
                model.MAX_BATCH_TOKENS = budget
                seconds[str(budget)] = timed(floats, texts)
            model.MAX_BATCH_TOKENS = default_budget
            emit("embed_batch_budget", run=run, texts=name, count=len(texts), seconds=seconds)
            float_bulk, q8_bulk = timed(floats, texts), timed(q8, texts)
            alone = texts[:200]
            float_alone = timed(floats, alone, one_at_a_time=True)
            q8_alone = timed(q8, alone, one_at_a_time=True)
            emit(
                "embed_float_vs_q8",
                run=run,
                texts=name,
                bulk_s=[float_bulk, q8_bulk],
                bulk_speedup=round(float_bulk / q8_bulk, 2),
                one_at_a_time_s=[float_alone, q8_alone],
                one_at_a_time_speedup=round(float_alone / q8_alone, 2),
            )


if __name__ == "__main__":
    main()
