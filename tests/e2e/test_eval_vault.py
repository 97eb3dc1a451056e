"""`k0maru eval vault` on the example vault as it is: metrics, the JSON last line, missed queries.

It also pins the issue's example: the decision note that both channels rank first for its own
topic is first in hybrid (the old flat +0.05 graph boost put it 31st, under every linked note).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
K0MARU = str(Path(sys.executable).parent / "k0maru")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vault"
DECISION = "decisions/2026-08-01-embedded-default.md"


def test_eval_vault_reports_metrics_and_the_queries_that_missed(tmp_path: Path):
    vault = shutil.copytree(EXAMPLE, tmp_path / "vault")
    before = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*"))
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "\n".join(
            json.dumps(q)
            for q in (
                {"_id": "own-topic", "text": "embedded default without Docker: Valkey from a wheel, Qdrant Edge"},
                {"_id": "wrong", "text": "rust borrow checker errors"},
                {"_id": "no-qrels", "text": "not scored"},
            )
        )
    )
    qrels = tmp_path / "r.tsv"
    qrels.write_text(f"query-id\tcorpus-id\tscore\nown-topic\t{DECISION}\t1\nwrong\tinbox/ideas.md\t1\n")
    args = ["--queries", str(queries), "--qrels", str(qrels), "--embedders", "1", "--workdir", str(tmp_path / "w")]
    out = subprocess.run(
        [K0MARU, "eval", "vault", str(vault), "--mode", "hybrid", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    report = json.loads(lines[-1])
    assert report["queries"] == 2 and report["missed"] == 1 and report["mode"] == "hybrid"
    # own-topic is first (reciprocal rank 1), wrong is not in the top 3: MRR@10 is (1 + x) / 2, x < 1/3.
    assert 0.5 <= report["mrr@10"] < 0.5 + 1 / 6
    assert {"ndcg@10", "recall@10", "p50_ms", "p99_ms"} <= set(report)
    assert lines[0].startswith("missed wrong (") and "rust borrow checker errors" in lines[0]
    assert lines[1].split() == ["expected", "inbox/ideas.md"]
    assert lines[2].split()[0] == "got" and "concepts/rust borrow checker.md" in lines[2]
    assert sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*")) == before  # nothing written


def test_eval_vault_refuses_qrels_naming_no_note(tmp_path: Path):
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"_id": "a", "text": "x"}))
    qrels = tmp_path / "r.tsv"
    qrels.write_text("a\tno/such/note.md\t1\n")
    out = subprocess.run(
        [K0MARU, "eval", "vault", str(EXAMPLE), "--queries", str(queries), "--qrels", str(qrels)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "has an expected note" in out.stderr
