"""A hit's snippet: the window of its chunk that holds most of what the query asks for.

The window used to be centred on the first place where the whole query, or else any of its
words, occurred as a substring. A question's first word then chose it: "why do we serialise
exports" showed the first "we" (or the "we" in "answer"), not the sentence about exports.

Now each word of the query that the search looks for is a needle: question words and English
stopwords are left out as the BM25 query leaves them out, a word is matched at a word's start by
the part it shares with its stem ("exports" finds "export", "serialised"), and a Han run by its
bigrams. Of the windows that start a little before a match, the one holding the most distinct
needles wins (the whole query as written counts as all of them), the earliest on a tie.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from ._analysis import HAN_QUESTION_WORDS, MAX_QUERY_TERMS, BM25Analyzer, asking_words, word_parts
from ._han import HAN_CHARS, simplified

_HAN_RUN = re.compile(f"[{HAN_CHARS}]+")  # as the analyzer reads Han
# the question words of several characters and the particles that end a question, which the
# search leaves out (`HAN_QUESTION_WORDS`): `熔断器打开怎么处理` marked 怎么 (and 开怎, 么处) in
# every snippet; the longest first, so 怎么办 goes whole
_HAN_ASKING = re.compile(
    "|".join(sorted((w for w in HAN_QUESTION_WORDS.split() if len(w) > 1 or w in "吗呢"), key=len, reverse=True))
)
# What a Logseq page (or a Dataview note) says about itself, which the hit says already (title,
# aliases, tags) or says nothing in a line of text: page properties, a task's SCHEDULED and
# DEADLINE stamps, `{{query …}}` macros. They opened every snippet of a Logseq page ("title:: X
# alias:: … tags:: …"). Still searched: only the snippet leaves them out.
_PAGE_METADATA = re.compile(
    r"^[ \t]*(?:- )?(?:title|alias|aliases|tags|tag|type|category|date|source|created|updated|public|icon|template)"
    r"::.*$|[ \t]*(?:SCHEDULED|DEADLINE): <[^>\n]*>|\{\{query [^\n]*?\}\}",
    re.MULTILINE | re.IGNORECASE,
)
_HEADING_MARKS = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.MULTILINE)
MIN_PREFIX = 3  # a shorter common part with the stem matches the whole word only
MAX_MATCHES = 400  # of each needle in one chunk: enough to place a window, bounded on a huge one
LEAD = 5  # a window starts width / LEAD characters before the match that anchors it
WORDS_KEPT = 50_000  # words whose needle is kept


class Needle(NamedTuple):
    """A part of a query word as a snippet matches it, lowered."""

    text: str
    word_start: bool  # only where no letter or digit comes before it
    whole_word: bool  # and only where none comes after it either


class Snippets:
    def __init__(self, analyzer: BM25Analyzer, recent_queries: int) -> None:
        """`recent_queries`: how many queries' needles are kept."""
        self._analyzer = analyzer
        self._needles = lru_cache(maxsize=recent_queries)(self._compile)
        self._words: dict[str, Needle | None] = {}  # a word, lowered → its needle (None: a stopword)

    def __call__(self, body: str, query: str, width: int = 200) -> str:
        """A window of `width` characters of `body` (whitespace runs made one space, headings
        without their `#` marks) holding most of the query's needles; the start of the body when
        it holds none."""
        if "#" in body:  # a heading's marks say nothing in one line of text (the heading does)
            body = _HEADING_MARKS.sub("", body)
        if "::" in body or "{{" in body or "SCHEDULED: <" in body or "DEADLINE: <" in body:
            body = _PAGE_METADATA.sub("", body)
        flat = " ".join(body.split())
        if len(flat) <= width:
            return flat
        start = self._best_start(flat, query, width)
        end = start + width
        return ("..." if start > 0 else "") + flat[start:end] + ("..." if end < len(flat) else "")

    def needles(self, query: str) -> list[Needle]:
        """What snippets for `query` are placed by (and a client highlights in them)."""
        return self._needles(query)[1]

    def _best_start(self, flat: str, query: str, width: int) -> int:
        phrase, needles = self._needles(query)
        lowered = flat.lower()
        found: list[tuple[int, int]] = []  # (position, needle; -1: the query as written)
        if phrase and (pos := lowered.find(phrase)) >= 0:
            found.append((pos, -1))
        for i, (part, starts_word, whole) in enumerate(needles):
            pos, n = lowered.find(part), 0
            while pos >= 0 and n < MAX_MATCHES:
                end = pos + len(part)
                if (not starts_word or pos == 0 or not lowered[pos - 1].isalnum()) and (
                    not whole or end == len(lowered) or not lowered[end].isalnum()
                ):
                    found.append((pos, i))
                    n += 1
                pos = lowered.find(part, end)
        if not found:
            return 0
        found.sort()
        # windows in order of their start, which never goes back: each match enters and leaves once
        inside: dict[int, int] = {}  # needle → its matches in the window
        weight = [1] * len(needles) + [max(len(needles), 1)]  # [-1]: the query as written counts as all
        possible = sum(weight[i] for i in {i for _pos, i in found})  # a window holding all ends the search
        best, best_start, held, left, right = 0, 0, 0, 0, 0
        lead, last, count = width // LEAD, len(flat) - width, len(found)
        for anchor, _i in found:
            start = max(0, min(anchor - lead, last))
            while right < count and found[right][0] < start + width:
                i = found[right][1]
                inside[i] = inside.get(i, 0) + 1
                held += weight[i] if inside[i] == 1 else 0
                right += 1
            while found[left][0] < start:
                i = found[left][1]
                inside[i] -= 1
                held -= weight[i] if inside[i] == 0 else 0
                left += 1
            if held > best:
                best, best_start = held, start
                if held == possible:
                    break
        return best_start

    def _compile(self, query: str) -> tuple[str, list[Needle]]:
        """(the whole query lowered, when it has more than one word; the needles)."""
        needles: list[Needle] = []
        seen: set[str] = set()
        for word in asking_words(query[:10_000]):
            if len(needles) >= MAX_QUERY_TERMS:  # as many as the search looks for
                break
            # a Han run as typed and in Simplified, as the search reads it (`回滾` finds `回滚`: its
            # needles were only the Traditional ones, and nothing in the note was marked)
            forms = (form for run in _HAN_RUN.findall(word) for form in dict.fromkeys((run, simplified(run))))
            runs = [piece for form in forms for piece in _HAN_ASKING.split(form) if piece] or _HAN_RUN.findall(word)
            for run in runs:
                for gram in [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]:
                    if gram not in seen:
                        seen.add(gram)
                        needles.append(Needle(gram, False, False))
            typed = _HAN_RUN.sub(" ", word).strip()
            # the word, then its parts, which BM25 also matches (`keepAliveTimeout` found a note by
            # "keeps `self` alive": its snippet showed the chunk's start, nothing marked)
            # (4 letters or more: `use` and `get` of `useEffect` would be marked everywhere)
            for latin in (typed.lower(), *(p.lower() for p in word_parts(typed) if len(p) >= 4)) if typed else ():
                needle = self._word_needle(latin)
                if needle is not None and needle.text not in seen:
                    seen.add(needle.text)
                    needles.append(needle)
        phrase = " ".join(query.lower().split())
        return (phrase if " " in phrase else ""), needles[:MAX_QUERY_TERMS]

    def _word_needle(self, word: str) -> Needle | None:
        """The needle of a (lowered) Latin word: the part it shares with its stem, or the whole
        word where that part is short; None for a stopword, which the search does not look for.
        Kept per word: queries repeat words, and the analyzer is most of a query's cost here."""
        if word in self._words:
            return self._words[word]
        terms = self._analyzer.terms(word, case_parts=False)
        needle = None
        if terms:
            part = _shared_start(word, terms[0])
            part = part if len(part) >= MIN_PREFIX else word
            needle = Needle(part, True, len(part) < MIN_PREFIX)
        if len(self._words) >= WORDS_KEPT:
            self._words.clear()
        self._words[word] = needle
        return needle


def _shared_start(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]
