"""Retriever gRPC service: Search, GetNote, Backlinks, IndexStatus, Reindex, Graph."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from k0maru.v1 import common_pb2, retriever_pb2, retriever_pb2_grpc
from k0maru_common import (
    HEALTH_NAMES,
    CannotWrite,
    GrpcService,
    NotFound,
    NotReady,
    confine,
    decode_text,
    opened_or_set_aside,
    read_at_most,
    release_free_heap,
    vault_relative,
)

from ._analysis import BM25Analyzer, warm_up_han
from ._bm25 import Bm25Index
from ._compaction import Bm25Compactor
from ._follower import EventFollower
from ._fusion import model_gap_scale
from ._graph import folded_key, link_target
from ._graphview import graph_view
from ._index import NoteIndex
from ._params import FILE_NAME, ParamsFile
from ._search import FusionParams, HybridSearcher, QueryEmbedder
from ._shaping import QueryShaper
from ._state import IndexState
from ._tags import TagIndex, TagMaintainer
from ._vectors import EdgeVectorStore, QdrantServerStore, VectorStore
from .config import RetrieverSettings

HAN_WARM_UP_DELAY_S = 10.0  # after SERVING, before jieba's dictionary is loaded in the background
READ_WAIT_S = 5.0  # GetNote waits this long for a note's file, then answers the note as indexed
PROBLEM_NOTES_LISTED = 50  # notes with problems IndexStatus names (`notes_with_problems` counts them all)

if TYPE_CHECKING:
    from ._pipeline import EmbeddingPipeline

log = logging.getLogger(__name__)


class RetrieverServicer(retriever_pb2_grpc.RetrieverServicer):  # type: ignore[misc]
    def __init__(self, app: RetrieverApp) -> None:
        self._app = app
        # the notes with problems, and what the index was when they were listed (a launcher and
        # the console poll IndexStatus: the docs are walked again only once the index moved)
        self._problem_notes: tuple[int, list[retriever_pb2.NoteProblems]] = (0, [])
        self._problem_notes_at: tuple[object, ...] = ()

    def _notes_with_problems(self) -> tuple[int, list[retriever_pb2.NoteProblems]]:
        """How many indexed notes have problems, and the first PROBLEM_NOTES_LISTED by path."""
        app = self._app
        at = (app.follower.last_applied_seq, app.follower.progress, id(app.index.state), len(app.index.state.docs))
        if at != self._problem_notes_at:
            with app.index.lock:
                found = sorted((d.path, list(d.problems)) for d in app.index.state.docs.values() if d.problems)
            listed = [retriever_pb2.NoteProblems(path=p, problems=why) for p, why in found[:PROBLEM_NOTES_LISTED]]
            self._problem_notes = (len(found), listed)
            self._problem_notes_at = at
        return self._problem_notes

    def _ready(self) -> RetrieverApp:
        if not self._app.follower.ready.is_set():
            raise NotReady("the retriever is still building its index")
        return self._app

    def Search(
        self, request: retriever_pb2.SearchRequest, context: grpc.ServicerContext
    ) -> retriever_pb2.SearchResponse:
        """Answered as soon as BM25 holds notes; while a build is under way the answer says how far
        it has come (`index_progress`)."""
        follower = self._app.follower
        if not follower.searchable.is_set():
            raise NotReady("the retriever is still building its index (nothing is searchable yet); try again shortly")
        progress = follower.progress
        response = self._app.searcher.search(request)
        if progress is not None:
            response.index_progress.notes_indexed, response.index_progress.notes_total = progress
        return response

    def GetNote(self, request: retriever_pb2.GetNoteRequest, context: grpc.ServicerContext) -> retriever_pb2.Note:
        app = self._ready()
        vault_relative(request.path)  # refuses escaping paths with a clear error, asking no file system
        with app.index.lock:
            doc = app.index.state.docs[indexed_path(app, request.path)]
            graph = app.index.graph
            links = []
            for link in doc.links:
                side, found = graph.resolve_link(link_target(link), doc.path)
                links.append(retriever_pb2.LinkResolution(target=side, path=found or ""))
            note = retriever_pb2.Note(
                document=doc,
                backlinks=sorted(graph.backlinks(doc.path)),
                outgoing=sorted(graph.outgoing(doc.path)),
                links=links,
                superseded_by=app.index.successors([doc.path]).get(doc.path, []),
            )
        note.markdown, note.unreadable = app.note_files.read(doc.path)  # not under the lock: it may wait
        if note.unreadable:  # out of sight (an unmounted drive, a share that does not answer): as indexed
            note.markdown = "\n\n".join(chunk.text for chunk in doc.chunks)
        return note

    def Backlinks(
        self, request: retriever_pb2.BacklinksRequest, context: grpc.ServicerContext
    ) -> retriever_pb2.BacklinksResponse:
        app = self._ready()
        vault_relative(request.path)
        with app.index.lock:
            path = indexed_path(app, request.path)
            return retriever_pb2.BacklinksResponse(paths=sorted(app.index.graph.backlinks(path)))

    def IndexStatus(
        self, request: retriever_pb2.IndexStatusRequest, context: grpc.ServicerContext
    ) -> retriever_pb2.IndexStatusResponse:
        app = self._app
        docs, _chunks, _vectors = app.index.counts()
        progress = app.follower.progress
        # mid-build BM25 is behind the bookkeeping until the build's next commit, which a status
        # call must not bring forward (a launcher and the console poll this)
        check = app.index.check(commit=progress is None)
        mismatches = check.problems if progress is None else []
        workers = [app.follower.health()] + ([app.compactor.health()] if app.compactor.enabled else [])
        workers += [app.pipeline.health()] if app.pipeline else []
        embedders = app.pipeline.embedders() if app.pipeline else []
        problems = mismatches + [
            f"{w.name} {w.state}: {w.last_error}" for w in workers if w.state not in ("starting", "running")
        ]
        problems += [p for p in (app.follower.problem, app.pipeline.problem if app.pipeline else "") if p]
        pending, dead = app.pipeline.queue_depth() if app.pipeline else (0, 0)
        tags = app.index.tags
        app.params.current()  # a status call also notices a changed file
        with tags.lock:
            tag_count, tag_vectors = len(tags.note_count), len(tags.vectors)
            epa_axes = tags.epa.dimension if tags.epa is not None else 0
        indexed, building = app.index.vectors.index_state()
        with_problems, problem_notes = self._notes_with_problems()
        return retriever_pb2.IndexStatusResponse(
            notes_with_problems=with_problems,
            problem_notes=problem_notes,
            bm25_deleted=app.index.bm25.replaced(),
            bm25_compactions=app.compactor.compactions,
            build=None
            if progress is None
            else retriever_pb2.IndexProgress(notes_indexed=progress[0], notes_total=progress[1]),
            vault=str(app.settings.vault),
            last_applied_seq=app.follower.last_applied_seq,
            documents=docs,
            chunks=check.chunks,
            chunks_with_vectors=check.vectors,
            workers=[w.to_proto() for w in workers],
            bm25_documents=check.bm25_documents,
            vector_points=check.vector_points,
            generation=check.generation,
            consistent=not mismatches,
            problem="; ".join(problems),
            embed_queue_pending=pending,
            embed_dead_letter=dead,
            tags=tag_count,
            tags_with_vectors=tag_vectors,
            epa_axes=epa_axes,
            params_error="; ".join(filter(None, [app.params.error, tags.epa_error])),
            embedding_model=app.index.model_id,
            embedders=[
                retriever_pb2.EmbedderConsumer(name=e.name, pending=e.pending, idle_ms=e.idle_ms, gone=e.gone)
                for e in embedders
            ],
            instance=app.settings.retriever_id,
            vectors_indexed=indexed,
            index_building=building,
        )

    def Reindex(
        self, request: retriever_pb2.ReindexRequest, context: grpc.ServicerContext
    ) -> retriever_pb2.ReindexResponse:
        app = self._ready()
        with app.index.lock:
            app.index.clear()
            app.follower.reconcile()
        return retriever_pb2.ReindexResponse(documents=len(app.index.state.docs))

    def Graph(self, request: retriever_pb2.GraphRequest, context: grpc.ServicerContext) -> retriever_pb2.GraphResponse:
        app = self._ready()
        if request.path:
            vault_relative(request.path)
        with app.index.lock:
            if request.path:
                asked, request = request, retriever_pb2.GraphRequest()
                request.CopyFrom(asked)
                request.path = indexed_path(app, asked.path)
            return graph_view(app.index, request)

    def Superseded(
        self, request: retriever_pb2.SupersededRequest, context: grpc.ServicerContext
    ) -> retriever_pb2.SupersededResponse:
        replaced = self._ready().index.replaced()
        return retriever_pb2.SupersededResponse(
            notes=[common_pb2.Supersession(path=path, superseded_by=replaced[path]) for path in sorted(replaced)]
        )


def indexed_path(app: RetrieverApp, typed: str) -> str:
    """The indexed note a request names: its path as given, else the one note spelled so as names
    compare (any case, any Unicode normal form: `Café.md` typed finds the `Café.md` macOS wrote
    decomposed), else the note a wikilink so written leads to (`storm log`, a title, an alias,
    `Project/Beta`), the wikilink itself too (`[[decisions/auth-v2]]`, `[[Auth design|the design]]`:
    the loadout lists notes so). NotFound otherwise, naming the candidates when the name fits several
    (a title several notes share, a file name in several folders: the first by path depth was read,
    silently) or when a path's folders hold no such note and another folder does (a note moved
    since: the other note of its name was read, silently)."""
    names, graph = app.index.state.names, app.index.graph
    if typed in app.index.state.docs:
        return typed
    elsewhere: list[str] = []
    for side in _link_sides(typed):
        found = names.note(side) or graph.resolve(side)
        if found is None:
            continue
        if _stem_key(found) == _stem_key(side):
            return found  # its path, as written or spelled so (any case, any normal form)
        tails = [p for p in graph.named(side) if graph.ends_with(p, side)]  # the notes its name or path fits
        if len(tails) > 1:
            raise NotFound(
                f"{side!r} names {len(tails)} notes, in different folders: give one's path "
                f"({', '.join(map(repr, tails[:5]))})"
            )
        if found not in tails and "/" in side.strip("/"):  # a path no note has: another folder's of its name
            elsewhere.extend(graph.named(side))
            continue
        return found
    if elsewhere:
        raise NotFound(f"no indexed note at {typed!r}; a note of that name: {', '.join(map(repr, elsewhere[:5]))}")
    candidates = names.notes(typed) or graph.titled((_link_sides(typed) or [typed])[0])
    if candidates:
        raise NotFound(f"no indexed note at {typed!r}; it could be any of {', '.join(map(repr, candidates[:5]))}")
    raise NotFound(f"no indexed note at {typed!r}")


_WIKILINK = re.compile(r"!?\[\[([^\[\]]+)\]\]")


def _stem_key(path: str) -> str:
    """A path without its note extension, as names compare."""
    return folded_key(path.strip().lstrip("/").removesuffix(".md").removesuffix(".markdown"))


def _link_sides(typed: str) -> list[str]:
    """`typed`, or for a whole wikilink (`[[a|b]]`, `![[a#Part]]`) its target and its label (Obsidian
    writes the target first, Dendron and GitHub's wikis the label), without the heading or block."""
    link = _WIKILINK.fullmatch(typed.strip())
    if link is None:
        return [typed]
    return [side.split("#", 1)[0].strip() for side in link.group(1).split("|") if side.split("#", 1)[0].strip()]


MAX_NOTE_BYTES = 2_000_000


def read_markdown(vault: Path, path: str) -> tuple[str, str]:
    """The note's current text for display (bounded), and why it cannot be read ("" when it can)."""
    try:
        return decode_text(read_at_most(confine(vault, path), MAX_NOTE_BYTES), "replace"), ""
    except OSError as exc:
        return "", f"its file cannot be read now ({exc.strerror or exc})"


class NoteFiles:
    """Reads notes' files (`read_markdown`) on threads of its own, waiting READ_WAIT_S at most. A
    vault on a network share or FUSE file system that stops answering holds a read in the
    kernel until it answers again: each `GetNote` held one of gRPC's 16 request threads, and 16
    `read_note` calls stopped every search. Now a read that does not answer is the note as
    indexed, and why; the threads it holds come back when the file system does."""

    def __init__(self, vault: Path, threads: int = 4) -> None:
        self._vault = vault
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="note-file")

    def read(self, path: str) -> tuple[str, str]:
        future = self._pool.submit(read_markdown, self._vault, path)
        try:
            return future.result(timeout=READ_WAIT_S)
        except FutureTimeout:
            future.cancel()  # still queued behind reads that wait: dropped
            return "", f"its file did not answer in {READ_WAIT_S:g} s (a network share that does not answer?)"

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class RetrieverApp:
    settings: RetrieverSettings
    service: GrpcService
    index: NoteIndex
    follower: EventFollower
    pipeline: EmbeddingPipeline | None
    searcher: HybridSearcher
    query_embedder: QueryEmbedder | None
    params: ParamsFile
    tag_maintainer: TagMaintainer
    compactor: Bm25Compactor
    note_files: NoteFiles

    def close(self) -> None:
        if self.pipeline:  # first: the follower may be queueing a first build's jobs
            self.pipeline.request_stop()
        self.note_files.close()
        self.compactor.stop()
        self.tag_maintainer.stop()
        self.follower.stop()
        if self.pipeline:
            self.pipeline.stop()
        if self.query_embedder:
            self.query_embedder.close()
        self.index.close()


def open_vector_store(settings: RetrieverSettings, model_id: str, dimension: int) -> VectorStore:
    """One collection per model: vectors of different models never mix."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", model_id or "none")
    if settings.vector_backend == "edge":
        folder = settings.data_dir / "retriever" / f"vectors-{name}"
        return opened_or_set_aside(
            "the vector store",
            folder,
            lambda: EdgeVectorStore(folder, dimension, hnsw_min_points=settings.hnsw_min_points),
        )
    suffix = f"_{settings.retriever_id}" if settings.retriever_id else ""  # a second retriever: its own
    return QdrantServerStore(settings.qdrant_url, f"k0_chunks_{name}{suffix}", dimension)


MODEL_FILE = "embedders-model.json"  # the model the embedders served last: {model, dimension, scripts}
REMEMBERED_MODEL_WAIT_S = 10.0  # how long a restart waits for an embedder when it knows the model


def _embedders_model(settings: RetrieverSettings, embedder: QueryEmbedder, memory: Path) -> tuple[str, int]:
    """(model id, dimension) the embedders serve, as their Info says; remembered in `memory`.

    A retriever restarted while no embedder answers (they are down too, or still loading) opens
    the store of the model they served last and answers from BM25 meanwhile, instead of waiting
    `embedder_wait_s` and exiting (search was down for as long as the embedders were). If they
    come back with another model, `on_other_model` makes the retriever restart to use it."""
    known = None
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        saved = json.loads(memory.read_text())
        known = (str(saved["model"]), int(saved["dimension"]), tuple(str(s) for s in saved["scripts"]))
    wait = settings.embedder_wait_s if known is None else min(settings.embedder_wait_s, REMEMBERED_MODEL_WAIT_S)
    try:
        model_id, dimension, scripts = embedder.model(wait)
    except grpc.RpcError as exc:
        if known is None:
            raise SystemExit(
                f"retriever: no embedder at {settings.embedder_target} answered within {wait:.0f} s"
            ) from exc
        model_id, dimension, scripts = known
        embedder.scripts = scripts
        log.warning(
            "no embedder answered within %.0f s; serving with %s, the model they served last "
            "(searches answer from BM25 until one is back)",
            wait,
            model_id,
        )
    else:
        if known != (model_id, dimension, scripts):
            memory.write_text(json.dumps({"model": model_id, "dimension": dimension, "scripts": list(scripts)}))
    embedder.model_id = model_id
    return model_id, dimension


def build_server(settings: RetrieverSettings) -> RetrieverApp:
    """Open every index. With embedders configured, their Info names the model and its dimension."""
    root = settings.data_dir / "retriever"
    query_embedder = (
        QueryEmbedder(settings.embedder_target, token=settings.grpc_token) if settings.embedder_target else None
    )
    model_id, dimension = "", settings.vector_dim
    root.mkdir(parents=True, exist_ok=True)
    if query_embedder is not None:
        model_id, dimension = _embedders_model(settings, query_embedder, root / MODEL_FILE)
    model_name = re.sub(r"[^A-Za-z0-9_-]", "_", model_id or "none")
    # a store that cannot be read (damaged by a crash of the machine) is set aside and built again:
    # BM25 from the stored documents, the bookkeeping from the scanner, vectors and tag vectors
    # by the embedders (from their cache, mostly); the checks at start-up make them agree again
    analyzer = BM25Analyzer()
    tags_file = root / f"tags-{model_name}.sqlite"
    index = NoteIndex(
        opened_or_set_aside("the BM25 index", root / "bm25", lambda: Bm25Index(root / "bm25", analyzer)),
        open_vector_store(settings, model_id, dimension),
        opened_or_set_aside("the index bookkeeping", root / "state.sqlite", lambda: IndexState(root / "state.sqlite")),
        dimension,
        model_id,
        opened_or_set_aside(
            "the tag index",
            tags_file,
            lambda: TagIndex(tags_file, model_id, dimension, query_embedder.scripts if query_embedder else ()),
        ),
    )
    service = GrpcService(HEALTH_NAMES["retriever"], settings.grpc_addr, token=settings.grpc_token)
    if query_embedder is not None:  # the embedders were switched to another model: restart to use it
        query_embedder.on_other_model = lambda other: service.fail(f"the embedders now answer with {other}")
    if settings.embedder_target:  # the Redis client (~0.2 s to import) only when there are embedders
        from ._pipeline import EmbeddingPipeline
    pipeline = (
        EmbeddingPipeline(
            index,
            settings.redis_url,
            on_give_up=service.fail,
            instance=settings.retriever_id,
            gone_after_s=settings.embedder_gone_s,
        )
        if settings.embedder_target
        else None
    )
    follower = EventFollower(
        index,
        settings.scanner_addr,
        settings.events_addr,
        pipeline.enqueue if pipeline else None,
        settings.catchup_interval_s,
        on_give_up=service.fail,
        token=settings.grpc_token,
        first_commit_s=settings.build_commit_s,
    )
    params = FusionParams(
        method=settings.fusion,
        k=settings.rrf_k,
        w_bm25=settings.weight_bm25,
        w_vector=settings.weight_vector,
        adaptive=settings.fusion_adaptive,
        graph_boost=settings.graph_boost,
        gap_scale=settings.vector_gap_scale or model_gap_scale(model_id),
        name_match=settings.name_match,
    )
    rag_params = ParamsFile(settings.data_dir / FILE_NAME)
    tag_maintainer = TagMaintainer(
        index,
        rag_params,
        pipeline.enqueue if pipeline else (lambda _jobs: None),
        root / f"epa-{model_name}.npz",
    )
    searcher = HybridSearcher(index, query_embedder, params, str(settings.vault), QueryShaper(index, rag_params))
    app = RetrieverApp(
        settings,
        service,
        index,
        follower,
        pipeline,
        searcher,
        query_embedder,
        rag_params,
        tag_maintainer,
        Bm25Compactor(index, follower.ready, settings.bm25_compact_quiet_s, on_give_up=service.fail),
        NoteFiles(settings.vault),
    )
    retriever_pb2_grpc.add_RetrieverServicer_to_server(RetrieverServicer(app), service.server)
    return app


def run(settings: RetrieverSettings) -> None:
    try:
        app = build_server(settings)
    except CannotWrite as exc:  # a full disk: said in one line; the supervisor tries again later
        raise SystemExit(f"retriever: {exc}") from exc
    try:
        with app.service:
            app.follower.start()
            app.tag_maintainer.start()
            app.compactor.start()
            if app.pipeline:
                app.pipeline.start()
            while not app.follower.ready.wait(0.1):
                if app.service.stopping:
                    break
            app.service.set_serving(True)
            release_free_heap()  # the catch-up's temporaries (documents fetched, BM25 batches)
            # jieba's dictionary (grouped by character, `_han`) opens on first Han text; open it off
            # the health path, so the first Chinese query does not wait, but not in the seconds right
            # after start: its first build on a machine takes ~1 s of CPU holding the GIL
            warm_up = threading.Timer(HAN_WARM_UP_DELAY_S, warm_up_han)
            warm_up.name, warm_up.daemon = "jieba-warm-up", True
            warm_up.start()
            with contextlib.suppress(KeyboardInterrupt):
                app.service.wait_for_termination()
    finally:
        app.close()
    app.service.exit_if_failed()
