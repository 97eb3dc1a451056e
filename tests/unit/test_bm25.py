"""Real tantivy BM25: identifiers, Chinese, scope, and queries that never raise."""

from __future__ import annotations

from pathlib import Path

import pytest
import tantivy

from k0maru.v1 import common_pb2
from k0maru_retriever._analysis import BM25Analyzer
from k0maru_retriever._bm25 import Bm25Index, ChunkRow, Scope
from k0maru_retriever._index import note_names

ROWS = [
    ChunkRow(
        "db.md#0",
        "db.md",
        "Root",
        ["sqlite"],
        "SQLite busy\nSQLITE_BUSY means the database is locked by another writer.",
    ),
    ChunkRow(
        "rust/e.md#0",
        "rust/e.md",
        "rust",
        ["rust"],
        "Borrow errors\nerror[E0502]: cannot borrow as mutable; Option<&mut T> helps",
    ),
    ChunkRow("zh/n.md#0", "zh/n.md", "zh", ["中文"], "借用检查器报错的处理方法"),
    ChunkRow("misc.md#0", "misc.md", "Root", [], "The sqlite documentation is busy with many pages about locks."),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Bm25Index:
    idx = Bm25Index(tmp_path_factory.mktemp("bm25"), BM25Analyzer())
    for row in ROWS:
        idx.add(row)
    idx.commit()
    return idx


def paths(hits: list[tuple[str, float]]) -> list[str]:
    return [cid.split("#")[0] for cid, _ in hits]


def test_exact_identifiers_rank_first(index: Bm25Index):
    assert paths(index.search("SQLITE_BUSY", 5, Scope()))[0] == "db.md"
    assert paths(index.search("E0502", 5, Scope())) == ["rust/e.md"]
    assert paths(index.search("Option<&mut T>", 5, Scope()))[0] == "rust/e.md"


def test_chinese_word_inside_longer_run(index: Bm25Index):
    assert paths(index.search("检查器", 5, Scope())) == ["zh/n.md"]


def test_korean_and_japanese_words_are_found_inside_their_runs(tmp_path: Path):
    """Korean writes a word and its particle as one, Japanese runs kana words together: cut at
    spaces, `서버` (server) matched no note that says `서버를` or `서버가`, and `サーバー` none
    that says `サーバーに`."""
    idx = Bm25Index(tmp_path / "i", BM25Analyzer())
    notes = {
        "ko/restart.md": "서버를 재시작하면 연결 풀이 비워진다",  # restarting the server empties the pool
        "ko/memory.md": "메모리가 부족하면 캐시를 줄인다",  # short of memory: shrink the cache
        "ja/connect.md": "サーバーに接続できないときはポートを確認する",  # can't reach the server: check the port
        "ja/cache.md": "キャッシュのサイズを小さくする",  # make the cache smaller
    }
    for path, text in notes.items():
        idx.add(ChunkRow(f"{path}#0", path, path.split("/")[0], [], text))
    idx.commit()
    assert paths(idx.search("서버", 5, Scope())) == ["ko/restart.md"]
    assert paths(idx.search("서버 재시작", 5, Scope())) == ["ko/restart.md"]
    assert paths(idx.search("캐시", 5, Scope())) == ["ko/memory.md"]
    assert paths(idx.search("サーバー", 5, Scope())) == ["ja/connect.md"]
    assert paths(idx.search("ポート", 5, Scope())) == ["ja/connect.md"]
    assert paths(idx.search("ｷｬｯｼｭ", 5, Scope())) == ["ja/cache.md"]  # halfwidth katakana as typed on some keyboards


def test_words_that_change_case_inside_are_found_by_their_parts(tmp_path: Path):
    """Code in notes names things in camelCase: `server side props` finds `getServerSideProps`,
    and typing the name itself still ranks it above notes that only share its parts."""
    idx = Bm25Index(tmp_path / "i", BM25Analyzer())
    notes = {
        "next.md": "Data fetching: export getServerSideProps from the page.",
        "ssr.md": "Server rendering: the server renders each page's props on its side.",
        "http.md": "An XMLHttpRequest answers requests.",
        "sqlite.md": "SQLite keeps one file.",
        "rna.md": "The mRNA level fell.",
        "dna.md": "RNA and DNA.",
    }
    for path, text in notes.items():
        idx.add(ChunkRow(f"{path}#0", path, "Root", [], text))
    idx.commit()
    assert "next.md" in paths(idx.search("server side props", 5, Scope()))
    assert paths(idx.search("getServerSideProps", 5, Scope()))[0] == "next.md"
    assert paths(idx.search("http request", 5, Scope()))[0] == "http.md"
    assert paths(idx.search("lite", 5, Scope())) == []  # `SQLite` is not `SQ` + `Lite`
    assert paths(idx.search("RNA", 5, Scope())) == ["dna.md"]  # `mRNA` is a word, not `m` + `RNA`


@pytest.mark.parametrize(
    "query",
    ['title:"x', "a AND OR NOT (", "*?~^:[]{}\\", "", "   ", "x" * 10_000, "词" * 5000, "getX" * 5000, "서버를" * 4000],
)
def test_bad_queries_never_raise(index: Bm25Index, query: str):
    assert isinstance(index.search(query, 10, Scope()), list)


def test_scope_by_diary_prefix_and_tag(index: Bm25Index):
    assert paths(index.search("sqlite borrow 借用", 10, Scope(diaries=("rust",)))) == ["rust/e.md"]
    assert paths(index.search("sqlite borrow 借用", 10, Scope(path_prefixes=("zh/",)))) == ["zh/n.md"]
    assert paths(index.search("sqlite", 10, Scope(tags=("sqlite",)))) == ["db.md"]
    assert set(paths(index.search("sqlite", 10, Scope(path_prefixes=("d",))))) == {"db.md"}


def test_delete_leaves_nothing(tmp_path: Path):
    idx = Bm25Index(tmp_path / "i", BM25Analyzer())
    idx.add(ROWS[0])
    idx.commit()
    idx.delete_path("db.md")
    idx.commit()
    assert idx.search("sqlite", 10, Scope()) == [] and idx.count() == 0


def test_chunks_tied_at_the_cut_are_the_same_whatever_order_they_were_indexed_in(tmp_path: Path):
    """Notes written from one template score alike: which of them make the first `limit` must not
    depend on the order they were indexed in (a crash-recovered index against a fresh one)."""
    rows = [ChunkRow(f"bulk/n{i}.md#0", f"bulk/n{i}.md", "bulk", [], f"bulk note {i} about topics") for i in range(300)]
    rows.append(ChunkRow("best.md#0", "best.md", "Root", [], "bulk note about a bulk of bulk notes"))
    first, second = Bm25Index(tmp_path / "a", BM25Analyzer()), Bm25Index(tmp_path / "b", BM25Analyzer())
    for row in rows:
        first.add(row)
    first.commit()
    for start in (200, 0, 100):  # in another order, over three commits (three segments)
        for row in reversed(rows[start : start + 100] + (rows[300:] if start == 0 else [])):
            second.add(row)
        second.commit()
    for limit in (1, 10, 120):
        found = first.search("bulk note", limit, Scope())
        assert found == second.search("bulk note", limit, Scope())
        assert found[0][0] == "best.md#0" and len(found) == limit


MIXED = [
    "SQLite busy\nSQLITE_BUSY means the database is locked; see snake_case_name and E0502.",
    "借用检查器报错时 use std::mem::take 或 Option<&mut T>，再看 __init__.py 与 v1.2.3",
    "abc检查器def_x 中文 running runs RUNNING the The",
    "Ωmega é_x ñ-y naïve café 3.14.15",
    "서버를 재시작했다 db_pool 설정이 이 문제를 고쳤다; サーバーに接続できない ｶﾞｲﾄﾞ",
    "getServerSideProps calls parseHTMLForIDs; mRNA and siRNA in the XMLHttpRequest",
]


def test_index_side_analysis_scores_as_the_python_terms(tmp_path: Path):
    """tantivy analyses the Latin text itself and the rest comes pre-tokenized: every term must
    score exactly as in an index of `terms()` (the query side's analysis) joined by spaces, so
    term frequencies and document lengths are the same."""
    analyzer = BM25Analyzer()
    idx = Bm25Index(tmp_path / "i", analyzer)
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("text", tokenizer_name="whitespace")
    schema = builder.build()
    reference = tantivy.Index(schema)
    writer = reference.writer(heap_size=15_000_000, num_threads=1)
    for i, text in enumerate(MIXED):
        idx.add(ChunkRow(f"{i}.md#0", f"{i}.md", "Root", [], text))
        writer.add_document(tantivy.Document(id=f"{i}.md#0", text=" ".join(analyzer.terms(text))))
    idx.commit()
    writer.commit()
    reference.reload()
    searcher = reference.searcher()
    terms = {t for text in MIXED for t in analyzer.terms(text)}
    assert {
        "sqlite_busy",
        "e0502",
        "检查",
        "v1.2.3",
        "run",
        "서버",
        "이",
        "サー",
        "ガイ",
        "getserversideprop",
        "side",
        "html",
    } <= terms
    for term in terms:  # one term query each, on both indexes
        scored = []
        for index_searcher, index_schema in ((searcher, schema), (idx._searcher, idx._schema)):
            hits = index_searcher.search(tantivy.Query.term_query(index_schema, "text", term), 10).hits
            scored.append(sorted((str(index_searcher.doc(a).get_first("id")), round(s, 4)) for s, a in hits))
        assert scored[0] == scored[1] and scored[0], term


def test_older_schema_is_rebuilt_with_a_new_generation(tmp_path: Path):
    first = Bm25Index(tmp_path / "i", BM25Analyzer())
    first.add(ROWS[0])
    first.close()
    generation = first.generation
    del first
    (tmp_path / "i" / "k0-schema-version").write_text("2")
    again = Bm25Index(tmp_path / "i", BM25Analyzer())
    assert again.count() == 0 and again.generation != generation


def _named(tmp_path: Path) -> Bm25Index:
    """A short note named for a topic beside long notes that use its words more often."""
    idx = Bm25Index(tmp_path / "named", BM25Analyzer())
    body = "busy sqlite handling " * 6
    idx.add_note("long-a.md", "Root", [], [("long-a.md#0", f"Export job log\n{body} export rows")], "Export job log")
    idx.add_note("long-b.md", "Root", [], [("long-b.md#0", f"Ledger cache\n{body} ledger cache")], "Ledger cache")
    idx.add_note(
        "named.md",
        "Root",
        [],
        [("named.md#0", "SQLite busy handling\nSet a busy timeout; keep write transactions short.")],
        "SQLite busy handling\nsqlite-busy",
    )
    idx.add_note(
        "paper.md",
        "Root",
        [],
        [("paper.md#0", "Osteoporosis risk factors in elderly cohorts\nA cohort study of risk in the elderly.")],
        "Osteoporosis risk factors in elderly cohorts",
    )
    idx.add_note("zh.md", "Root", [], [("zh.md#0", "借用检查器\n所有权规则")], "借用检查器")
    for i in range(6):  # more documents, so each name term has a real idf
        idx.add_note(f"other{i}.md", "Root", [], [(f"other{i}.md#0", f"unrelated note {i} about risk")], f"Other {i}")
    idx.commit()
    return idx


def test_a_query_that_names_a_note_finds_it_first(tmp_path: Path):
    idx = _named(tmp_path)
    plain = [c for c, _ in idx.search("sqlite busy handling", 10, Scope())]
    named = [c for c, _ in idx.search("sqlite busy handling", 10, Scope(), name_match=1.0)]
    assert plain[0] != "named.md#0"  # the long notes repeat the words
    assert named[0] == "named.md#0"
    assert set(plain) == set(named)  # the same candidates, reordered
    assert idx.search("借用检查器", 3, Scope(), name_match=1.0)[0][0] == "zh.md#0"  # Han names too


def test_a_name_in_camel_case_is_named_whole_by_a_query_in_lower_case(tmp_path: Path):
    """`GitHub` in a title counts as `github`, not also as `git` + `hub`: a query typed in lower
    case ("publish to github pages") names all of "Publish to GitHub Pages" (foam's known items
    lost 0.025 nDCG@10 when the parts counted in names)."""
    idx = Bm25Index(tmp_path / "i", BM25Analyzer())
    assert idx.name_coverage(idx.query_terms("publish to github pages"), "Publish to GitHub Pages") == 1.0
    assert idx.name_coverage(idx.query_terms("GitHub pages"), "GitHub Pages") == 1.0


def test_a_shared_word_or_two_hardly_moves_a_long_title(tmp_path: Path):
    idx = _named(tmp_path)
    plain = dict(idx.search("risk in the elderly", 10, Scope()))
    named = dict(idx.search("risk in the elderly", 10, Scope(), name_match=1.0))
    best = max(plain.values())
    # "risk" and "elderly" cover about a third of the title's weight: a bonus of under 5 % of the best score
    assert 0 < named["paper.md#0"] - plain["paper.md#0"] < 0.05 * best


def test_a_short_name_among_rarer_words_does_not_outrank_the_note_that_holds_them(tmp_path: Path):
    """An agent asks "why serialise exports flock" about the decision it saved; the vault has notes
    titled "Export". Each such title is all in the query, but it holds only its commonest word:
    the query names none of them. On the dendron vault the four "Export" notes ranked above the
    decision in BM25 alone (they were each given the query's best score again)."""
    idx = Bm25Index(tmp_path / "i", BM25Analyzer())
    for i in range(4):
        idx.add_note(
            f"pod{i}.export.md",
            "Root",
            [],
            [(f"pod{i}.export.md#0", f"Export\nExport notes of pod {i}; an export writes files to the destination.")],
            "Export",
        )
    idx.add_note(
        "decisions.export-lock.md",
        "Root",
        [],
        [("decisions.export-lock.md#0", "Export lock decision\nSerialise exports with an flock; the second waits.")],
        "Export lock decision",
    )
    for i in range(20):  # a vault around them, so that "export" is common and "flock" rare
        idx.add_note(
            f"o{i}.md", "Root", [], [(f"o{i}.md#0", f"Note {i}\nAbout export {i} and writing files")], f"N {i}"
        )
    idx.commit()
    hits = idx.search("why serialise exports flock", 5, Scope(), name_match=1.0, ranks_alone=True)
    assert hits[0][0] == "decisions.export-lock.md#0"
    # the name is still counted, a little: an "Export" note keeps a bonus, well below the best score
    plain = dict(idx.search("why serialise exports flock", 30, Scope()))
    named = dict(idx.search("why serialise exports flock", 30, Scope(), name_match=1.0, ranks_alone=True))
    assert 0 < named["pod0.export.md#0"] - plain["pod0.export.md#0"] < 0.6 * max(plain.values())
    # while a query that is the name alone still names it fully: the best score again
    plain = dict(idx.search("exports", 30, Scope()))
    named = dict(idx.search("exports", 30, Scope(), name_match=1.0, ranks_alone=True))
    assert named["pod0.export.md#0"] - plain["pod0.export.md#0"] == pytest.approx(max(plain.values()))


def test_in_hybrid_search_a_name_keeps_its_bonus_unless_it_is_a_sliver_of_the_query(tmp_path: Path):
    """Beside a vector channel, which weighs the query's other words, a name that holds half the
    query or more keeps its whole bonus; a name that is only the vault's commonest word does not. On the Foam vault "What is Foam?" is all of "foam", which nearly every query
    says: it took the top of BM25 from the code of conduct for a sentence of the code of conduct."""
    idx = Bm25Index(tmp_path / "i", BM25Analyzer())
    idx.add_note(
        "index.md",
        "Root",
        [],
        [("index.md#0", "What is Foam?\nFoam is a note taking tool for VS Code.")],
        "What is Foam?",
    )
    conduct = "Code of conduct\nFoam is for everyone: as a foam user you support everyone's quest for knowledge."
    idx.add_note("dev/code-of-conduct.md", "dev", [], [("dev/code-of-conduct.md#0", conduct)], "Code of conduct")
    extensions = "Recommended extensions\nExtensions that pair well with Foam in VS Code: spell check, paste image."
    idx.add_note(
        "recommended-extensions.md", "Root", [], [("recommended-extensions.md#0", extensions)], "Recommended Extensions"
    )
    for i in range(20):  # a vault around them, where "foam" is common
        idx.add_note(f"o{i}.md", "Root", [], [(f"o{i}.md#0", f"Note {i}\nFoam feature {i} and its settings")], f"N {i}")
    idx.commit()
    query = "Foam is for everyone, you support everyone's quest for knowledge"
    assert idx.search(query, 5, Scope(), name_match=1.0)[0][0] == "dev/code-of-conduct.md#0"
    plain = dict(idx.search(query, 30, Scope()))
    hybrid = dict(idx.search(query, 30, Scope(), name_match=1.0))
    assert 0 < hybrid["index.md#0"] - plain["index.md#0"] < 0.6 * max(plain.values())
    # a name that holds half the query or more: its whole bonus in hybrid, part of it alone
    query = "recommended extensions for foam"
    plain = dict(idx.search(query, 30, Scope()))
    hybrid = dict(idx.search(query, 30, Scope(), name_match=1.0))
    alone = dict(idx.search(query, 30, Scope(), name_match=1.0, ranks_alone=True))
    bonus = hybrid["recommended-extensions.md#0"] - plain["recommended-extensions.md#0"]
    assert bonus == pytest.approx(max(plain.values()))
    assert alone["recommended-extensions.md#0"] - plain["recommended-extensions.md#0"] < bonus


def test_a_note_is_also_named_by_its_file_name():
    """Obsidian and Foam link by file name, so people know a note by it; a number is no name."""

    def names(path: str, title: str, *aliases: str) -> list[str]:
        return note_names(common_pb2.Document(path=path, title=title, aliases=list(aliases))).splitlines()

    assert names("daily/2026-11-30 standup.md", "Standup with the infra team") == [
        "Standup with the infra team",
        "2026-11-30 standup",
    ]
    assert names("Publish to GitHub.md", "publish to github") == ["publish to github"]  # the same name
    assert names("rust.md", "Rust borrow checker", "rust") == ["Rust borrow checker", "rust"]  # an alias already
    assert names("4983.md", "Osteoporosis in the elderly") == ["Osteoporosis in the elderly"]
    # Logseq's namespace page `Project/Beta`: its page name, not the escaped file name
    assert names("pages/Project___Beta.md", "Beta kickoff") == ["Beta kickoff", "Project/Beta"]
    assert names("pages/Project%2FBeta.md", "Project/Beta") == ["Project/Beta"]


def test_a_question_in_plain_words_is_searched_by_what_it_asks_about(tmp_path: Path):
    """ "When did you go to the support group?": the turn that only shares "when did you" with it
    ranked above the one about the support group (LoCoMo's questions about conversations). The
    question's own words are left out of the query; a query of nothing else still searches them,
    and a note's names leave them out too, so a title that asks is still named whole."""
    idx = Bm25Index(tmp_path / "i", BM25Analyzer())
    turns = {
        "t1.md": "Melanie: When did you get back? Did you? How was it?",
        "t2.md": "Caroline: Yesterday I finally joined the support group downtown after work, and the people "
        "there shared stories about coming out, family and friends, which moved me more than I expected.",
        "who.md": "Who are you\nA poem.",
    }
    for i in range(20):
        turns[f"o{i}.md"] = f"Speaker {i}: talk about item {i} and the plans for the summer trip, when we did it {i}"
    for path, text in turns.items():
        idx.add_note(path, "Root", [], [(f"{path}#0", text)], text.splitlines()[0])
    idx.commit()
    assert [c for c, _ in idx.search("When did you go to the support group?", 3, Scope())] == ["t2.md#0"]
    assert idx.search("who are you?", 1, Scope())[0][0] == "who.md#0"
    assert idx.name_coverage(idx.query_terms("why we use sqlite"), "Why we use SQLite") == 1.0
    assert idx.name_coverage(idx.query_terms("why sqlite"), "Why we use SQLite") < 1.0


def _among_filler(tmp_path: Path, notes: dict[str, str], filler: str) -> Bm25Index:
    """An index of `notes` and 20 notes of `filler` (formatted with i), each note one chunk named by its first line."""
    idx = Bm25Index(tmp_path / "i", BM25Analyzer())
    for path, text in (notes | {f"o{i}.md": filler.format(i=i) for i in range(20)}).items():
        idx.add_note(path, "Root", [], [(f"{path}#0", text)], text.splitlines()[0])
    idx.commit()
    return idx


def test_a_chinese_question_is_searched_by_what_it_asks_about(tmp_path: Path):
    """ "磁盘为什么被写满了" put a 4-line FAQ that says 为什么 and 怎么办 before the postmortem about
    the full disk: Chinese question words were searched as terms, rare and so weighty. They are
    left out as the English ones are (a Traditional question's too); a query of nothing else still
    searches them."""
    notes = {
        "faq.md": "新人常见问题\n为什么连不上VPN？怎么办：重启客户端。显示器怎么申请？",
        "postmortem.md": "2024-08-15 磁盘写满\n日志轮转失效，磁盘被写满，服务停止写入。清理后恢复。",
        "image.md": "Docker镜像瘦身\n镜像太大时用多阶段构建，基础镜像换成 alpine。",
    }
    idx = _among_filler(tmp_path, notes, "会议纪要 {i}\n讨论了第 {i} 项工作的排期和人员安排，下周继续。")
    assert idx.search("磁盘为什么被写满了", 1, Scope())[0][0] == "postmortem.md#0"
    assert idx.search("為什麼磁碟寫滿了", 1, Scope())[0][0] == "postmortem.md#0"
    assert idx.search("镜像太大怎么办", 1, Scope())[0][0] == "image.md#0"
    assert idx.search("为什么", 1, Scope())[0][0] == "faq.md#0"  # nothing else asked: still searched


def test_a_chinese_date_finds_the_note_named_by_that_day(tmp_path: Path):
    """ "2024年3月18日 故障": its 3 never matched the 03 of `2024-03-18 支付服务宕机`, and 2024, 年 and
    月 put another month's meeting note first."""
    notes = {
        "复盘/2024-03-18 支付服务宕机.md": "2024-03-18 支付服务宕机\n支付服务因为连接池耗尽宕机 40 分钟。",
        "会议/2024年6月 季度复盘会.md": "2024年6月 季度复盘会\n2024年6月的会议：回顾了季度目标和故障。",
    }
    idx = _among_filler(tmp_path, notes, "笔记 {i}\n关于第 {i} 个话题的记录。")
    assert idx.search("2024年3月18日 故障", 1, Scope())[0][0] == "复盘/2024-03-18 支付服务宕机.md#0"
    assert idx.search("2024年6月 会议", 1, Scope())[0][0] == "会议/2024年6月 季度复盘会.md#0"
