"""Scanner benchmarks: no-change rescans, full builds without vectors.

Run: .venv/bin/python bench/scan_bench.py [--build-only]
  - no-change rescan of 500 and 10,000 synthetic notes (target ≤ 3 ms for 500; K0maru: 11.67 ms)
  - full build, notes/s, on SciFact written as a vault and on ../shared/data/vaults/dendron
    (target ≥ 7,000 notes/s; K0maru: 6,746): scan (stat + read + xxh3), then parse (frontmatter,
    tags, links, chunks), then BM25-index every chunk in tantivy; each stage timed on its own.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import SHARED, beir_vault, emit, synthetic_vault

from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index, ChunkRow
from k0maru_scanner._chunker import chunk_sections
from k0maru_scanner._manifest import Manifest
from k0maru_scanner._markdown import parse_note
from k0maru_scanner._scanner import IgnoreRules, IncrementalScanner, read_note_text


def no_change(n: int, tmp: Path) -> None:
    vault = synthetic_vault(tmp / f"v{n}", n)
    scanner = IncrementalScanner(vault, Manifest(tmp / f"m{n}.sqlite", 100_000), IgnoreRules(), 2 * 1024 * 1024)
    scanner.scan()
    times = []
    for _ in range(30):
        result = scanner.scan()
        assert result.unchanged == n
        times.append(result.ms)
    emit("no_change_rescan", notes=n, median_ms=round(statistics.median(times), 3), min_ms=round(min(times), 3))


def full_build(name: str, vault: Path, tmp: Path) -> None:
    """Wall time per stage, and the CPU time of the whole build (steadier on a busy machine)."""
    scanner = IncrementalScanner(vault, Manifest(tmp / f"{name}.sqlite", 1_000_000), IgnoreRules(), 2 * 1024 * 1024)
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    result = scanner.scan()
    t_scan = time.perf_counter() - t0
    paths = [p for p, r in scanner.manifest.files.items() if r.indexed]
    t0 = time.perf_counter()
    parsed = []
    for rel in paths:
        _data, text, _how = read_note_text(vault / rel, 2 * 1024 * 1024)
        note = parse_note(rel, text)
        parsed.append((note, chunk_sections(note.sections)))
    t_parse = time.perf_counter() - t0
    cpu_parse = time.process_time() - cpu0
    index = Bm25Index(tmp / f"{name}-bm25", BM25Analyzer())
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    chunks = 0
    for note, note_chunks in parsed:
        for c in note_chunks:
            index.add(ChunkRow(f"{note.path}#{c.index}", note.path, note.diary, note.tags, f"{note.title}\n{c.text}"))
            chunks += 1
    index.commit()
    t_bm25 = time.perf_counter() - t0
    cpu = cpu_parse + time.process_time() - cpu0
    n = result.added
    emit(
        "full_build",
        vault=name,
        notes=n,
        chunks=chunks,
        scan_notes_per_s=round(n / t_scan),
        parse_notes_per_s=round(n / t_parse),
        bm25_notes_per_s=round(n / t_bm25),
        total_notes_per_s=round(n / (t_scan + t_parse + t_bm25)),
        total_notes_per_cpu_s=round(n / cpu),
    )


def save_to_event(tmp: Path, trials: int = 10) -> None:
    """Watch mode: a saved note → ChangeEvent on ZeroMQ (the 1 s collection window included)."""
    import zmq

    from k0maru_cli import free_port
    from k0maru_common import ChangeSubscriber
    from k0maru_scanner.config import ScannerSettings
    from k0maru_scanner.server import build_server

    vault = synthetic_vault(tmp / "watched", 500)
    events = f"tcp://127.0.0.1:{free_port()}"
    app = build_server(
        ScannerSettings(vault=vault, data_dir=tmp / "watch-data", events_addr=events, grpc_addr="127.0.0.1:0")
    )
    app.scanner.scan()
    assert app.watcher is not None
    app.watcher.start()
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    sub = ChangeSubscriber(context, events)
    time.sleep(0.5)
    latencies = []
    for t in range(trials):
        t0 = time.perf_counter()
        (vault / f"saved-{t}.md").write_text(f"# Saved {t}\n")
        while (event := sub.receive(50)) is None or event.path != f"saved-{t}.md":
            pass
        latencies.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.3)
    emit(
        "save_to_event", window_s=1.0, median_ms=round(statistics.median(latencies), 1), max_ms=round(max(latencies), 1)
    )
    sub.close()
    context.term()
    app.close()


def main() -> None:
    build_only = "--build-only" in sys.argv[1:]  # just the full builds
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if not build_only:
            save_to_event(tmp)
            no_change(500, tmp)
            no_change(10_000, tmp)
        scifact = SHARED / "data" / "beir" / "scifact"
        if scifact.exists():
            full_build("scifact", beir_vault(scifact, tmp / "scifact"), tmp)
        dendron = SHARED / "data" / "vaults" / "dendron"
        if dendron.exists():
            full_build("dendron", dendron, tmp)


if __name__ == "__main__":
    main()
