"""How long `get_project_loadout` takes to build, in-process (`_loadout.build_loadout`).

Run: .venv/bin/python bench/loadout_bench.py [--logs 2000] [--decisions 300] [--runs 3] [--vault V]

A synthetic vault of `--logs` session logs (frontmatter `date:`) and `--decisions` decisions
(frontmatter `created:`), or the vault given; the loadout reads every note for its links, and
each listed folder's notes for the day they say they were written (frontmatter, a decision
record's "Date:" line, the day in the name). Seconds per build, median of `--runs`. Printed,
never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _common import emit

from k0maru_offload._loadout import build_loadout


def synthetic(root: Path, logs: int, decisions: int) -> Path:
    (root / "journal").mkdir(parents=True)
    (root / "decisions").mkdir()
    for i in range(logs):
        day = f"2026-0{1 + i % 9}-{1 + i % 28:02d}"
        text = f"---\ntitle: Session {i}\ndate: {day}\ntags: [a, b]\n---\n# Session {i}\n\nwe did [[x{i}]] things\n"
        (root / "journal" / f"session note {i}.md").write_text(text)
    for i in range(decisions):
        day = f"2026-0{1 + i % 9}-{1 + i % 28:02d}"
        text = f"---\ntitle: D {i}\ncreated: {day}\n---\n# D {i}\n\n## Decision\n\nx\n"
        (root / "decisions" / f"decision {i}.md").write_text(text)
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=2000)
    parser.add_argument("--decisions", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--vault", type=Path, help="an existing vault instead of the synthetic one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault = args.vault or synthetic(Path(tmp) / "vault", args.logs, args.decisions)
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            loadout = build_loadout(vault, 2000)
            times.append(time.perf_counter() - started)
        emit(
            "loadout",
            vault=str(args.vault or "synthetic"),
            median_s=round(statistics.median(times), 3),
            min_s=round(min(times), 3),
            decisions_listed=len(loadout.decisions),
        )


if __name__ == "__main__":
    main()
