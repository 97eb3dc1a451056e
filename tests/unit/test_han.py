"""Han segmentation with jieba's dictionary loaded per character: the same words as jieba's own."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import jieba

from k0maru_retriever import _han
from k0maru_retriever._han import HanSegmenter, simplified

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "vault"
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
EXTRA = [
    "借用检查器报错的处理方法",
    "中华人民共和国成立于一九四九年",
    "小明硕士毕业于中国科学院计算所后在日本京都大学深造",  # jieba's own README example (HMM words)
    "他来到了网易杭研大厦",  # 杭研: a word only the HMM fallback finds
    "㐀㐁䶵豈更",  # extension A and compatibility ideographs: not in the dictionary
    "的",
]


def reference(run: str) -> list[str]:
    """jieba's own words of the run, read in Simplified characters."""
    jieba.setLogLevel(logging.WARNING)
    return [w for w in jieba.lcut_for_search(simplified(run)) if w.strip()]


def han_runs() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.rglob("*.md"))] + EXTRA
    return [run for text in texts for run in HAN.findall(text)]


def test_same_words_as_jieba_and_a_reused_cache(tmp_path: Path) -> None:
    runs = han_runs()
    assert len(runs) > 50  # the example vault's Chinese notes are there
    first = HanSegmenter(tmp_path / "cache")
    assert [first.segment(r) for r in runs] == [reference(r) for r in runs]
    (cache,) = (tmp_path / "cache").iterdir()
    second = HanSegmenter(tmp_path / "cache")  # reads the cache the first one wrote
    assert [second.segment(r) for r in runs] == [reference(r) for r in runs]
    assert list((tmp_path / "cache").iterdir()) == [cache]


def test_an_unusable_cache_only_costs_a_rebuild(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache folder would go")
    assert HanSegmenter(blocked / "cache").segment("借用检查器报错") == reference("借用检查器报错")
    corrupt = tmp_path / "corrupt"
    HanSegmenter(corrupt).segment("中文")
    (cache,) = corrupt.iterdir()
    cache.write_bytes(b"\x00 not marshal")
    assert HanSegmenter(corrupt).segment("中文笔记") == reference("中文笔记")


def test_traditional_and_simplified_text_are_read_alike() -> None:
    """A team writes both scripts: `資料庫連線失敗` and `数据库连接失败` are the same words, so a
    query in one finds notes in the other (zh_cmrc2018 with its queries in Taiwan's Traditional:
    nDCG@10 0.725 before, 0.988 after; its corpus so: 0.736 before, 0.988 after)."""
    from k0maru_retriever._analysis import BM25Analyzer

    analyzer = BM25Analyzer()
    pairs = [
        ("資料庫連線失敗時，請檢查網路設定", "数据库连接失败时，请检查网络设置"),
        ("《戰國無雙3》是由哪兩個公司合作開發的？", "《战国无双3》是由哪两个公司合作开发的？"),
        ("後來發現憑證過期了", "后来发现凭证过期了"),
    ]
    for traditional, simple in pairs:
        assert analyzer.terms(traditional) == analyzer.terms(simple)
    # Taiwan's words for software things are the mainland's: the notes a query should find
    taiwan = "資料庫連線失敗時，檢查伺服器的網路設定與執行緒；程式設計師寫的程式碼"
    mainland = "数据库连接失败时，检查服务器的网络设置与线程；程序员写的代码"
    assert analyzer.terms(taiwan) == analyzer.terms(mainland)
    assert simplified("借用检查器报错") == "借用检查器报错"  # Simplified text is read as written
    assert simplified("程序员写程序") == "程序员写程序"  # not Taiwan's `程序` (a process): no Traditional character


def test_without_the_character_table_text_is_read_as_written(monkeypatch, caplog) -> None:
    monkeypatch.setattr(_han, "_SIMPLIFIED", None)
    monkeypatch.setattr(_han.importlib.util, "find_spec", lambda name: None)
    with caplog.at_level(logging.WARNING):
        assert simplified("資料庫") == "資料庫"
    assert "opencc-python-reimplemented is not installed" in caplog.text


def test_a_long_run_is_read_in_pieces(tmp_path: Path) -> None:
    """jieba's HMM copies its path at each character no dictionary word covers: a chat's run of
    100,000 `啊` would have taken many minutes (time squared). Pieces of SEGMENT_CHARS are read
    alone: the same words as jieba's own for each piece, and every character still there."""
    segmenter = HanSegmenter(tmp_path / "cache")

    def pieces(run: str) -> list[str]:
        return [run[i : i + _han.SEGMENT_CHARS] for i in range(0, len(run), _han.SEGMENT_CHARS)]

    for run in ("啊" * 100_000, "中" * 100_000, "他来到了网易杭研大厦" * 60):
        assert segmenter.segment(run) == [w for piece in pieces(run) for w in reference(piece)]
