"""The evaluation's metrics, and notes graded -1 (a known-item query's source) left out of a ranking."""

from __future__ import annotations

import math

import pytest

from k0maru_cli._eval import mrr_at_k, ndcg_at_k, recall_at_k, without_ignored


def test_ndcg_recall_mrr_of_one_relevant_note_at_rank_two():
    relevant = {"answer.md": 1}
    ranked = ["other.md", "answer.md", "third.md"]
    assert ndcg_at_k(ranked, relevant) == pytest.approx(1 / math.log2(3))
    assert recall_at_k(ranked, relevant) == 1.0
    assert mrr_at_k(ranked, relevant) == 0.5


def test_a_note_graded_minus_one_is_left_out_and_never_counts():
    relevant = {"answer.md": 1, "source.md": -1}  # source.md quotes the query verbatim
    ranked = ["source.md", "answer.md", "third.md"]
    kept = without_ignored(ranked, relevant)
    assert kept == ["answer.md", "third.md"]
    assert ndcg_at_k(kept, relevant) == 1.0 and mrr_at_k(kept, relevant) == 1.0
    # left in, it costs the answer a rank, and its -1 neither adds to nor lowers the ideal DCG
    assert ndcg_at_k(ranked, relevant) == pytest.approx(1 / math.log2(3))
    assert ndcg_at_k(["source.md"], relevant) == 0.0
