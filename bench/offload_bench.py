"""Offload compression per language on the real logs in tests/fixtures/logs (see record.sh).

Run: .venv/bin/python bench/offload_bench.py   (target: ≥ 97 % fewer tokens for 500+ line logs,
with the first error and its location kept)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from _common import emit

from k0maru_offload import OffloadEngine

LOGS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "logs"


def main() -> None:
    engine = OffloadEngine(Path(tempfile.mkdtemp()), 50, 10**8)
    for log in sorted(LOGS.glob("*.log")):
        r = engine.offload(log.read_text(), command=log.stem, exit_code=1)
        f = r.findings
        emit(
            "offload",
            log=log.stem,
            lines=r.line_count,
            tokens_before=r.original_tokens,
            tokens_after=r.summary_tokens,
            reduction_pct=round(100 * (1 - r.summary_tokens / r.original_tokens), 1),
            language=f.language,
            first_error=f.first_error[:60],
            location=f.location.rsplit("/", 1)[-1],
        )


if __name__ == "__main__":
    main()
