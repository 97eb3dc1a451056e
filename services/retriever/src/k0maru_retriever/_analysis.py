"""Text analysis for BM25, shared by indexing and querying so both see the same terms.

English and other Latin text: without its diacritics (`café`, `Crème` and a decomposed `é`
are `cafe`, `Creme`: people type words without their accents; done in Python on non-ASCII text
only, where tantivy's ASCII folding filter cost every note 7 % more BM25 analysis), then
tantivy's simple tokenizer, lowercased, English stopwords removed, Snowball-stemmed. Han text:
jieba's search-mode segmentation (words and their sub-words), so `检查器` matches inside
`借用检查器报错`. Hangul and kana: overlapping character bigrams (a lone character stays a
unigram), as Lucene's CJK analyzer does: Korean writes a word and its particle as one (`서버를`,
the server + object particle) and Japanese runs kana words together (`サーバーに`), so cutting at
spaces would leave the query `서버` or `サーバー` matching nothing; their bigrams `서버`, `サー`,
`ーバ`, `バー` match. Identifiers such as `SQLITE_BUSY`, `E0502` or `snake_case_name` are also kept
whole, so an exact symbol outranks its parts; words in camelCase are split into their parts too
(`getServerSideProps` also counts as `get server side prop`), where two lower-case letters meet
a capital, so `mRNA`, `IgG` and `SQLite` stay words.

Indexing runs the Latin analysis inside tantivy (the analyzer is registered on the index as
`LATIN_TOKENIZER`, so a chunk's text never comes back to Python as a list of terms); only the
identifiers, the jieba words and the bigrams, a small share of the terms, are handed over
pre-tokenized. `terms()` gives the same multiset of terms in Python (queries, tests).
"""

from __future__ import annotations

import re
import unicodedata

import tantivy

from ._han import HAN_CHARS, HanSegmenter

# Hangul (syllables, jamo, compatibility jamo), hiragana and katakana letters with their voicing
# marks and the prolonged sound mark, halfwidth katakana; not the kana punctuation (`・`, `゠`)
_SYLLABLE_CHARS = "\u1100-\u11ff\u3041-\u3096\u3099-\u309a\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3131-\u318e\u31f0-\u31ff\uac00-\ud7a3\uff66-\uff9f"
_HAN = re.compile(f"[{HAN_CHARS}]+")
# runs of Han, Hangul and kana: one character class, which the regex engine scans for in C (an
# alternation of two classes made finding them 3x slower, 54 µs for a non-ASCII SciFact text)
_NOT_LATIN = re.compile(f"[{HAN_CHARS}{_SYLLABLE_CHARS}]+")
_BY_SCRIPT = re.compile(f"[{HAN_CHARS}]+|[{_SYLLABLE_CHARS}]+")  # such a run cut into Han and the rest
# an identifier: a run of letters/digits joined to more runs by `_ . : -` (runs like E0502 stay
# whole anyway). Possessive runs: no backtracking into a word that has no separator after it
# (twice as fast as tantivy's regex tokenizer on SciFact, and 2.2× the greedy form).
_IDENT = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]++(?:[_.:-][A-Za-z0-9]++)+")
_IDENT_AT = re.compile(r"[A-Za-z0-9]++(?:[_.:-][A-Za-z0-9]++)+")  # _IDENT where a run starts
_JOINT = re.compile(r"[_.:-](?<=[A-Za-z0-9][_.:-])(?=[A-Za-z0-9])")  # a separator inside an identifier
# a word that goes from 2 lower-case letters to a capital: `getServer`, `XMLHttp`; not `mRNA`,
# `IgG` or `SQLite` (`SQ` + `Lite`), where the capitals are not where the parts meet
_SHAPES = bytes(
    ord("a") if chr(b).islower() else ord("A") if chr(b).isupper() else ord("0") if chr(b).isdigit() else 32
    for b in range(128)
) + bytes(128)  # ASCII letters and digits by their shape, for `bytes.find`
_CASE_PART = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")  # `PSCs` stays whole
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
MAX_QUERY_TERMS = 64
LATIN_TOKENIZER = "k0_latin"


_HAN_SEGMENTER = HanSegmenter()


_LATIN_MARKS = re.compile(r"[\u0300-\u036f]+")  # combining diacritics (not kana's voicing marks)


def _unaccented(text: str) -> str:
    """`text` without Latin diacritics, in compatibility form (`ﬁ` → `fi`, fullwidth `Ａ` → `A`);
    other scripts' marks are kept (`ガ` stays `ガ`). Letters that are not a base letter plus a
    mark stay as they are (`ø`, `ł`, `ß`)."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", _LATIN_MARKS.sub("", unicodedata.normalize("NFKD", text)))


def _segment(run: str) -> list[str]:
    """jieba's search-mode words of a Han run; jieba's dictionary loads by character (`_han`)."""
    return _HAN_SEGMENTER.segment(run)


def _bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a Hangul or kana run; a lone character is its own term.
    The run is read composed and in its usual width, as the Latin analysis reads compatibility
    forms: decomposed Hangul (jamo) and kana (`カ` + U+3099) as syllables, halfwidth `ｶﾞ` as `ガ`."""
    run = unicodedata.normalize("NFKC", run)
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def _run_terms(run: str) -> list[str]:
    """The terms of one `_NOT_LATIN` run: jieba's words for Han, bigrams for Hangul and kana."""
    terms: list[str] = []
    for part in _BY_SCRIPT.findall(run) if not _HAN.fullmatch(run) else (run,):
        terms.extend(_segment(part) if _HAN.match(part) else _bigrams(part))
    return terms


def _case_parts(text: str) -> str:
    """The parts of the words that change case inside (`getServerSideProps` → `get Server Side
    Props`, `parseHTMLFor` → `parse HTML For`), 2 characters or more, one text for the Latin analysis.
    The whole word is a term too, so typing it exactly still counts most.

    A word is found where a capital follows two lower-case ASCII letters, by `bytes.find` in the
    text's shapes (`a`, `A`, `0`, space: one byte per character, other characters `?` → space):
    several times faster than a regex on prose, whose many capitals each cost a look-behind."""
    shapes = text.encode("ascii", "replace").translate(_SHAPES)
    at = shapes.find(b"aaA")
    if at < 0:
        return ""
    out: list[str] = []
    while at >= 0:
        start, stop = at, at + 3  # walk the word to its ends
        while start > 0 and shapes[start - 1] != 32:
            start -= 1
        while stop < len(shapes) and shapes[stop] != 32:
            stop += 1
        parts = _CASE_PART.findall(text, start, stop)
        if len(parts) > 1:  # `URLs` is one part; `kappaB` and `getX` give `kappa` and `get`
            out.extend(part for part in parts if len(part) > 1)
        at = shapes.find(b"aaA", stop)
    return " ".join(out)


def word_parts(word: str) -> list[str]:
    """The parts BM25 also searches a word by (`getServerSideProps` → get, Server, Side, Props;
    `SQLITE_BUSY` → SQLITE, BUSY), 2 characters or more; [] for a word of one part."""
    parts = [p for chunk in re.split(r"[_.:-]+", word) for p in (_case_parts(chunk).split() or [chunk])]
    return [p for p in parts if len(p) > 1] if len(parts) > 1 else []


def _identifiers(text: str) -> list[str]:
    """`_IDENT.findall(text)`, lower-cased, found from the separators inward: the regex below
    starts with a character class that the regex engine skips to in C (separators followed by
    a letter or digit are rare), where `_IDENT` tries every word start (1.7x faster on
    32,562 BEIR texts, the same identifiers)."""
    out: list[str] = []
    end = 0
    for sep in _JOINT.finditer(text):
        at = sep.start()
        if at < end:  # inside the identifier found last
            continue
        start = at - 1  # a letter or digit (the look-behind); walk back to its run's start
        while start > 0 and text[start - 1] in _ALNUM:
            start -= 1
        found = _IDENT_AT.match(text, start)
        assert found is not None  # the run, the separator and the letter or digit after it
        end = found.end()
        out.append(found.group().lower())
    return out


def warm_up_han() -> None:
    """Open jieba's dictionary now (the retriever does it in the background once serving): the
    first start on a machine builds the per-character cache."""
    _segment("中文")


def _latin_analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


# Words that make a sentence a question or say who asks ("how do I…", "what did we…", "my"),
# besides tantivy's English stopwords, which the index leaves out already. A query leaves them out
# too (whole words only, so `whats app` keeps `whats`); they are in the index, so a query made of
# nothing else still searches them. An agent's question in plain words matched notes by them:
# LoCoMo's 760 questions about conversations gained 0.038 nDCG@10 in BM25 and 0.018 in hybrid
# (bench/README.md, 29th wave). A note's names leave them out as well, so that "Why we use
# SQLite" is all named by "why we use sqlite".
QUESTION_WORDS = """how what why when where which who whom whose do does did i me my myself we our you your
he him his she her its they them their can could should would shall might must have has had been being were
am about from so than too very just also any some each other own only because while"""
_QUESTION_WORD = re.compile(r"(?<![\w'’])(?:" + "|".join(QUESTION_WORDS.split()) + r")(?![\w'’])", re.IGNORECASE)


# The same for Chinese, as jieba cuts a question (in Simplified: a Traditional query's terms are
# read in Simplified): question words, the pronouns of who asks, and the particles that end a
# question. Rare in notes, so each had a high IDF: a 4-line FAQ that says 为什么 and 怎么办 came
# before the postmortem `磁盘为什么被写满了` asks about. Matched as whole jieba words.
HAN_QUESTION_WORDS = """为什么 什么 怎么 怎么办 怎么样 怎样 如何 为何 哪个 哪些 哪里 哪儿 多少 是否 是不是 能否 请问 一下
我 我们 你 你们 吗 呢 吧 啊 呀 的 了 是"""
_HAN_ASKING_TERMS = frozenset(HAN_QUESTION_WORDS.split())
_WORDS = re.compile(r"\w+")
_HAN_DATE = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月(?:\s*(\d{1,2})\s*[日号])?")


def _with_iso_dates(query: str) -> str:
    """`query` with each Chinese date read as notes name days: `2024年3月18日` asks for `2024-03-18`
    and its numbers as written (its `3` never matched the `03` of the postmortem named by that
    day, while `2024`, `年` and `月` put another month's meeting note first)."""
    if "年" not in query:
        return query

    def iso(found: re.Match[str]) -> str:
        y, m, d = found.groups()
        day = f"{y}-{int(m):02d}" + (f"-{int(d):02d}" if d else "")
        return f" {day} {m} {d or ''} "

    return _HAN_DATE.sub(iso, query)


def asking_words(query: str) -> list[str]:
    """The words of `query` without its `QUESTION_WORDS` (all of them when it holds nothing else)."""
    return _WORDS.findall(_QUESTION_WORD.sub(" ", query)) or _WORDS.findall(query)


class BM25Analyzer:
    def __init__(self) -> None:
        self._latin = _latin_analyzer()

    def register(self, index: tantivy.Index) -> None:
        """Make `LATIN_TOKENIZER` known to `index` (every process, before indexing or reading)."""
        index.register_tokenizer(LATIN_TOKENIZER, _latin_analyzer())

    def split(self, text: str) -> tuple[str, list[str]]:
        """(the text for `LATIN_TOKENIZER`, with camelCase words' parts on a last line; the other
        terms: identifiers, jieba words, Hangul and kana bigrams).

        Han, Hangul and kana runs are blanked in the first (the simple tokenizer would keep
        `abc检查` as one token), so the two together hold exactly the terms of `terms(text)`."""
        if text.isascii():
            latin, extra = text, _identifiers(text)
        elif not _NOT_LATIN.search(text):
            latin = _unaccented(text)
            extra = _identifiers(latin)
        else:
            latin = _unaccented(_NOT_LATIN.sub(" ", text))
            extra = _identifiers(latin)
            for match in _NOT_LATIN.finditer(text):
                extra.extend(_run_terms(match.group(0)))
        parts = _case_parts(latin)
        return (f"{latin}\n{parts}" if parts else latin), extra

    def terms(self, text: str, case_parts: bool = True) -> list[str]:
        """Every term of `text`, in order, duplicates kept (term frequency matters). Without
        `case_parts`, camelCase words are only themselves (a note's names, for the name match:
        `GitHub` is all of its name for a query that says `github`)."""
        out: list[str] = []
        pos = 0
        if not text.isascii():
            for match in _NOT_LATIN.finditer(text):
                out.extend(self._latin_terms(text[pos : match.start()], case_parts))
                out.extend(_run_terms(match.group(0)))
                pos = match.end()
        out.extend(self._latin_terms(text[pos:], case_parts))
        return out

    def _latin_terms(self, text: str, case_parts: bool = True) -> list[str]:
        if not text.strip():
            return []
        text = _unaccented(text)
        terms: list[str] = self._latin.analyze(text)
        if case_parts and (parts := _case_parts(text)):
            terms.extend(self._latin.analyze(parts))
        terms.extend(_identifiers(text))
        return terms

    def query_terms(self, query: str) -> list[str]:
        """Distinct terms of a query, bounded, in first-seen order."""
        return list(dict.fromkeys(self._asking_terms(_with_iso_dates(query[:10_000]))))[:MAX_QUERY_TERMS]

    def name_terms(self, name: str) -> set[str]:
        """The terms of a note's name (its title, an alias) as the name match counts them: its
        camelCase words whole, question words left out as a query leaves them out."""
        return set(self._asking_terms(name, case_parts=False))

    def _asking_terms(self, text: str, case_parts: bool = True) -> list[str]:
        """`terms` of `text` without its `QUESTION_WORDS` (and `HAN_QUESTION_WORDS`); all of them
        when it holds nothing else."""
        terms = self.terms(_QUESTION_WORD.sub(" ", text), case_parts)
        if text.isascii():
            return terms or self.terms(text, case_parts)
        asking = [t for t in terms if t not in _HAN_ASKING_TERMS]
        return asking or terms or self.terms(text, case_parts)
