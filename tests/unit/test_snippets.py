"""The snippet of a hit: the window of its chunk that holds most of what the query asks for."""

from __future__ import annotations

import pytest

from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._snippets import Snippets


@pytest.fixture(scope="module")
def snippet() -> Snippets:
    return Snippets(BM25Analyzer(), 512)


def test_the_window_is_on_characters_not_bytes(snippet: Snippets) -> None:
    body = "前文" * 200 + " the SQLITE_BUSY error " + "后文" * 200
    text = snippet(body, "sqlite_busy")
    assert "SQLITE_BUSY" in text and text.startswith("...") and text.endswith("...")
    assert snippet("short body\nline", "x") == "short body line"


def test_a_question_word_does_not_choose_the_window(snippet: Snippets) -> None:
    body = (
        "We met on Monday and we talked about the answer for a while. " * 6
        + "Exports are serialised with an flock, because two exports wrote the same file. "
        + "Filler text about other matters goes on here. " * 8
    )
    text = snippet(body, "why do we serialise exports")
    assert "serialised with an flock" in text
    assert "We met" not in text


def test_the_window_with_most_of_the_query_wins_over_the_first_match(snippet: Snippets) -> None:
    body = (
        "The cache is mentioned once here. "
        + "Unrelated words fill this part of the note for a long stretch. " * 5
        + "To invalidate the cache on deploy, bump the cache key in the deploy script. "
        + "More unrelated words follow until the end of the chunk. " * 5
    )
    text = snippet(body, "invalidate cache deploy")
    assert "invalidate the cache on deploy" in text


def test_a_word_is_found_by_its_stem_at_a_word_start_only(snippet: Snippets) -> None:
    body = "Padding words before the point. " * 10 + "The studies were exported twice. " + "Tail. " * 40
    assert "studies were exported" in snippet(body, "study export")
    # "port" is inside "exported" and "report" but starts no word here: the body's start is shown
    assert snippet(body, "port").startswith("Padding words")


def test_han_queries_are_found_by_their_bigrams(snippet: Snippets) -> None:
    body = "无关的内容。" * 40 + "向量检索的召回率很高。" + "其他的内容。" * 40
    assert "向量检索" in snippet(body, "向量检索召回")


def test_a_chinese_question_word_is_not_marked_nor_chooses_the_window(snippet: Snippets) -> None:
    """`熔断器打开怎么处理` marked 怎么 (and 开怎, 么处) in every snippet, and a line that said 怎么办
    drew the window; the search leaves Chinese question words out, and so do the needles."""
    body = "怎么办？怎么说？" * 30 + "熔断器打开后，先处理下游超时。" + "其他的内容。" * 40
    needles = {n.text for n in snippet.needles("熔断器打开怎么处理")}
    assert "怎么" not in needles and "开怎" not in needles and {"熔断", "打开", "处理"} <= needles
    assert "熔断器打开" in snippet(body, "熔断器打开怎么处理")
    assert {n.text for n in snippet.needles("怎么办")} == {"怎么", "么办"}  # nothing else asked: still marked


def test_a_traditional_query_finds_its_window_in_a_simplified_note_and_the_reverse(snippet: Snippets) -> None:
    """The search reads Traditional as Simplified (`回滾` finds `回滚`), the snippet did not: its
    needles were the Traditional bigrams only, the window stayed at the start, nothing was marked."""
    body = "无关的内容。" * 40 + "上线失败时先回滚部署。" + "其他的内容。" * 40
    assert "回滚部署" in snippet(body, "回滾")
    assert {n.text for n in snippet.needles("回滾")} >= {"回滾", "回滚"}
    traditional = "無關的內容。" * 40 + "上線失敗時先回滾部署。" + "其他的內容。" * 40
    assert "回滾部署" in snippet(traditional, "回滾")


def test_an_identifier_is_found_by_the_parts_bm25_matched_it_by(snippet: Snippets) -> None:
    """BM25 finds `keepAliveTimeout` by its parts too; a note that says "keeps the socket alive"
    was a hit whose snippet showed its chunk's start, and nothing was marked."""
    body = "Padding words before the point. " * 12 + "The pool keeps the socket alive for a while. " + "Tail. " * 40
    assert "keeps the socket alive" in snippet(body, "keepAliveTimeout")
    assert {n.text for n in snippet.needles("keepAliveTimeout")} >= {"keepalivetimeout", "keep", "aliv", "timeout"}
    assert "use" not in {n.text for n in snippet.needles("useEffect")}  # too short to mark everywhere


def test_a_query_of_stopwords_only_shows_the_start(snippet: Snippets) -> None:
    body = "Lead sentence of the note. " + "Some more text in the middle of it. " * 20 + "and the end"
    assert snippet(body, "the and").startswith("Lead sentence")


def test_a_query_of_thousands_of_words_is_matched_by_as_many_as_the_search_looks_for(snippet: Snippets) -> None:
    words = [f"w{i:04d}x" for i in range(1500)]
    assert len(snippet.needles(" ".join(words))) == 64
    assert len(snippet.needles("".join(chr(0x4E00 + i) for i in range(3000)))) == 64
    body = "Lead. " + "filler text " * 100 + "w0003x is here. " + "tail " * 100
    assert "w0003x" in snippet(body, " ".join(words))


def test_headings_lose_their_marks_and_tags_keep_theirs(snippet: Snippets) -> None:
    body = "# SQLite busy handling\n\nSet the timeout.\n\n## Fix #sqlite\n  ### Deep\n#tag at a line start"
    assert snippet(body, "busy") == "SQLite busy handling Set the timeout. Fix #sqlite Deep #tag at a line start"


def test_a_logseq_pages_properties_and_task_stamps_leave_room_for_its_text(snippet: Snippets) -> None:
    """Every snippet of a Logseq page opened with "title:: … alias:: … tags:: …"; the hit says those."""
    body = (
        "title:: PostgreSQL Connection Pooling\nalias:: pgbouncer, pg pool\ntags:: database, [[infra notes]]\n"
        "type:: concept\n- PgBouncer sits in front of Postgres\n- TODO finish the backfill\n"
        "  SCHEDULED: <2026-12-10 Thu>\n- {{query (page-tags [[infra notes]])}}\n- owner:: [[Dana]]\n"
    )
    shown = snippet(body, "pgbouncer")
    assert shown.startswith("- PgBouncer sits in front of Postgres - TODO finish the backfill")
    assert "::" not in shown.replace("owner:: [[Dana]]", "") and "SCHEDULED" not in shown and "{{" not in shown
