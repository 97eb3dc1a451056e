"""Fault matrix: kill -9 each service and Valkey of a running stack during indexing, edit, add,
delete and rename notes while the scanner is down; time to recover, jobs lost, duplicates, and
whether the index then equals a fresh build (documents, chunks, vectors, BM25 and hybrid top-10).

    nice -n 10 .venv/bin/python bench/fault_bench.py [--notes 1000] [--sections 2] [--workdir DIR]

The scenario is tests/faultkit.py's `run_fault_matrix`, the one tests/integration/test_faults.py
asserts on (there with one chunk per note); this prints its numbers. "recover_s" runs from the
kill until the launcher's supervisor had the process SERVING again (Valkey: answering PING);
"vectors_at_kill" shows that indexing was still under way. "jobs_enqueued" counts every
embedding job the faulted stack added to the stream, "fresh_jobs_enqueued" those a fresh build
of the final vault adds (the difference: re-sent jobs, and the edited notes' chunks embedded twice).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import emit

from tests.faultkit import run_fault_matrix


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--sections", type=int, default=2, help="1: one chunk per note (the test's vault)")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    root = args.workdir or Path(tempfile.mkdtemp(prefix="k0-fault-"))
    report = run_fault_matrix(root, args.notes, args.sections)
    for fault in report.faults:
        emit("fault", service=fault.service, recover_s=fault.recover_s, vectors_at_kill=fault.vectors_at_kill)
    a, b = report.faulted, report.fresh
    emit(
        "fault_vs_fresh",
        settle_s=report.settle_s,
        documents=(len(a.documents), len(b.documents)),
        chunks=(len(a.chunks), len(b.chunks)),
        vectors=(len(a.vectors), len(b.vectors)),
        vector_points=(a.vector_points, b.vector_points),
        bm25_documents=(a.bm25_documents, b.bm25_documents),
        jobs_dead=report.jobs_dead,
        jobs_enqueued=report.jobs_enqueued,
        fresh_jobs_enqueued=report.fresh_jobs_enqueued,
        bm25_top10_identical=report.top10_identical("bm25"),
        hybrid_top10_identical=report.top10_identical("hybrid"),
        max_score_delta=report.max_score_delta(),
        differences=report.differences(),
    )


if __name__ == "__main__":
    main()
