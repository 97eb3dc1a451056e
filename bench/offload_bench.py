"""Log analysis per toolchain family on the recorded corpus (tests/fixtures/logs/manifest.tsv).

Run: .venv/bin/python bench/offload_bench.py
Prints one JSON line per log, then the per-family table (Markdown): share of logs whose first
error and user location match the answers written in the manifest, and for logs of 500+ lines
how much smaller the agent's answer (summary + next step + Mermaid) is than the log, in characters
and in estimated tokens. Targets (issue 14): ≥ 95 % first error, ≥ 95 % location, every 500+ line
log at ≤ 3 % of its characters.
"""

from __future__ import annotations

import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from _common import emit

from k0maru_common import estimate_tokens
from k0maru_offload import OffloadEngine, next_step
from k0maru_offload._logscan import scan_log

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.fixtures.logs.manifest import LOGS, cases


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--set", default="corpus", choices=["corpus", "heldout"], help="which recorded logs")
    chosen = parser.parse_args().set
    engine = OffloadEngine(Path(tempfile.mkdtemp()), 50, 10**8)
    rows: dict[str, list[dict[str, float]]] = defaultdict(list)
    for case in cases(LOGS / "heldout") if chosen == "heldout" else cases():
        text = case.path.read_text()
        r = engine.offload(text, command=case.name, exit_code=1)
        f = scan_log(text.splitlines())  # logs under 50 lines pass through, but are analysed all the same
        answer = f"{r.summary}\n{next_step(r.node_id)}\n{r.mermaid}" if r.offloaded else text
        row = {
            "error_ok": float(case.error_ok(f.first_error)),
            "location_ok": float(case.location_ok(f.location)),
            "lines": float(r.line_count),
            "char_pct": 100 * len(answer) / len(text),
            "token_pct": 100 * estimate_tokens(answer) / max(1, estimate_tokens(text)),
        }
        rows[case.family].append(row)
        emit("logscan", log=case.name, family=case.family, first_error=f.first_error[:70], location=f.location, **row)
    print("\n| family | logs | first error | user location | 500+ line logs | answer size (chars) | ≤ 3 % |")
    print("|---|---|---|---|---|---|---|")
    everything = [row for family in rows.values() for row in family]
    for family, items in [*sorted(rows.items()), ("all", everything)]:
        long = [r for r in items if r["lines"] >= 500]
        size = f"{min(r['char_pct'] for r in long):.1f}–{max(r['char_pct'] for r in long):.1f} %" if long else "—"
        print(
            f"| {family} | {len(items)} | {100 * sum(r['error_ok'] for r in items) / len(items):.0f} % "
            f"| {100 * sum(r['location_ok'] for r in items) / len(items):.0f} % | {len(long)} | {size} "
            f"| {sum(r['char_pct'] <= 3 for r in long)}/{len(long)} |"
        )


if __name__ == "__main__":
    main()
