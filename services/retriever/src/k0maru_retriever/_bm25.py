"""Bm25Index: one tantivy document per chunk; the retriever process is its only writer."""

from __future__ import annotations

import math
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TypeVar

import tantivy

from k0maru_common import Unreadable

from ._analysis import LATIN_TOKENIZER, BM25Analyzer


@dataclass(frozen=True)
class Scope:
    diaries: tuple[str, ...] = ()
    path_prefixes: tuple[str, ...] = ()
    # each entry a tag every hit carries: one spelling, or spellings any of which will do
    # (`VaultNames.scope`: `#Project` finds `project` and the nested `project/alpha`)
    tags: tuple[str | tuple[str, ...], ...] = ()
    since: str = ""  # YYYY-MM-DD, inclusive: each candidate's day is checked (`matches`)
    until: str = ""
    keep_paths: frozenset[str] | None = None  # the date range as the notes it keeps (`NoteDays.scope`)

    def tag_groups(self) -> list[tuple[str, ...]]:
        """The tags as groups of spellings: a hit carries one of each group."""
        return [(t,) if isinstance(t, str) else t for t in self.tags]

    def matches(self, path: str, diary: str, tags: list[str], day: str = "") -> bool:
        if (self.since and not self.since <= day) or (self.until and not (day and day <= self.until)):
            return False
        if self.diaries and diary not in self.diaries:
            return False
        if self.path_prefixes and not any(
            path == p.rstrip("/")
            or path.startswith(p.rstrip("/") + "/")
            or (not p.endswith("/") and path.startswith(p))
            for p in self.path_prefixes
        ):
            return False
        return all(any(t in tags for t in group) for group in self.tag_groups())

    @property
    def empty(self) -> bool:
        return not (self.diaries or self.path_prefixes or self.tags or self.since or self.until)


def folders_of(path: str) -> list[str]:
    """Every ancestor folder of a path ("a", "a/b"), for prefix filtering."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


class Asked(NamedTuple):
    """A query's terms as the name match reads them: every term searched for, and the query's
    own words (a camelCase word whole, not also its parts), over which the query's share is taken."""

    terms: frozenset[str]
    words: frozenset[str]


@dataclass(frozen=True)
class ChunkRow:
    chunk_id: str
    path: str
    diary: str
    tags: list[str]
    text: str  # already including title and headings


# 2: the "live" sentinel field (one term on every document) counts deleted documents
# 3: "text" analysed by tantivy (LATIN_TOKENIZER) plus pre-tokenized identifiers and jieba words
# 4: "text" keeps term frequencies, not positions (no phrase query reads them; BM25 scores are
#    the same; 20 % less indexing CPU on a linked vault)
# 6: "names_raw" (stored: the note's title and aliases, one per line), for the name match
# 7: Latin text without diacritics (`café` → `cafe`)
# 8: Hangul and kana as character bigrams (`서버를` → `서버`, `버를`); camelCase words also by their
#    parts (`getServerSideProps` → `get server side prop`); "names_raw" holds the file name too
# 9: Han text read in Simplified characters (`_han.simplified`: `資料庫` is `资料库`)
SCHEMA_VERSION = "9"
# The name match (see `search`): a note's bonus grows with the cube of the share of its name the
# query covers, so a query that names a note counts and a shared word or two hardly does.
NAME_MATCH_POWER = 3
# Also times the share of the query (its words' idf) that the name holds, to this power: a name
# that is all in the query but holds only its commonest word ("Export" for "why serialise exports
# flock") does not name the note, and must not outrank the note that holds the rarer words.
NAME_SHARE_POWER = 0.375
# Where BM25 ranks alone the share counts in full (it gained 0.011-0.042 nDCG@10 there). In hybrid
# search, where the vector channel weighs the query's other words and the bonus also sets how sure
# BM25 is (`_fusion.confident_weights`), a name that holds this share of the query or more keeps
# the whole bonus: the share in full cost 0.005-0.022 on the vaults' query sets there, while a
# sliver of a name (Foam's "What is Foam?" is all of "foam", in nearly every query on that vault)
# took the top of BM25 from the note the query was about (bench/README.md, 29th and 30th waves).
# Half, not 0.15: a query quoting a note's sentence names other notes in passing, and 0.15 gave
# their names the whole bonus (31st wave: dendron's quoted sentences 0.807 → 0.839 nDCG@10 offline,
# its link-label queries 0.575 → 0.574).
NAME_SHARE_FLOOR_HYBRID = 0.5
TIE_DEPTH = 4096  # how deep a search fetches to find every chunk tied at its cut
SOLE_DEPTH = 64  # chunks looked at to tell whether one note alone holds a term (`sole_holder`)
NAMES_SEEN_MAX = 50_000  # notes' names, and terms' idf, kept between commits
V = TypeVar("V")


def _keep(cache: dict[str, V], key: str, value: V) -> None:
    """Remember `value` under `key` in a cache emptied at each commit (and whenever it is full)."""
    if len(cache) >= NAMES_SEEN_MAX:
        cache.clear()
    cache[key] = value


def _idf(df: int, n: int) -> float:
    """BM25's inverse document frequency (tantivy's formula)."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


NEXT, OLD = ".next", ".old"  # beside the live index: one being built for a swap, one being retired


def _beside(directory: Path, suffix: str) -> Path:
    return directory.with_name(directory.name + suffix)


class Bm25Index:
    """`generation` names this index's contents: a new id whenever the directory is created,
    wiped for a schema change, or cleared. The retriever stores it with its bookkeeping and
    rebuilds BM25 when the two disagree."""

    def __init__(self, directory: Path, analyzer: BM25Analyzer) -> None:
        self.directory = directory
        self._analyzer = analyzer
        for leftover in (_beside(directory, NEXT), _beside(directory, OLD)):  # a compaction cut short
            shutil.rmtree(leftover, ignore_errors=True)
        version_file = directory / "k0-schema-version"
        self._generation_file = directory / "k0-generation"
        if directory.exists() and (not version_file.exists() or version_file.read_text() != SCHEMA_VERSION):
            shutil.rmtree(directory)  # rebuildable from the vault
        directory.mkdir(parents=True, exist_ok=True)
        version_file.write_text(SCHEMA_VERSION)
        if not self._generation_file.exists():
            self._new_generation()
        self.generation = self._generation_file.read_text()
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("path", stored=True, tokenizer_name="raw")
        builder.add_text_field("diary", tokenizer_name="raw")
        builder.add_text_field("tags", tokenizer_name="raw")
        builder.add_text_field("folders", tokenizer_name="raw")
        builder.add_text_field("text", tokenizer_name=LATIN_TOKENIZER, index_option="freq")
        builder.add_text_field("live", tokenizer_name="raw")
        builder.add_text_field("names_raw", stored=True, tokenizer_name="raw")
        self._schema = builder.build()
        try:
            self._index = tantivy.Index(self._schema, path=str(directory), reuse=True)
        except ValueError as exc:  # "Data corrupted …", "Failed to open file for read: FileDoesNotExist …"
            if "Permission denied" in str(exc):
                raise
            raise Unreadable(str(exc)) from exc
        analyzer.register(self._index)
        self._writer = self._index.writer(heap_size=50_000_000, num_threads=1)
        self._dirty = False
        self._folders: tuple[str, list[str]] = ("", [])  # the last path added and its folders
        self._searcher = self._index.searcher()  # reused until the next commit: its doc-store cache stays warm
        self._names_seen: dict[str, list[dict[str, float]]] = {}  # names → each one's terms' idf, until the next commit
        self._idf_seen: dict[str, float] = {}  # term → idf in "text", until the next commit
        self._added_file = directory / "k0-added"
        self._added = self._read_added()  # documents added since this index was empty (see `replaced`)
        self._added_committed = self._added  # of them, those the searcher shows (as of the last commit)

    def delete_path(self, path: str) -> None:
        self._writer.delete_documents_by_term("path", path)
        self._dirty = True

    def add(self, row: ChunkRow) -> None:
        self.add_note(row.path, row.diary, row.tags, [(row.chunk_id, row.text)])

    def add_note(self, path: str, diary: str, tags: list[str], chunks: list[tuple[str, str]], names: str = "") -> None:
        """`add` for the chunks of one note, given as (chunk id, text): the note's fields and
        folders are converted once, not once per chunk. `names`: its title and aliases, one per
        line (the name match of `search`)."""
        if path != self._folders[0]:
            self._folders = (path, folders_of(path))
        folders = self._folders[1]
        split, writer, token = self._analyzer.split, self._writer, tantivy.Token
        for cid, text in chunks:
            latin, extra = split(text)
            # lists of values in one call (tags, folders): fewer calls into the extension per chunk
            doc = tantivy.Document(id=cid, path=path, diary=diary, text=latin, live="1", tags=tags, folders=folders)
            if extra:  # one more value of the same field: its terms count in the same length and frequencies
                tokens = [token(term, i, 0, 0) for i, term in enumerate(extra)]
                doc.add_pre_tokenized_text("text", tantivy.PreTokenizedString("", tokens))
            if names:  # what `search` measures a name match against
                doc.add_text("names_raw", names)
            writer.add_document(doc)
        self._added += len(chunks)
        self._dirty = True

    @property
    def analyzer(self) -> BM25Analyzer:
        return self._analyzer

    @property
    def dirty(self) -> bool:
        """Changes since the last commit."""
        return self._dirty

    def commit(self) -> None:
        if self._dirty:
            # the count first: a crash before tantivy's commit leaves it high, which costs at most
            # one compaction more, never one less
            scratch = self._added_file.with_name(self._added_file.name + ".tmp")
            scratch.write_text(str(self._added))
            os.replace(scratch, self._added_file)
            self._writer.commit()
            self._index.reload()
            self._searcher = self._index.searcher()
            self._names_seen.clear()
            self._idf_seen.clear()
            self._dirty = False
            self._added_committed = self._added

    def clear(self) -> None:
        self._writer.delete_all_documents()
        self._added = 0
        self._dirty = True
        self._new_generation()

    def _new_generation(self) -> None:
        self.generation = uuid.uuid4().hex
        self._generation_file.write_text(self.generation)

    def search(
        self, query: str, limit: int, scope: Scope, name_match: float = 0.0, ranks_alone: bool = False
    ) -> list[tuple[str, float]]:
        """(chunk id, score), best first. Never raises on query syntax: no parser is used.

        The score is BM25 over the chunk's text (title, tags, aliases, headings, body), plus, when
        `name_match` > 0, a name match: name_match × (the best BM25 score of this query) ×
        coverage³, where coverage is the share of one of the note's names (its title or an
        alias; terms weighted by idf) that the query holds, the best of them. A query that
        names a note ("sqlite busy handling") then finds it first even where longer notes use
        those words more; a claim that shares a word or two with a paper's title hardly moves.
        The bonus is also smaller where the name holds little of the query (`NAME_SHARE_POWER`):
        wherever it holds less than all of it when `ranks_alone` (no vector channel beside this
        one), below `NAME_SHARE_FLOOR_HYBRID` of it otherwise."""
        terms = self._analyzer.query_terms(query)
        if not terms or limit <= 0:
            return []
        should = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "text", t, index_option="freq"))
                for t in terms
            ]
        )
        clauses = [(tantivy.Occur.Must, should), *self._scope_clauses(scope)]
        searcher = self._searcher
        combined = tantivy.Query.boolean_query(clauses)
        # tantivy cuts at `limit` with equal scores in the order documents were indexed: when the
        # cut splits chunks of equal score (copies, notes written from one template), fetch them
        # all (up to TIE_DEPTH deep), so that the chunk-id order below picks the same ones in a
        # rebuilt or crash-recovered index as in a fresh one
        fetched = limit + 1
        hits = searcher.search(combined, fetched, count=False).hits
        while len(hits) == fetched and fetched < TIE_DEPTH and hits[-1][0] == hits[limit - 1][0]:
            fetched = min(fetched * 4, TIE_DEPTH)
            hits = searcher.search(combined, fetched, count=False).hits
        cut = hits[limit - 1][0] if len(hits) >= limit else float("-inf")
        found: dict[str, tuple[float, str]] = {}  # chunk id → (BM25 score, the note's names when matched)
        for score, address in hits:
            if score < cut:
                break
            doc = searcher.doc(address)
            names = str(doc.get_first("names_raw") or "") if name_match > 0 else ""
            found[str(doc.get_first("id"))] = (float(score), names)
        if name_match > 0 and found:
            best = max(score for score, _names in found.values())
            asked = self._asked(query, terms)
            floor = 1.0 if ranks_alone else NAME_SHARE_FLOOR_HYBRID
            scored = [
                (cid, score + name_match * best * self._named(asked, names, floor))
                for cid, (score, names) in found.items()
            ]
        else:
            scored = [(cid, score) for cid, (score, _names) in found.items()]
        # equal scores in chunk-id order, not in the order documents happened to be indexed: a
        # rebuilt or crash-recovered index then ranks exactly like a fresh one (ties at the cut: above)
        return sorted(scored, key=lambda hit: (-hit[1], hit[0]))[:limit]

    def query_terms(self, query: str) -> Asked:
        """The terms `search` looks for, as `name_coverage` is given them."""
        return self._asked(query, self._analyzer.query_terms(query))

    def _asked(self, query: str, terms: list[str]) -> Asked:
        searched = frozenset(terms)
        return Asked(searched, searched.intersection(self._analyzer.terms(query[:10_000], case_parts=False)))

    def name_coverage(self, asked: Asked, names: str) -> float:
        """The share of the best-matching of `names` (title and aliases, one per line) that the
        query holds (0–1), terms weighted by idf."""
        return max((held / sum(name.values()) for name, held in self._held(asked, names)), default=0.0)

    def sole_holder(self, term: str) -> str | None:
        """The one note whose text holds `term` (its chunks may be several); None when no note or
        more than one does (or more than `SOLE_DEPTH` chunks, which no single note's symbol fills)."""
        query = tantivy.Query.term_query(self._schema, "text", term, index_option="freq")
        found = self._searcher.search(query, SOLE_DEPTH + 1, count=False).hits
        if not found or len(found) > SOLE_DEPTH:
            return None
        paths = {str(self._searcher.doc(address).get_first("path")) for _score, address in found}
        return paths.pop() if len(paths) == 1 else None

    def named_exactly(self, asked: Asked, names: str) -> bool:
        """Whether the query is one of `names` (title, aliases, one per line): the same words both
        ways, question words left out (`Lookup` for "lookup" or "what is lookup", `Rename Note` for
        "rename note"). Under the index's lock, as the cache of names is."""
        return bool(asked.words) and any(name.keys() == asked.words for name in self._names(names))

    def _named(self, asked: Asked, names: str, floor: float) -> float:
        """How fully the query names the note (0–1), the factor of `search`'s name match: for the
        best of its names, the name's share that the query holds, cubed, times the query's share
        that the name holds (over the query's words), counted whole from `floor` up, to
        `NAME_SHARE_POWER`."""
        best = 0.0
        words_idf = 0.0
        for name, held in self._held(asked, names):
            if not words_idf:
                words_idf = sum(self._idf(t) for t in asked.words) or 1.0
            share = sum(w for t, w in name.items() if t in asked.words) / words_idf
            named = (held / sum(name.values())) ** NAME_MATCH_POWER * min(1.0, share / floor) ** NAME_SHARE_POWER
            best = max(best, named)
        return best

    def _held(self, asked: Asked, names: str) -> Iterator[tuple[dict[str, float], float]]:
        """Each of `names` that the query holds any of: (its terms' idf, the idf of those held)."""
        for name in self._names(names):
            held = sum(w for t, w in name.items() if t in asked.terms)
            if held:
                yield name, held

    def _names(self, names: str) -> list[dict[str, float]]:
        """A note's names (title, then each alias: one per line), each as its terms' idf; kept
        until the next commit changes the statistics."""
        parsed = self._names_seen.get(names)
        if parsed is None:
            parsed = [
                {t: self._idf(t) for t in terms}
                for line in names.splitlines()
                if (terms := self._analyzer.name_terms(line))
            ]
            _keep(self._names_seen, names, parsed)
        return parsed

    def _idf(self, term: str) -> float:
        idf = self._idf_seen.get(term)
        if idf is None:
            df = self._searcher.doc_freq("text", term)  # counts deleted documents too, num_docs does not
            idf = _idf(df, max(1, df, int(self._searcher.num_docs)))
            _keep(self._idf_seen, term, idf)
        return idf

    def _scope_clauses(self, scope: Scope) -> list[tuple[tantivy.Occur, tantivy.Query]]:
        def any_of(field: str, values: list[str]) -> tantivy.Query:
            return tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, field, v)) for v in values]
            )

        clauses = []
        if scope.diaries:
            clauses.append((tantivy.Occur.Must, any_of("diary", list(scope.diaries))))
        if scope.path_prefixes:
            subs = []
            for prefix in scope.path_prefixes:
                p = prefix.rstrip("/")
                subs.append((tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "folders", p)))
                subs.append((tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "path", p)))
                if not prefix.endswith("/"):  # a partial name: the paths that start with it, from the term dictionary
                    # (a regex would do, but tantivy refuses one past 1,000 states: any prefix that long)
                    paths = [term for term, _count in self._searcher.terms_with_prefix("path", p)]
                    if paths:
                        subs.append((tantivy.Occur.Should, tantivy.Query.term_set_query(self._schema, "path", paths)))
            clauses.append((tantivy.Occur.Must, tantivy.Query.boolean_query(subs)))
        for group in scope.tag_groups():
            clauses.append((tantivy.Occur.Must, any_of("tags", list(group))))
        if scope.keep_paths is not None:
            clauses.append(
                (tantivy.Occur.Must, tantivy.Query.term_set_query(self._schema, "path", [*scope.keep_paths]))
            )
        return clauses

    def close(self) -> None:
        """Commit and release the writer's lock on the index directory."""
        self.commit()
        self._writer.wait_merging_threads()

    def empty_beside(self) -> Bm25Index:
        """A new, empty index in a directory beside this one, to be filled and then swapped in
        with `replace_with` (or dropped with `discard`)."""
        return Bm25Index(_beside(self.directory, NEXT), self._analyzer)

    def discard(self) -> None:
        """Close this index and delete its directory (an index from `empty_beside` not swapped in)."""
        self.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def replace_with(self, built: Bm25Index) -> Bm25Index:
        """Close this index and `built` (from `empty_beside`, committed here), move `built`'s
        directory into this one's place and return it opened there. Searches still running on
        this index finish: its files stay mapped after they are deleted. A crash halfway leaves
        no index, or one of another generation, where this one was: the next start rebuilds."""
        built.close()
        self.close()
        retired = _beside(self.directory, OLD)
        self.directory.rename(retired)
        built.directory.rename(self.directory)
        swapped = Bm25Index(self.directory, self._analyzer)  # removes `retired`
        if swapped.generation != built.generation:
            raise RuntimeError(f"BM25 swap: found generation {swapped.generation}, built {built.generation}")
        return swapped

    def count(self) -> int:
        return int(self._searcher.num_docs)

    def replaced(self) -> int:
        """Documents replaced or removed since this index was empty (built fresh, or cleared).
        They sway BM25's statistics until the index is built again: as deleted documents, which
        still count in document frequencies and the average length; and once tantivy's own
        merges have dropped them, through the average length, which tantivy then estimates from
        the 1-byte field norms of the segments merged rather than counts (scores 0.2–0.5 % off a
        fresh build's on the stack test's vault). So an index that saw edits ranks like a fresh
        build only after a compaction, whatever tantivy merged meanwhile."""
        return max(0, self._added_committed - self.count())  # both as of the last commit

    def _read_added(self) -> int:
        try:
            return int(self._added_file.read_text())
        except (OSError, ValueError):  # an index written before the count: the deleted documents it holds
            return int(self._searcher.doc_freq("live", "1"))
