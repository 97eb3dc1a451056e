"""NoteDays: a date range as the notes it keeps."""

from __future__ import annotations

from k0maru.v1 import common_pb2
from k0maru_retriever._bm25 import Scope
from k0maru_retriever._days import PUSH_MAX, NoteDays, note_day

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


def test_a_committed_day_comes_between_the_notes_own_date_and_its_files_day():
    days = NoteDays(
        [
            common_pb2.Document(path="a.md", date="2026-01-01", committed="2025-01-01", mtime_ns=20_000 * DAY_NS),
            common_pb2.Document(path="b.md", committed="2025-01-01", mtime_ns=20_000 * DAY_NS),
            doc("c.md", mtime_days=20_000),  # 2024-10-04
        ]
    )
    assert days.scope(Scope(since="2026-01-01")).keep_paths == {"a.md"}
    assert days.scope(Scope(since="2025-01-01", until="2025-01-01")).keep_paths == {"b.md"}
    assert days.scope(Scope(until="2024-12-31")).keep_paths == {"c.md"}


def test_a_listing_is_the_same_from_the_named_notes_as_from_the_walk():
    """`list_scope` sorts the notes a scope's tags and folders name when they are few and walks
    the days otherwise; either way the answer is every note in the scope, newest first, then by
    path: checked against a plain filter and sort, over random notes, scopes and changes."""
    import random

    from k0maru_retriever._listing import ScopeCandidates, list_scope

    rng = random.Random(5)
    folders = ["a", "a/b", "ab", "c", "日本"]
    tags = ["x", "X", "y", "y/z", "w"]

    def random_doc(i: int) -> common_pb2.Document:
        folder = rng.choice([*folders, ""])
        path = f"{folder}/n{i}.md" if folder else f"n{i}.md"
        return common_pb2.Document(
            path=path,
            diary=path.split("/")[0] if "/" in path else "Root",
            tags=rng.sample(tags, rng.randint(0, 2)),
            date=rng.choice(["", "2026-01-0" + str(rng.randint(1, 9))]),
            mtime_ns=rng.choice([0, 20_000 * DAY_NS]),
        )

    docs = {d.path: d for d in (random_doc(i) for i in range(300))}
    days, named = NoteDays(docs.values()), ScopeCandidates(docs.values())
    scopes = [
        Scope(tags=(("x", "X"),)),
        Scope(tags=("w", "y")),
        Scope(tags=("none",)),
        Scope(path_prefixes=("a/",)),
        Scope(path_prefixes=("a",)),  # a prefix, not a folder: `ab/` too
        Scope(path_prefixes=("a/b/", "c")),
        Scope(diaries=("Root",)),
        Scope(diaries=("日本", "c"), tags=("x",)),
        Scope(tags=("y",), since="2026-01-04"),
        Scope(path_prefixes=("ab/",), until="2026-01-05"),
        Scope(since="2026-01-02", until="2026-01-03"),
    ]
    for step in range(6):
        for scope in scopes:
            every = [p for p in sorted(docs) if scope.matches(p, docs[p].diary, list(docs[p].tags), note_day(docs[p]))]
            every.sort(key=lambda p: note_day(docs[p]), reverse=True)
            for limit in (1, 5, 1000):
                assert list_scope(scope, limit, docs, days, named) == every[:limit], (step, scope, limit)
        for _ in range(40):  # notes come, change and go
            if rng.random() < 0.3 and docs:
                gone = rng.choice(sorted(docs))
                del docs[gone]
                days.remove(gone)
                named.remove(gone)
            else:
                new = random_doc(rng.randint(0, 400))
                docs[new.path] = new
                days.put(new)
                named.put(new)


def test_the_index_state_builds_its_scope_candidates_at_the_first_listing_and_keeps_them(tmp_path):
    from k0maru_retriever._listing import ScopeCandidates
    from k0maru_retriever._state import IndexState

    state = IndexState(tmp_path / "state.sqlite")
    state.put_doc(common_pb2.Document(path="a/1.md", tags=["x"]))
    state.put_doc(common_pb2.Document(path="b/2.md", tags=["y"]))
    tagged_x = Scope(tags=("x",))
    assert state.scope_candidates.of(tagged_x, 100) == {"a/1.md"}  # built from the docs now
    state.put_doc(common_pb2.Document(path="b/2.md", tags=["x"]))  # and kept from then on
    state.put_doc(common_pb2.Document(path="c/3.md", tags=["x"]))
    state.drop_doc("a/1.md")
    assert state.scope_candidates.of(tagged_x, 100) == {"b/2.md", "c/3.md"}
    assert state.scope_candidates.of(tagged_x, 100) == ScopeCandidates(state.docs.values()).of(tagged_x, 100)
    state.clear()
    assert state.scope_candidates.of(tagged_x, 100) == set()
