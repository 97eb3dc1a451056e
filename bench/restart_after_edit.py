"""A warm restart with nothing changed, and one after a note was edited in the previous run.

    .venv/bin/python bench/restart_after_edit.py VAULT WORKDIR

Copies VAULT into WORKDIR, builds its index once (`k0maru up` as a library: the launcher, no
embedders), stops, starts again (timed), edits one note while that stack runs (the scanner
watches), stops, starts again (timed: searchable at once, the replaced chunks still counted),
waits for the background compaction (`K0_BM25_COMPACT_QUIET_S` after the start) and prints the
retriever's log lines about a BM25 rebuild or compaction.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from k0maru.v1 import retriever_pb2
from k0maru_cli import Launcher


def timed_start(vault: Path, data: Path) -> tuple[Launcher, float]:
    launcher = Launcher(vault, data, embedders=0, http_port=0, startup_timeout_s=600)
    started = time.perf_counter()
    launcher.start()
    return launcher, time.perf_counter() - started


def main() -> None:
    source, work = Path(sys.argv[1]), Path(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    vault, data = work / "vault", work / "data"
    shutil.copytree(source, vault)
    launcher, cold = timed_start(vault, data)
    launcher.stop()
    launcher, warm = timed_start(vault, data)
    note = sorted(vault.rglob("*.md"))[0]
    with note.open("a") as out:
        out.write("\nan edited line\n")
    time.sleep(5)  # the watcher's window, then the retriever applies the edit
    launcher.stop()
    launcher, edited = timed_start(vault, data)
    started = time.perf_counter() - edited
    client = launcher.state.client() if launcher.state else None
    assert client is not None
    deleted = client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest()).bm25_deleted
    while client.call(client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest()).bm25_deleted:
        time.sleep(0.5)
    compacted = time.perf_counter() - started
    client.close()
    launcher.stop()
    log = (data / "logs" / "retriever.log").read_text().splitlines()
    rebuilt = [line for line in log if "deleted documents" in line or "rebuilt BM25" in line]
    print(f"cold {cold:.1f} s; warm, nothing changed {warm:.1f} s; warm after one edited note {edited:.1f} s")
    print(f"after the edit: {deleted} replaced chunks counted at the start, compacted {compacted:.1f} s after it")
    print("\n".join(rebuilt[-2:]))


if __name__ == "__main__":
    main()
