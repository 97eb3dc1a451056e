"""HybridSearcher: BM25 and vector pools → RRF with a 1-hop wikilink rank bonus → note hits."""

from __future__ import annotations

import logging
import re
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import grpc
import numpy as np

from k0maru.v1 import common_pb2, embedder_pb2, embedder_pb2_grpc, retriever_pb2
from k0maru_common import (
    KEEPALIVE_CLIENT_OPTIONS,
    ROUND_ROBIN_CONFIG,
    InvalidInput,
    model_reads,
    open_channel,
    utc_day,
)

from ._bm25 import Asked, Scope
from ._fusion import (
    DEFAULT_GAP_SCALE,
    FusedHit,
    channel_confidence,
    channel_weights,
    confident_weights,
    convex_fuse,
    rrf_fuse,
    single_channel,
)
from ._index import NoteIndex, chunk_id, note_names, split_chunk_id
from ._listing import list_scope, note_in_scope
from ._shaping import QueryShaper
from ._snippets import Snippets
from ._succession import with_successors
from ._tags import normalise_tag

log = logging.getLogger(__name__)
MAX_LIMIT = 100
RECENT_QUERIES = 512
MAX_QUERY_CHARS = 10_000
_DAYS_BACK = re.compile(r"(\d{1,5})([dw])")
# notes each channel pools for fusion: as many for a limit of 1 or 5 as for 10, so that the best
# hits do not hang on the limit (each channel's scores are scaled within its pool: with a pool of
# 20 at limit 5, `-XX:MaxRAMPercentage=75` put another note first than at limit 10)
MIN_POOL = 30
MAX_POOL_DEPTH = 64  # chunks fetched per pooled note, at most, when notes have many matching chunks
BM25, VECTOR, HYBRID = (
    retriever_pb2.SEARCH_MODE_BM25,
    retriever_pb2.SEARCH_MODE_VECTOR,
    retriever_pb2.SEARCH_MODE_HYBRID,
)


@dataclass(frozen=True)
class FusionParams:
    method: str = "convex"  # "convex": weighted min-max scores; "rrf": reciprocal ranks (B.5)
    k: int = 60  # RRF constant
    w_bm25: float = 0.5
    w_vector: float = 0.5
    adaptive: float = 1.25  # per-query vector weight × (vector gap / (gap_scale × BM25 spread)) ** adaptive (0: fixed)
    graph_boost: float = 0.1  # rank bonus: share of the distance to the top a connected note closes
    gap_scale: float = DEFAULT_GAP_SCALE  # the ratio at which the weights are unchanged (per model: model_gap_scale)
    name_match: float = 1.0  # BM25 channel: bonus of a note the query names, × its best score (Bm25Index.search)


HEDGE_S = 10.0
# Embed calls run as blocking calls on these threads. gRPC's `.future()` starts a thread of its
# own whenever a channel goes from no call in flight to one, that is for every query of a lone
# client: 0.8-0.9 ms before BM25 could start (a submit here: 0.05 ms). Two attempts for each of
# the server's 16 request threads, so an attempt never waits for a thread, not even while a hung
# worker holds attempts until their deadline; threads start only as calls overlap.
EMBED_CALL_THREADS = 32
RETRYABLE = (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE)


class PendingEmbedding:
    """One query's Embed attempts in flight; the first successful answer wins."""

    def __init__(self, text: str, futures: list[Future[embedder_pb2.EmbedResponse]]) -> None:
        self.text = text
        self.sent = time.perf_counter()
        self.answered = 0.0  # perf_counter() of the first successful answer
        self._futures = futures
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._left = len(futures)
        for f in futures:
            f.add_done_callback(self._finished)

    def _finished(self, future: Future[embedder_pb2.EmbedResponse]) -> None:
        ok = not future.cancelled() and future.exception() is None
        with self._lock:
            self._left -= 1
            if ok and not self.answered:
                self.answered = time.perf_counter()
            if self._left == 0 or ok:
                self._done.set()

    def first_answer(self) -> tuple[embedder_pb2.EmbedResponse | None, list[grpc.StatusCode]]:
        """(the first successful reply or None, the status codes of the attempts that failed)."""
        self._done.wait()  # every attempt carries its own deadline
        codes: list[grpc.StatusCode] = []
        reply = None
        for f in self._futures:
            if not f.done():
                continue
            error = f.exception()
            if error is None:
                reply = reply or f.result()
            else:
                codes.append(error.code() if isinstance(error, grpc.Call) else grpc.StatusCode.UNKNOWN)
        if reply is not None:
            for f in self._futures:
                f.cancel()
        return reply, codes


class QueryEmbedder:
    """Query vectors from the embedder workers, round-robin over every address in the target."""

    def __init__(self, target: str, timeout_s: float = 2.0, token: str = "") -> None:
        self._channel = open_channel(
            target, token, [("grpc.service_config", ROUND_ROBIN_CONFIG), *KEEPALIVE_CLIENT_OPTIONS]
        )
        self._stub = embedder_pb2_grpc.EmbedderStub(self._channel)
        self._calls = ThreadPoolExecutor(EMBED_CALL_THREADS, thread_name_prefix="query-embed")
        self._timeout = timeout_s
        self.scripts: tuple[str, ...] = ()  # empty: unknown, assume it reads everything
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()  # agents repeat their queries
        self._recent_lock = threading.Lock()
        self._hedge_until = 0.0  # monotonic time until which queries go to two workers
        self.model_id = ""  # the model whose store this retriever opened: another's vectors are not used
        self.on_other_model: Callable[[str], None] | None = None  # told the other model's id

    def cached(self, text: str) -> np.ndarray | None:
        with self._recent_lock:
            vector = self._recent.get(text)
            if vector is not None:
                self._recent.move_to_end(text)
            return vector

    def remember(self, text: str, vector: np.ndarray) -> None:
        with self._recent_lock:
            self._recent[text] = vector
            while len(self._recent) > RECENT_QUERIES:
                self._recent.popitem(last=False)

    def reads(self, query: str) -> bool:
        """False when 30 % or more of the query's letters are in scripts the model declares it
        cannot read (Han, Hangul, kana, Cyrillic, … for the English model)."""
        return model_reads(query, self.scripts)

    def model(self, timeout_s: float) -> tuple[str, int, tuple[str, ...]]:
        """(model id, dimension, scripts it reads) of the workers, waiting up to timeout_s for one."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                info = self._stub.Info(embedder_pb2.EmbedderInfoRequest(), timeout=2.0)
                self.scripts = tuple(info.scripts)
                return info.model, info.dimension, self.scripts
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _call(self, text: str) -> Future[embedder_pb2.EmbedResponse]:
        request = embedder_pb2.EmbedRequest(texts=[text[:2000]], is_query=True)
        return self._calls.submit(self._stub.Embed, request, timeout=self._timeout / 2)

    def hedging(self) -> bool:
        """Queries go to two workers at once (an attempt failed within the last HEDGE_S)."""
        return time.monotonic() < self._hedge_until

    def start(self, text: str) -> PendingEmbedding:
        """Ask for the query vector without waiting, so BM25 runs meanwhile. Each attempt has
        half the budget. Shortly after an attempt failed, every query goes to two workers at once
        (round robin gives them consecutive picks) and the first answer wins."""
        return PendingEmbedding(text, [self._call(text) for _ in range(2 if self.hedging() else 1)])

    def result(self, pending: PendingEmbedding) -> np.ndarray | None:
        """The vector, or None (the search answers from BM25).

        A worker whose process hangs while its host still accepts connections looks ready to
        gRPC after every keepalive reconnect: round robin would hand it every other query. So a
        failed attempt (deadline, worker gone) is tried once more on the next worker, and for
        HEDGE_S after it queries are sent to two workers at once.
        """
        reply, codes = pending.first_answer()
        if codes:
            self._hedge_until = time.monotonic() + HEDGE_S
        if reply is None and codes and all(c in RETRYABLE for c in codes):
            retry = PendingEmbedding(pending.text, [self._call(pending.text)])
            reply, again = retry.first_answer()
            pending.answered = retry.answered
            codes += again
        if reply is None:
            log.warning("query embedding failed (%s); answering from BM25", ", ".join(str(c) for c in codes))
            return None
        if self.model_id and reply.model and reply.model != self.model_id:
            log.warning("the embedders answer with %s, not %s; answering from BM25", reply.model, self.model_id)
            if self.on_other_model is not None:
                self.on_other_model(reply.model)
            return None
        return np.asarray(reply.vectors[0].values, dtype=np.float32)

    def embed(self, text: str) -> np.ndarray | None:
        return self.result(self.start(text))

    def close(self) -> None:
        self._calls.shutdown(wait=False, cancel_futures=True)
        self._channel.close()


def _day(text: str, name: str, today: date | None = None) -> str:
    """A scope's day as YYYY-MM-DD: a day, or one counted back from today (UTC): `today`,
    `yesterday`, `7d`, `2w` (an agent often does not know today's date); InvalidInput otherwise."""
    text = text.strip().lower()
    if not text:
        return ""
    today = today or datetime.now(UTC).date()
    back = {"today": 0, "yesterday": 1}.get(text)
    if back is None and (counted := _DAYS_BACK.fullmatch(text)):
        back = int(counted.group(1)) * (7 if counted.group(2) == "w" else 1)
    try:
        return (today - timedelta(days=back)).isoformat() if back is not None else date.fromisoformat(text).isoformat()
    except (ValueError, OverflowError):
        raise InvalidInput(
            f"{name} must be a day, YYYY-MM-DD, or one counted back: today, yesterday, 7d, 2w (got {text[:40]!r})"
        ) from None


DEDUP_POOL = 20  # the results SVD deduplication chooses from (VCP's result list)
EXACT_DEPTH = 10  # BM25's notes looked at for a name or a line the query is exactly
QUOTE_MIN_WORDS = 4  # a query this long, found word for word in one note's passage, puts that note first
# a query this short asks for its symbol (`how do I fix error E0502`) or names a note; in a longer
# line pasted from a note, a URL's or a template's symbol is one the note's indexed text may not
# hold (`{{fm.title}}`)
SHORT_QUERY_WORDS = 8
_NOT_WORD = re.compile(r"\W+")
# a query term that is a symbol, not a word: a code with digits (`e0502`, `0xc0000005`), a number
# of 3 digits or more (`137`), an identifier joined by `_`, `.` or `:` (`sqlite_busy`,
# `os.path.join`, `std::move`); not a compound joined by `-` (`long-term`, `ucp1-dependent`: a
# note that says `UCP1` is as much about it) nor a short code (`6mp`, said `6-MP` elsewhere)
_SYMBOL = re.compile(r"(?!.*-)(?:\d{3,}$|(?=.*\d).{4,}|.*_|.*[a-z0-9][.:]+[a-z0-9])")


def _holds(doc: common_pb2.Document, cid: str, quote: str, words: list[str]) -> bool:
    """Whether chunk `cid` of `doc` holds `quote` (its words, space-separated and padded) word for
    word, case, punctuation and markup aside. Its words are looked for first (C loops), so the text
    is normalised only where all of them are."""
    index = split_chunk_id(cid)[1]
    if index >= len(doc.chunks):
        return False
    text = doc.chunks[index].text.lower()
    return all(w in text for w in words) and quote in f" {' '.join(_NOT_WORD.sub(' ', text).split())} "


def _best_per_chunk(rankings: list[list[tuple[str, float]]]) -> list[tuple[str, float]]:
    """One ranking from several (raw and reshaped query): each chunk at its best score."""
    if len(rankings) == 1:
        return rankings[0]
    best: dict[str, float] = {}
    for ranking in rankings:
        for cid, score in ranking:
            if score > best.get(cid, -2.0):
                best[cid] = score
    return sorted(best.items(), key=lambda kv: -kv[1])


def _report_weights(
    response: retriever_pb2.SearchResponse, weights: tuple[float, float], confidence: tuple[float, float]
) -> None:
    """Each channel's share of the fused score and the confidence it was weighed by (hybrid)."""
    for report in response.channels:
        i = 0 if report.channel == "bm25" else 1
        if report.ran:
            report.weight, report.confidence = weights[i], confidence[i]


def _explain_hit_tags(response: retriever_pb2.SearchResponse) -> None:
    """Per hit: the TagMemo tags it carries, with their weights."""
    weights = {t.tag: t.weight for t in response.tagmemo.matched_tags}
    for hit in response.hits:
        for tag in dict.fromkeys(normalise_tag(t) for t in hit.tags):
            if tag in weights:
                hit.explain.tagmemo_tags.append(retriever_pb2.TagFactor(tag=tag, weight=weights[tag]))


SAME_PASSAGE_MIN = 40  # characters: a shorter passage ("## Summary") says too little to be called the same


def mark_same_passages(hits: Iterable[retriever_pb2.SearchHit]) -> None:
    """Each hit whose passage is, word for word, an earlier hit's says whose (`same_passage_as`):
    a tenth of the dendron vault's notes share a section with another (tutorials copied into two
    hierarchies, a job ad's "Apply", a release note's "Office Hours"), and an answer listed it as
    many times. The notes stay listed, each in its place."""
    first: dict[str, str] = {}
    for hit in hits:
        if len(hit.snippet) < SAME_PASSAGE_MIN:
            continue
        if (earlier := first.get(hit.snippet)) is not None:
            hit.same_passage_as = earlier
        else:
            first[hit.snippet] = hit.path


class HybridSearcher:
    def __init__(
        self,
        index: NoteIndex,
        embedder: QueryEmbedder | None,
        params: FusionParams,
        vault: str,
        shaper: QueryShaper | None = None,
    ) -> None:
        self._index = index
        self._embedder = embedder
        self._params = params
        self._vault = vault
        self._shaper = shaper
        self._snippet = Snippets(index.bm25.analyzer, RECENT_QUERIES)  # needles kept as vectors are

    def search(self, request: retriever_pb2.SearchRequest) -> retriever_pb2.SearchResponse:
        started = time.perf_counter()
        # composed (NFC), as the scanner reads notes: a query pasted from a macOS file name matches
        query = unicodedata.normalize("NFC", request.query.strip()[:MAX_QUERY_CHARS])
        if self._shaper is not None:
            self._shaper.check(request)
        limit = min(request.limit or 10, MAX_LIMIT)
        mode = request.mode or HYBRID
        scope = Scope(
            tuple(request.scope.diaries),
            tuple(request.scope.path_prefixes),
            tuple(request.scope.tags),
            _day(request.scope.since, "since"),
            _day(request.scope.until, "until"),
        )
        if scope.since and scope.until and scope.since > scope.until:
            raise InvalidInput(f"since ({scope.since}) is after until ({scope.until}): no day is in between")
        if not scope.empty:  # also in the vault's own spellings (`projects/` → `Projects/`, `#Ops` → `ops`)
            with self._index.lock:  # and a date range as the notes it keeps
                scope = self._index.state.days.scope(self._index.state.names.scope(scope))
        _docs, chunks, with_vectors = self._index.counts()
        coverage = with_vectors / chunks if chunks else 0.0
        response = retriever_pb2.SearchResponse(vault=self._vault, mode_used=mode, vector_coverage=coverage)
        if not query or scope.keep_paths == frozenset():  # no note is dated within the range
            if not query and not scope.empty:  # no query, a scope: its notes, newest first
                with self._index.lock:
                    response.hits.extend(self._listed(scope, limit))
                mark_same_passages(response.hits)
            if not response.hits:
                response.empty_scope.extend(self._empty_scope(request.scope))
            if query:  # the channels had nothing to search (the console said "not asked for")
                for channel in ("bm25", "vector") if mode == HYBRID else ("bm25",) if mode == BM25 else ("vector",):
                    response.channels.append(
                        retriever_pb2.ChannelReport(channel=channel, ran=False, reason="no note is dated in the scope")
                    )
            response.took_ms = (time.perf_counter() - started) * 1000
            return response
        pool = max(3 * limit, MIN_POOL)
        bm25: list[tuple[str, float, str]] = []
        vector: list[tuple[str, float, str]] = []
        skipped = self._vector_left_out(mode, query, chunks, with_vectors) if mode in (VECTOR, HYBRID) else ""
        embedder = self._embedder if mode in (VECTOR, HYBRID) and not skipped else None
        qv = embedder.cached(query) if embedder is not None else None
        pending = embedder.start(query) if embedder is not None and qv is None else None
        p = self._shaper.fusion(self._params) if self._shaper else self._params
        if mode in (BM25, HYBRID):
            began = time.perf_counter()
            alone = embedder is None  # no vector channel will weigh the query's other words
            bm25 = self._pool(lambda n, sc: self._index.bm25.search(query, n, sc, p.name_match, alone), pool, scope)
            took = (time.perf_counter() - began) * 1000
            response.channels.append(retriever_pb2.ChannelReport(channel="bm25", ran=True, took_ms=took))
        if pending is not None and embedder is not None:
            qv = embedder.result(pending)
            if qv is not None:
                embedder.remember(query, qv)
                response.query_embedding_ms = (pending.answered - pending.sent) * 1000
            else:
                skipped = "the query could not be embedded (embedder unavailable or too slow)"
        vector_began = time.perf_counter()
        if qv is not None:
            # TagMemo hook: the vector channel may search with the reshaped query (A.9)
            shaped, tag_explain = self._shaper.vectors(qv, request) if self._shaper else ([qv], None)
            if tag_explain is not None and request.explain:
                response.tagmemo.CopyFrom(tag_explain)
            vector = self._pool(lambda n, sc: self._vector_search(shaped, n, sc), pool, scope)
        elif request.tagmemo.enabled and request.explain:  # TagMemo reshapes the query vector: none here
            response.tagmemo.CopyFrom(
                retriever_pb2.TagMemoExplanation(applied=False, reason=skipped or "this mode has no vector channel")
            )
        if mode in (VECTOR, HYBRID):
            took = (time.perf_counter() - vector_began) * 1000 if qv is not None else 0.0
            response.channels.append(
                retriever_pb2.ChannelReport(channel="vector", ran=not skipped, reason=skipped, took_ms=took)
            )
        best_chunk = {n: c for n, _s, c in reversed(vector)} | {n: c for n, _s, c in reversed(bm25)}
        unseen: frozenset[str] = frozenset()  # hybrid's notes with no vector yet (`_unseen`)
        if mode == HYBRID:
            if not vector:
                response.mode_used = BM25
            response.by_meaning_only = not bm25 and bool(vector)  # no note holds the query's words
            b, v = [(a, s) for a, s, _ in bm25], [(a, s) for a, s, _ in vector]
            wb, wv = confident_weights(b, v, p.w_bm25, p.w_vector, p.adaptive, p.gap_scale)
            wv *= coverage  # while the vault is being embedded: see `_unseen`
            _report_weights(response, channel_weights(wb, wv, bool(b), bool(v)), channel_confidence(b, v))
            with self._index.lock:
                connected = self._index.graph.connected_among
                unseen = self._unseen(b) if v and coverage < 1.0 else frozenset()
                if p.method == "rrf":
                    fused = rrf_fuse(
                        b, v, k=p.k, w_bm25=wb, w_vector=wv, boost=p.graph_boost, connected=connected, unseen=unseen
                    )
                else:
                    fused = convex_fuse(
                        b, v, w_bm25=wb, w_vector=wv, boost=p.graph_boost, connected=connected, unseen=unseen
                    )
        elif mode == VECTOR:
            fused = single_channel([(a, s) for a, s, _ in vector], k=p.k, vector=True)  # cut to the limit below
        else:
            fused = single_channel([(a, s) for a, s, _ in bm25], k=p.k)  # whole pool: `_exact_first` may reach down
        # the query's terms as the name match reads them: for exact names and each hit's explanation
        asked = self._index.bm25.query_terms(query) if mode != VECTOR or request.explain else None
        if mode != VECTOR and asked is not None:
            exact = [path for path, _s, _c in bm25[:EXACT_DEPTH]]  # a name, a line or a symbol BM25 ranks high
            symbols = sorted(t for t in asked.terms if _SYMBOL.match(t))
            fused = self._exact_first(
                fused, query, exact, best_chunk, asked if p.name_match > 0 else None, symbols, scope
            )
            if fused and fused[0].exact == "name":  # the query is a note's name: no "nothing holds it" caveat
                response.by_meaning_only = False
        if request.dedup and qv is not None and self._shaper is not None:  # dedup hook (A.11)
            # as VCP: over a result list of DEDUP_POOL, every note that adds a direction kept, then
            # cut to the limit (over the 5 hits MCP asks for, fewer than `_dedup.MIN_CANDIDATES` + 1,
            # it never dropped a copy; choosing just 5 of 20 by novelty replaced 4 of the best 5)
            pooled = max(limit, DEDUP_POOL)
            kept = self._shaper.dedup(fused[:pooled], best_chunk, qv, pooled)[:limit]
            if request.explain:
                stay = {h.path for h in kept}
                response.tagmemo.dedup_dropped = sum(h.path not in stay for h in fused[:limit])
            fused = kept
        with self._index.lock:  # a note deleted while the channels ran is left out, not an error
            docs = self._index.state.docs
            shown, successors = with_successors(
                _copies_after_originals([h for h in fused if h.path in docs], docs)[:limit],
                self._index.successors,
                lambda path: note_in_scope(scope, docs[path]),
            )
            for hit in shown[:limit]:
                explained = asked if request.explain else None  # each hit's name match, explained
                cid = best_chunk.get(hit.path, f"{hit.path}#0")  # a successor brought in: its first chunk
                response.hits.append(self._to_hit(hit, cid, query, explained, hit.path in unseen))
                response.hits[-1].superseded_by.extend(successors.get(hit.path, ()))
        mark_same_passages(response.hits)
        if response.hits:
            response.highlights.extend(
                retriever_pb2.Highlight(text=n.text, word_start=n.word_start, whole_word=n.whole_word)
                for n in self._snippet.needles(query)
            )
        if request.explain and response.tagmemo.matched_tags:
            _explain_hit_tags(response)
        if not response.hits:
            response.empty_scope.extend(self._empty_scope(request.scope))
        response.took_ms = (time.perf_counter() - started) * 1000
        return response

    def _empty_scope(self, typed: retriever_pb2.Scope) -> list[str]:
        """Each folder, diary and tag of a search's scope that no note is in, whatever its spelling
        (`VaultNames.scope`), said as a sentence: an agent that asked for `decision/` where the vault
        writes `decisions/` learns that the folder, not the query, found nothing."""
        parts = [(f"no note is in the folder {p}", Scope(path_prefixes=(p,))) for p in typed.path_prefixes]
        parts += [(f"no note is in the diary {d}", Scope(diaries=(d,))) for d in typed.diaries]
        parts += [(f"no note carries the tag #{t.lstrip('#')}", Scope(tags=(t,))) for t in typed.tags]
        since, until = _day(typed.since, "since"), _day(typed.until, "until")
        if since or until:  # `--since 2099-01-01` said only "no notes match"
            days = f"from {since} to {until}" if since and until else f"from {since} on" if since else f"until {until}"
            parts.append((f"no note is dated {days}", Scope(since=since, until=until)))
        if not parts:
            return []
        with self._index.lock:
            state = self._index.state
            return [
                said
                for said, part in parts
                if not list_scope(
                    state.days.scope(state.names.scope(part)), 1, state.docs, state.days, state.scope_candidates
                )
            ]

    def _exact_first(
        self,
        fused: list[FusedHit],
        query: str,
        candidates: list[str],
        best_chunk: dict[str, str],
        asked: Asked | None,
        symbols: list[str],
        scope: Scope,
    ) -> list[FusedHit]:
        """What the query is exactly, first: the notes it names (`Bm25Index.named_exactly`: it is
        their title or an alias; `asked`, its terms, given with the name match on), then the one note whose passage holds the
        query word for word (`QUOTE_MIN_WORDS` or more, case, punctuation and markup aside); then the
        rest, each in fused order. Someone who types a note's name wants that note, as a quick
        switcher gives it, and someone who pastes a line the vault holds wants the note it is in:
        the vector channel had put other notes first, those nearer a short name ("0.05", "Rename
        Note") or the notes a quoted changelog line is about. Dendron vault, hybrid nDCG@10: its 719
        unique titles 0.79 → 0.90, a sentence quoted from each of 745 notes 0.84 → 0.98
        (bench/README.md, 31st wave). A passage several notes hold word for word decides nothing. Only `candidates`
        are looked at, BM25's best notes: the title is in each chunk's text and the name match gives
        a named note the query's best score again, and a line's words are all in its note.

        Then the note that alone holds a symbol of a short query (`_SYMBOL`: `E0502`, `exit code 137`,
        `SQLITE_BUSY`; `SHORT_QUERY_WORDS`), when BM25 ranks it among `candidates`: an error code that one note of the
        vault records is what "how do I fix error E0502" asks for, where the vector channel had
        ranked notes about errors in general above it (5th of 5). A symbol several notes hold
        decides nothing.

        A note a short query names as a `[[link]]` would (its file name or path, or the one note titled
        so: `ddia` for `reading/ddia.md`) is named too, found or not: a note whose name is in no
        text of it (a file name unlike its title, an empty note Obsidian made for a link) was
        never a candidate, and "no note holds these words" was the answer."""
        words = _NOT_WORD.sub(" ", query.lower()).split()
        symbols = symbols if len(words) <= SHORT_QUERY_WORDS else []  # `error[E0502]:` is two words
        # a name as typed: words between spaces (`23 - Pedagogy`, `说明，用法` are three and one)
        named_so = asked is not None and len(query.split()) <= SHORT_QUERY_WORDS
        linked = self._named_by_link(query, scope) if named_so else None
        if linked is not None and all(h.path != linked for h in fused):
            fused = [FusedHit(linked), *fused]
        if not fused or not (candidates or linked):
            return fused
        bm25 = self._index.bm25
        quote = f" {' '.join(words)} " if len(words) >= QUOTE_MIN_WORDS else ""
        named_notes: set[str] = set()
        holding: list[str] = []
        with self._index.lock:
            docs = self._index.state.docs
            for path in candidates:
                doc = docs.get(path)
                if doc is None:
                    continue
                if asked is not None and bm25.named_exactly(asked, note_names(doc)):
                    named_notes.add(path)
                elif quote and path in best_chunk and _holds(doc, best_chunk[path], quote, words):
                    holding.append(path)
            sole = {holder for term in symbols if (holder := bm25.sole_holder(term)) in candidates}
        if linked is not None:
            named_notes.add(linked)
        line = holding[0] if len(holding) == 1 else None
        first = [h for h in fused if h.path in named_notes] + [h for h in fused if h.path == line]
        first += [h for h in fused if h.path in sole and h.path not in named_notes and h.path != line]
        if not first:
            return fused
        for hit in first:
            hit.exact = "name" if hit.path in named_notes else "line" if hit.path == line else "symbol"
        ahead = {h.path for h in first}
        return first + [h for h in fused if h.path not in ahead]

    def _named_by_link(self, query: str, scope: Scope) -> str | None:
        """The note a short query names as a wikilink would (`_exact_first`), when it is in `scope`."""
        with self._index.lock:
            path = self._index.graph.resolve(query.strip())
            doc = self._index.state.docs.get(path) if path is not None else None
            return path if doc is not None and note_in_scope(scope, doc) else None

    def _unseen(self, bm25: list[tuple[str, float]]) -> frozenset[str]:
        """The notes of BM25's pool that the vector channel cannot see yet: none of their chunks
        embedded (index lock held).

        While a vault is being embedded, the vector channel searches the chunks embedded so far:
        the newest notes first (`NoteIndex.missing_vectors`; path order before, the dendron
        vault's changelogs first), not a fair sample. Fused as though it were whole, it gave every
        note without vectors 0 in its channel and its own best the top: hybrid fell far below BM25
        alone (dendron's known items a quarter embedded in path order: nDCG@10 0.27 against 0.54). So a note
        it cannot see counts there as BM25 scores it, no evidence either way, and its weight is
        scaled by the share of chunks embedded (`bench/partial_vectors.py`)."""
        docs, vectors = self._index.state.docs, self._index.state.vectors
        return frozenset(
            path
            for path, _score in bm25
            if (doc := docs.get(path)) is not None and not any(chunk_id(path, c.index) in vectors for c in doc.chunks)
        )

    def _vector_left_out(self, mode: int, query: str, chunks: int, with_vectors: int) -> str:
        """Why the vector channel cannot run for this query ("" when it can)."""
        if self._embedder is None:
            return "no embedder is configured (BM25 only)"
        if not with_vectors:
            return f"no vectors yet: 0 of {chunks} chunks embedded"
        if not self._embedder.reads(query):  # a vector search alone answered noise as if it had run
            return f"the embedding model reads {', '.join(self._embedder.scripts)} only, not this query's script"
        return ""

    def _vector_search(self, vectors: list[np.ndarray], n: int, scope: Scope) -> list[tuple[str, float]]:
        """The top `n` chunks for one query vector, or for several (raw and reshaped) at each chunk's best."""
        with self._index.lock:
            return _best_per_chunk([self._index.vectors.search(v, n, scope) for v in vectors])

    def _pool(
        self, fetch: Callable[[int, Scope], list[tuple[str, float]]], pool: int, scope: Scope
    ) -> list[tuple[str, float, str]]:
        """`pool` distinct notes from a chunk ranking, fetching deeper while notes repeat or fall
        outside a date range the stores were not told of; past that depth, the range is told."""
        n = pool * 4
        while True:
            ranked = fetch(n, scope)
            notes = self._collapse(ranked, pool, scope)
            if len(notes) >= pool or len(ranked) < n:
                return notes
            if n >= pool * MAX_POOL_DEPTH:
                if scope.keep_paths is None and (scope.since or scope.until):  # a wide range, rarely reached
                    with self._index.lock:
                        listed = self._index.state.days.scope(scope, any_number=True)
                    return self._pool(fetch, pool, listed)
                return notes
            n *= 4

    def _collapse(self, ranked: list[tuple[str, float]], pool: int, scope: Scope) -> list[tuple[str, float, str]]:
        """Chunk hits → the first (best) chunk of each note, scope-filtered, at most `pool` notes."""
        seen: dict[str, tuple[float, str]] = {}
        docs = self._index.state.docs
        for cid, score in ranked:
            path, _ = split_chunk_id(cid)
            if path in seen or path not in docs:
                continue
            if not note_in_scope(scope, docs[path]):  # the stores were told the dates; a note redated since
                continue
            seen[path] = (score, cid)
            if len(seen) >= pool:
                break
        return [(path, score, cid) for path, (score, cid) in seen.items()]

    def _listed(self, scope: Scope, limit: int) -> list[retriever_pb2.SearchHit]:
        """The notes within `scope`, newest first (`list_scope`), each as a hit on its first
        chunk, scored 0. Under the index's lock."""
        state = self._index.state
        found = list_scope(scope, limit, state.docs, state.days, state.scope_candidates)
        successors = self._index.successors(found)
        hits = [self._to_hit(FusedHit(path=path), f"{path}#0", "", None) for path in found]
        for hit in hits:
            hit.superseded_by.extend(successors.get(hit.path, ()))
        return hits

    def _to_hit(
        self, hit: FusedHit, cid: str, query: str, asked: Asked | None, not_embedded: bool = False
    ) -> retriever_pb2.SearchHit:
        """The hit as answered; with its explanation when `asked` (the query's BM25 terms) is given."""
        path, index = split_chunk_id(cid)
        doc = self._index.state.docs[path]
        chunk = doc.chunks[index] if index < len(doc.chunks) else None
        out = retriever_pb2.SearchHit(
            path=path,
            title=doc.title,
            snippet=self._snippet(chunk.text if chunk else "", query),
            score=hit.score,
            diary=doc.diary,
            tags=list(doc.tags),
            chunk_index=index,
            start_line=chunk.start_line if chunk else 0,
            end_line=chunk.end_line if chunk else 0,
            date=doc.date,
            modified=utc_day(doc.mtime_ns),
            committed=doc.committed,
            problems=doc.problems,
        )
        if asked is not None:
            out.explain.CopyFrom(
                retriever_pb2.Explanation(
                    bm25=retriever_pb2.ChannelExplanation(
                        present=hit.bm25_rank > 0, rank=hit.bm25_rank, score=hit.bm25_score
                    ),
                    vector=retriever_pb2.ChannelExplanation(
                        present=hit.vector_rank > 0, rank=hit.vector_rank, score=hit.vector_score
                    ),
                    graph_boost=hit.boost,
                    fused_score=hit.score,
                    heading_path=list(chunk.heading_path) if chunk else [],
                    name_match=self._index.bm25.name_coverage(asked, note_names(doc)) if hit.bm25_rank > 0 else 0.0,
                    not_embedded=not_embedded,
                    exact=hit.exact,
                )
            )
        return out


def _copies_after_originals(hits: list[FusedHit], docs: Mapping[str, common_pb2.Document]) -> list[FusedHit]:
    """`hits` with each sync tool's conflicting copy (`Document.conflict_of`) right after the note
    it copies, when both are found. The copy repeats the note's title and often its text, and
    the shorter of the two won BM25's length normalisation: the copy's stale decision came first
    for the note's own name, and an agent acts on the first hit. Its ⚠ problem still says so."""
    found = {h.path for h in hits}
    held = {h.path: h for h in hits if (c := docs[h.path].conflict_of) and c in found and c != h.path}
    if not held:
        return hits
    after: dict[str, list[FusedHit]] = {}
    for hit in held.values():
        after.setdefault(docs[hit.path].conflict_of, []).append(hit)
    out: list[FusedHit] = []
    for hit in hits:
        if hit.path not in held:
            out.append(hit)
            out.extend(after.get(hit.path, ()))
    return out
