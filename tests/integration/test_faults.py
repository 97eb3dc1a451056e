"""Fault injection: kill -9 of every service and of Valkey during indexing, notes edited, added,
deleted and renamed while the scanner is down; afterwards the index equals a fresh build."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faultkit import SERVICES, run_fault_matrix

pytestmark = pytest.mark.integration
NOTES = 1000


def test_every_fault_converges_to_a_fresh_build(tmp_path: Path):
    report = run_fault_matrix(tmp_path, NOTES, sections=1)
    assert [f.service for f in report.faults] == SERVICES  # each one restarted by the supervisor
    assert report.faults[0].vectors_at_kill < NOTES, "the first kill came after indexing had finished"
    assert report.differences() == {}  # same documents, chunks, vectors, top-10; no orphans, no dead jobs
    faulted = report.faulted
    assert len(faulted.documents) == NOTES - 3 + 10  # 3 deleted, 10 added, renames kept their count
    assert set(report.edits["present"]) <= set(faulted.documents)
    assert not set(report.edits["absent"]) & set(faulted.documents)
    assert all(faulted.top10.values()), "a query of the fixed set found nothing"
