"""An agent's edits for a while, then the live index against a fresh build of the same notes.

    .venv/bin/python bench/edit_soak.py VAULT WORKDIR [--minutes 5] [--quiet-s 1]

Copies VAULT into WORKDIR and starts a stack on it (`k0maru up` as a library, no embedders, BM25
compaction after `--quiet-s`). Then, in bursts of 8 s of edits and 3 s of pause (so compactions
run in the pauses, and some edits land while one runs): notes appended to (60 %), written new
(15 %), deleted (10 %) and renamed (15 %), with a BM25 search between edits. At the end it waits
until every edit is applied and the deleted documents are compacted away, records 40 queries'
scores, asks for a `Reindex` (a fresh build) and compares. Prints the operations done, the
compactions, the search latency during the soak, and how many queries' scores differ (0 expected).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import time
from pathlib import Path

from k0maru.v1 import retriever_pb2, scanner_pb2
from k0maru_cli import Launcher
from k0maru_common import StackClient

WORDS = [
    "lighthouse",
    "keeper",
    "harbour",
    "storm",
    "ledger",
    "export",
    "sqlite",
    "busy",
    "retry",
    "budget",
    "graph",
    "link",
    "note",
    "tag",
]


def status(client: StackClient) -> retriever_pb2.IndexStatusResponse:
    return client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest())


def scores(client: StackClient, query: str) -> list[float]:
    request = retriever_pb2.SearchRequest(query=query, limit=10, mode=retriever_pb2.SEARCH_MODE_BM25, explain=True)
    return [round(h.explain.bm25.score, 5) for h in client.call(client.retriever.Search, request).hits]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--quiet-s", type=float, default=1.0)
    args = parser.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    vault = args.workdir / "vault"
    shutil.copytree(args.vault, vault)
    rng = random.Random(7)
    launcher = Launcher(
        vault,
        args.workdir / "data",
        embedders=0,
        http_port=0,
        startup_timeout_s=600,
        extra_env={"K0_BM25_COMPACT_QUIET_S": str(args.quiet_s)},
    )
    state = launcher.start()
    client = state.client()
    ops = {"append": 0, "new": 0, "delete": 0, "rename": 0}
    latency: list[float] = []
    try:
        end = time.monotonic() + args.minutes * 60
        made = 0
        while time.monotonic() < end:
            burst = time.monotonic() + 8
            while time.monotonic() < burst:
                notes = sorted(vault.rglob("*.md"))
                roll = rng.random()
                note = rng.choice(notes)
                if roll < 0.6:
                    with note.open("a", encoding="utf-8") as out:
                        out.write(f"\n{' '.join(rng.choices(WORDS, k=8))} soak{made}\n")
                    ops["append"] += 1
                elif roll < 0.75:
                    made += 1
                    (vault / f"soak-{made}.md").write_text(
                        f"# Soak {made}\n\n{' '.join(rng.choices(WORDS, k=30))} soak{made}\n", encoding="utf-8"
                    )
                    ops["new"] += 1
                elif roll < 0.85 and len(notes) > 50:
                    note.unlink()
                    ops["delete"] += 1
                else:
                    note.rename(note.with_name(f"renamed-{made}-{note.name}"))
                    made += 1
                    ops["rename"] += 1
                started = time.perf_counter()
                scores(client, " ".join(rng.choices(WORDS, k=3)))
                latency.append((time.perf_counter() - started) * 1000)
                time.sleep(0.05)
            time.sleep(3)
        last = client.call(client.scanner.Scan, scanner_pb2.ScanRequest()).last_seq
        while status(client).last_applied_seq < last:
            time.sleep(0.5)
        settled = time.monotonic()
        while status(client).bm25_deleted:
            time.sleep(0.5)
        compacted_after = time.monotonic() - settled
        final = status(client)
        queries = [" ".join(rng.choices(WORDS, k=2)) for _ in range(30)] + [
            f"soak{i}" for i in range(1, made, max(1, made // 10))
        ]
        live = {q: scores(client, q) for q in queries}
        client.call(client.retriever.Reindex, retriever_pb2.ReindexRequest(), timeout=600)
        fresh = {q: scores(client, q) for q in queries}
        differ = [q for q in queries if live[q] != fresh[q]]
        cuts = statistics.quantiles(latency, n=100)
        print(
            f"{sum(ops.values())} edits {ops}; {final.documents} notes, {final.chunks} chunks;"
            f" {final.bm25_compactions} compactions, the last {compacted_after:.1f} s after the edits were applied;"
            f" BM25 search during the soak p50 {cuts[49]:.1f} ms, p99 {cuts[98]:.1f} ms;"
            f" consistent {final.consistent} ({final.problem or 'no problem'});"
            f" {len(queries) - len(differ)}/{len(queries)} queries score as after a Reindex"
            + (f"; differ: {differ}" if differ else "")
        )
    finally:
        client.close()
        launcher.stop()
    errors = [
        line
        for log in (args.workdir / "data" / "logs").glob("*.log")
        for line in log.read_text(errors="replace").splitlines()
        if " ERROR " in line or "Traceback" in line
    ]
    print(f"{len(errors)} error lines in the logs" + ("".join(f"\n  {e}" for e in errors[:10]) if errors else ""))


if __name__ == "__main__":
    main()
