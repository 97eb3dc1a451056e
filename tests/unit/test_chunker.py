"""Chunking: heading sections, token budget, sentence cuts, line ranges, hashes."""

from __future__ import annotations

from k0maru_common import estimate_tokens
from k0maru_scanner._chunker import DEFAULT_BUDGET, chunk_sections
from k0maru_scanner._markdown import parse_note


def chunks_of(text: str):
    return chunk_sections(parse_note("n.md", text).sections)


def test_sections_by_heading_with_paths_and_lines():
    text = "---\ntitle: T\n---\nintro line\n# A\na text\n## B\nb text\n# C\nc text\n"
    chunks = chunks_of(text)
    assert [list(c.heading_path) for c in chunks] == [[], ["A"], ["A", "B"], ["C"]]
    assert [(c.start_line, c.end_line) for c in chunks] == [(4, 4), (5, 6), (7, 8), (9, 10)]
    assert len({c.hash for c in chunks}) == 4


def test_heading_without_body_joins_next_section():
    chunks = chunks_of("# Title\n\n## Part\ncontent here\n")
    assert len(chunks) == 1
    assert chunks[0].text.startswith("# Title")
    assert "content here" in chunks[0].text


def test_long_section_split_under_budget_at_sentence_ends():
    sentence = "这是一个很长的句子，用来测试中文的切分。" * 3
    text = "# Long\n" + "\n".join([sentence] * 40) + "\n" + " ".join(["word"] * 2000) + "\n"
    chunks = chunks_of(text)
    assert len(chunks) > 3
    assert all(estimate_tokens(c.text) <= DEFAULT_BUDGET + 5 for c in chunks)
    assert chunks[0].text.endswith("。")
    assert all(c.heading_path == ("Long",) for c in chunks)


def test_editing_one_paragraph_changes_one_chunk_hash():
    base = "\n".join(f"# S{i}\nparagraph {i} text." for i in range(20))
    edited = base.replace("paragraph 7 text.", "paragraph 7 text, edited.")
    before = [c.hash for c in chunks_of(base)]
    after = [c.hash for c in chunks_of(edited)]
    assert len(before) == len(after) == 20
    assert sum(a != b for a, b in zip(before, after, strict=True)) == 1


def test_sentence_counts_equal_the_regex_count_per_sentence():
    """The chunker counts sentences through `estimate_tokens_of_parts` (C string methods on the
    whole text); each count must equal `estimate_tokens` of the sentence alone."""
    import random

    from k0maru_common import estimate_tokens_of_parts
    from k0maru_scanner._chunker import _SENTENCE

    rng = random.Random(7)
    alphabet = [chr(i) for i in range(128)] + list("aaaaaaaaaaZ111111.  \n") + list("é٣٤ ≥μ中文。！\u2003\udcff")
    texts = ["", "x", "abcdefghijklmnopq 1234567890123 ..", "中文的句子。还有一句！", "p ≥ 0.05 and μ=٣٤٥"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400))) for _ in range(3000)]
    for text in texts:
        sentences = _SENTENCE.findall(text)
        assert "".join(sentences) == text
        assert estimate_tokens_of_parts(text, sentences) == [estimate_tokens(s) for s in sentences], repr(text)
