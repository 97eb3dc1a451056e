"""NoteDays: a date range as the notes it keeps."""

from __future__ import annotations

from k0maru.v1 import common_pb2
from k0maru_retriever._bm25 import Scope
from k0maru_retriever._days import PUSH_MAX, NoteDays

DAY_NS = 86_400 * 1_000_000_000


def doc(path: str, date: str = "", mtime_days: int = 0) -> common_pb2.Document:
    return common_pb2.Document(path=path, date=date, mtime_ns=mtime_days * DAY_NS)


def test_a_range_keeps_the_notes_dated_within_it_by_their_own_date_else_their_files_day():
    days = NoteDays(
        [
            doc("a.md", "2026-11-30"),
            doc("b.md", "2026-12-02", mtime_days=1),  # its own date wins over its file's
            doc("c.md", mtime_days=20_000),  # 2024-10-04, its file's day
            doc("d.md"),  # no day at all: outside every range
            doc("e.md", "2020-01-01"),
            doc("f.md", "2021-01-01"),
        ]
    )
    assert days.scope(Scope(since="2026-11-30")).keep_paths == {"a.md", "b.md"}
    assert days.scope(Scope(since="2024-10-04", until="2024-10-04")).keep_paths == {"c.md"}
    assert days.scope(Scope(until="2019-12-31")).keep_paths == frozenset()
    assert days.scope(Scope(since="2020-06-01")).keep_paths == {"a.md", "b.md", "c.md", "f.md"}  # not d.md: no day
    assert days.scope(Scope(diaries=("x",))) == Scope(diaries=("x",))  # no range: as it was


def test_a_note_moves_with_its_day_and_leaves_with_its_removal():
    days = NoteDays([doc("a.md", "2026-11-30"), doc("b.md", "2020-01-01"), doc("c.md", "2020-01-02")])
    days.put(doc("a.md", "2019-01-01"))
    assert days.scope(Scope(since="2026-01-01")).keep_paths == frozenset()
    assert days.scope(Scope(until="2019-12-31")).keep_paths == {"a.md"}
    days.remove("a.md")
    days.remove("never.md")
    assert days.scope(Scope(until="2019-12-31")).keep_paths == frozenset()
    assert days.scope(Scope(since="2020-01-02")).keep_paths == {"c.md"}


def test_a_range_that_keeps_more_than_push_max_notes_is_left_to_the_rankings_check():
    days = NoteDays(doc(f"{i}.md", "2026-01-01" if i <= PUSH_MAX else "2025-01-01") for i in range(2 * PUSH_MAX))
    wide = Scope(since="2025-06-01")
    assert days.scope(wide) == wide  # PUSH_MAX + 1 kept: not listed
    days.remove("0.md")
    assert len(days.scope(wide).keep_paths or ()) == PUSH_MAX


def test_newest_first_walks_the_days_from_the_latest_and_the_undated_last():
    days = NoteDays(
        [
            doc("b.md", "2026-11-30"),
            doc("a.md", "2026-11-30"),
            doc("c.md", "2025-01-01"),
            doc("d.md"),
            doc("e.md", "2027-01-01"),
        ]
    )
    assert list(days.newest_first()) == ["e.md", "a.md", "b.md", "c.md", "d.md"]
    assert list(days.newest_first(since="2026-01-01", until="2026-12-31")) == ["a.md", "b.md"]
    assert list(days.newest_first(until="2026-11-29")) == ["c.md"]  # a range: no undated note
    walk = days.newest_first()
    assert next(walk) == "e.md"  # lazily: a listing stops at its limit
