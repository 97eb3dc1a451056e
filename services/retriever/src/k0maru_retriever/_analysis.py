"""Text analysis for BM25, shared by indexing and querying so both see the same terms.

English and other Latin text: tantivy's simple tokenizer, lowercased, English stopwords
removed, Snowball-stemmed. Han text: jieba's search-mode segmentation (words and their
sub-words), so `检查器` matches inside `借用检查器报错`. Identifiers such as `SQLITE_BUSY`,
`E0502` or `snake_case_name` are also kept whole, so an exact symbol outranks its parts.
"""

from __future__ import annotations

import logging
import re

import jieba
import tantivy

jieba.setLogLevel(logging.WARNING)

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_IDENT = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]+(?:[_.:-][A-Za-z0-9]+)+")  # mixed runs like E0502 stay whole anyway
MAX_QUERY_TERMS = 64


class BM25Analyzer:
    def __init__(self) -> None:
        self._latin = (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(40))
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.stopword("english"))
            .filter(tantivy.Filter.stemmer("english"))
            .build()
        )
        jieba.initialize()

    def terms(self, text: str) -> list[str]:
        """Every term of `text`, in order, duplicates kept (term frequency matters)."""
        out: list[str] = []
        pos = 0
        for match in _HAN.finditer(text):
            out.extend(self._latin_terms(text[pos : match.start()]))
            out.extend(w for w in jieba.lcut_for_search(match.group(0)) if w.strip())
            pos = match.end()
        out.extend(self._latin_terms(text[pos:]))
        return out

    def _latin_terms(self, text: str) -> list[str]:
        if not text.strip():
            return []
        terms: list[str] = self._latin.analyze(text)
        terms.extend(m.group(0).lower() for m in _IDENT.finditer(text))
        return terms

    def query_terms(self, query: str) -> list[str]:
        """Distinct terms of a query, bounded, in first-seen order."""
        return list(dict.fromkeys(self.terms(query[:10_000])))[:MAX_QUERY_TERMS]

    def joined(self, text: str) -> str:
        """Terms as one whitespace-separated string for a `whitespace`-tokenized field."""
        return " ".join(self.terms(text))  # terms never contain whitespace
