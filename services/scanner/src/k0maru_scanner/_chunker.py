"""Heading sections → chunks the embedder can take whole.

Token counts are `k0maru_common.estimate_tokens` (every run of up to 8 letters or digits, and
every other non-space character, counts one) and kept under a budget below the model's
256-token window, so a chunk is never truncated by the embedder. Long sections are cut at
sentence ends (`.!?。？！` and newlines) with a one-sentence overlap.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

import xxhash

from k0maru_common import TOKEN_PATTERN, estimate_tokens_of_parts

DEFAULT_BUDGET = 200
# what may come before a heading's marker: up to 3 spaces, or a list item's marker at any depth (a
# fence's may also be indented further: `_markdown._FENCE`). CommonMark renders `- ## Setup` as a
# heading and a numbered step's indented ```yml as code, and Logseq writes every heading and code
# block as a block (`\t- ## Setup`)
LIST_ITEM = r"[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+"
BLOCK_START = rf"(?:{LIST_ITEM}|[ \t]{{0,3}})"
_HEADING_LINE = re.compile(rf"^{BLOCK_START}#{{1,6}}\s")
# a sentence: up to and including its end mark, or the rest of the text (no look-behind: one pass)
_SENTENCE = re.compile(r"[^。？！.!?\n]*[。？！.!?\n]|[^。？！.!?\n]+")


@dataclass
class Section:
    heading_path: list[str]
    start_line: int
    lines: list[str]


@dataclass(frozen=True)
class ChunkSpec:
    index: int
    text: str
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int

    @property
    def hash(self) -> str:
        return xxhash.xxh3_64_hexdigest(self.text.encode())


def chunk_sections(sections: list[Section], budget: int = DEFAULT_BUDGET) -> list[ChunkSpec]:
    chunks: list[ChunkSpec] = []
    merged: list[Section] = []
    for section in sections:  # a heading with no body of its own joins the section after it
        if (
            merged
            and len([ln for ln in merged[-1].lines if ln.strip()]) == 1
            and _HEADING_LINE.match(merged[-1].lines[0])
        ):
            previous = merged.pop()
            section = Section(section.heading_path, previous.start_line, previous.lines + section.lines)
        merged.append(section)
    for section in merged:
        text = "\n".join(section.lines)
        if not text.strip():
            continue
        line_starts = [0]
        for line in section.lines[:-1]:
            line_starts.append(line_starts[-1] + len(line) + 1)
        for start, end in _pieces(text, budget):
            piece = text[start:end].strip()
            if not piece:
                continue
            first = section.start_line + bisect_right(line_starts, start) - 1
            last = section.start_line + bisect_right(line_starts, max(start, end - 1)) - 1
            chunks.append(ChunkSpec(len(chunks), piece, tuple(section.heading_path), first, last))
    return chunks


def _pieces(text: str, budget: int) -> list[tuple[int, int]]:
    """Character ranges of `text`, each within the token budget."""
    if len(text) <= budget:  # a token takes at least one character
        return [(0, len(text))]
    # No token spans a sentence end (the marks are tokens of their own, or whitespace), so the
    # sentences' counts add up to the text's: each character is read by the token regex once.
    sentences = _SENTENCE.findall(text)
    counts = estimate_tokens_of_parts(text, sentences)
    if sum(counts) <= budget:
        return [(0, len(text))]
    spans: list[tuple[int, int, int]] = []  # start, end, tokens
    pos = 0
    for sentence, tokens in zip(sentences, counts, strict=True):
        if tokens <= budget:
            spans.append((pos, pos + len(sentence), tokens))
        else:
            spans.extend(_hard_split(pos, sentence, budget))
        pos += len(sentence)
    pieces: list[tuple[int, int]] = []
    i = 0
    while i < len(spans):
        start, tokens, j = spans[i][0], 0, i
        while j < len(spans) and (j == i or tokens + spans[j][2] <= budget):
            tokens += spans[j][2]
            j += 1
        pieces.append((start, spans[j - 1][1]))
        if j >= len(spans):
            break
        # one sentence of overlap when it fits comfortably
        i = j - 1 if j - 1 > i and spans[j - 1][2] <= budget // 4 else j
    return pieces


def _hard_split(offset: int, sentence: str, budget: int) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    matches = list(TOKEN_PATTERN.finditer(sentence))
    for k in range(0, len(matches), budget // 2):
        group = matches[k : k + budget // 2]
        start = group[0].start()
        end = matches[k + budget // 2].start() if k + budget // 2 < len(matches) else len(sentence)
        out.append((offset + start, offset + end, len(group)))
    return out
