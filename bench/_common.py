"""Helpers shared by the benchmarks (not a test: numbers are printed, never asserted)."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from k0maru_cli._eval import percentile

SHARED = Path(__file__).resolve().parents[2] / "shared"
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the fault kit and the synthetic vault live beside the tests that use them
    sys.path.insert(0, str(ROOT))

from tests.faultkit import synthetic_vault  # noqa: E402  (re-exported for the benches)

__all__ = ["SHARED", "beir_vault", "emit", "summary", "synthetic_vault"]


def summary(values_ms: list[float]) -> str:
    return f"p50 {percentile(values_ms, 0.5):.2f} ms, p99 {percentile(values_ms, 0.99):.2f} ms, mean {statistics.fmean(values_ms):.2f} ms"


def beir_vault(dataset: Path, root: Path) -> Path:
    """A BEIR corpus written as notes, the way `k0maru eval beir` writes it."""
    from k0maru_cli._eval import write_vault

    write_vault(dataset, root)
    return root


def emit(name: str, **values: object) -> None:
    print(json.dumps({"bench": name, **values}), flush=True)  # a killed run keeps what it printed
