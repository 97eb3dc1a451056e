"""Helpers shared by the benchmarks (not a test: numbers are printed, never asserted)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from k0maru_cli._eval import percentile

SHARED = Path(__file__).resolve().parents[2] / "shared"


def summary(values_ms: list[float]) -> str:
    return f"p50 {percentile(values_ms, 0.5):.2f} ms, p99 {percentile(values_ms, 0.99):.2f} ms, mean {statistics.fmean(values_ms):.2f} ms"


def synthetic_vault(root: Path, n: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        folder = root / f"area{i % 10}"
        folder.mkdir(exist_ok=True)
        (folder / f"note-{i}.md").write_text(
            f"---\ntags: [t{i % 17}, bench]\n---\n# Note {i}\n\nSome text about topic {i % 31} with a link to [[note-{(i + 1) % n}]].\n\n"
            f"## Details\n\nMore words, #tag{i % 5}, and a second paragraph for the chunker.\n"
        )
    return root


def beir_vault(dataset: Path, root: Path) -> Path:
    """A BEIR corpus written as notes, the way `k0maru eval beir` writes it."""
    from k0maru_cli._eval import write_vault

    write_vault(dataset, root)
    return root


def emit(name: str, **values: object) -> None:
    print(json.dumps({"bench": name, **values}))
