"""Retriever gRPC service: Search, GetNote, Backlinks, IndexStatus, Reindex."""

from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass

import grpc

from k0maru.v1 import retriever_pb2, retriever_pb2_grpc
from k0maru_common import GrpcService, NotFound, NotReady, confine

from ._analysis import BM25Analyzer
from ._bm25 import Bm25Index
from ._follower import EventFollower
from ._index import NoteIndex
from ._pipeline import EmbeddingPipeline
from ._search import FusionParams, HybridSearcher, QueryEmbedder
from ._state import IndexState
from ._vectors import EdgeVectorStore, QdrantServerStore, VectorStore
from .config import RetrieverSettings

log = logging.getLogger(__name__)


class RetrieverServicer(retriever_pb2_grpc.RetrieverServicer):  # type: ignore[misc]
    def __init__(self, app: RetrieverApp) -> None:
        self._app = app

    def _ready(self) -> RetrieverApp:
        if not self._app.follower.ready.is_set():
            raise NotReady("the retriever is still building its index")
        return self._app

    def Search(
        self, request: retriever_pb2.SearchRequest, context: grpc.ServicerContext
    ) -> retriever_pb2.SearchResponse:
        return self._ready().searcher.search(request)

    def GetNote(self, request: retriever_pb2.GetNoteRequest, context: grpc.ServicerContext) -> retriever_pb2.Note:
        app = self._ready()
        confine(app.settings.vault, request.path)  # refuses escaping paths with a clear error
        with app.index.lock:
            doc = app.index.state.docs.get(request.path)
            if doc is None:
                raise NotFound(f"no indexed note at {request.path!r}")
            return retriever_pb2.Note(document=doc, backlinks=sorted(app.index.graph.backlinks(request.path)))

    def Backlinks(
        self, request: retriever_pb2.BacklinksRequest, context: grpc.ServicerContext
    ) -> retriever_pb2.BacklinksResponse:
        app = self._ready()
        confine(app.settings.vault, request.path)
        with app.index.lock:
            return retriever_pb2.BacklinksResponse(paths=sorted(app.index.graph.backlinks(request.path)))

    def IndexStatus(
        self, request: retriever_pb2.IndexStatusRequest, context: grpc.ServicerContext
    ) -> retriever_pb2.IndexStatusResponse:
        docs, chunks, vectors = self._app.index.counts()
        return retriever_pb2.IndexStatusResponse(
            vault=str(self._app.settings.vault),
            last_applied_seq=self._app.follower.last_applied_seq,
            documents=docs,
            chunks=chunks,
            chunks_with_vectors=vectors,
        )

    def Reindex(
        self, request: retriever_pb2.ReindexRequest, context: grpc.ServicerContext
    ) -> retriever_pb2.ReindexResponse:
        app = self._ready()
        with app.index.lock:
            app.index.clear()
            app.follower.reconcile()
        return retriever_pb2.ReindexResponse(documents=len(app.index.state.docs))


@dataclass
class RetrieverApp:
    settings: RetrieverSettings
    service: GrpcService
    index: NoteIndex
    follower: EventFollower
    pipeline: EmbeddingPipeline | None
    searcher: HybridSearcher
    query_embedder: QueryEmbedder | None

    def close(self) -> None:
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
        return EdgeVectorStore(settings.data_dir / "retriever" / f"vectors-{name}", dimension)
    return QdrantServerStore(settings.qdrant_url, f"k0_chunks_{name}", dimension)


def build_server(settings: RetrieverSettings) -> RetrieverApp:
    """Open every index. With embedders configured, their Info names the model and its dimension."""
    root = settings.data_dir / "retriever"
    query_embedder = QueryEmbedder(settings.embedder_target) if settings.embedder_target else None
    model_id, dimension = "", settings.vector_dim
    if query_embedder is not None:
        try:
            model_id, dimension, _scripts = query_embedder.model(settings.embedder_wait_s)
        except grpc.RpcError as exc:
            raise SystemExit(
                f"retriever: no embedder at {settings.embedder_target} answered within {settings.embedder_wait_s:.0f} s"
            ) from exc
    index = NoteIndex(
        Bm25Index(root / "bm25", BM25Analyzer()),
        open_vector_store(settings, model_id, dimension),
        IndexState(root / "state.sqlite"),
        dimension,
        model_id,
    )
    pipeline = EmbeddingPipeline(index, settings.redis_url) if settings.embedder_target else None
    follower = EventFollower(
        index,
        settings.scanner_addr,
        settings.events_addr,
        pipeline.enqueue if pipeline else (lambda _jobs: None),
        settings.catchup_interval_s,
    )
    params = FusionParams(
        method=settings.fusion,
        k=settings.rrf_k,
        w_bm25=settings.weight_bm25,
        w_vector=settings.weight_vector,
        adaptive=settings.fusion_adaptive,
        graph_boost=settings.graph_boost,
        gap_scale=settings.vector_gap_scale,
    )
    searcher = HybridSearcher(index, query_embedder, params, str(settings.vault))
    service = GrpcService("k0maru.v1.Retriever", settings.grpc_addr)
    app = RetrieverApp(settings, service, index, follower, pipeline, searcher, query_embedder)
    retriever_pb2_grpc.add_RetrieverServicer_to_server(RetrieverServicer(app), service.server)
    return app


def run(settings: RetrieverSettings) -> None:
    app = build_server(settings)
    try:
        with app.service:
            app.follower.start()
            if app.pipeline:
                app.pipeline.start()
            while not app.follower.ready.wait(0.1):
                if app.service.stopping:
                    break
            app.service.set_serving(True)
            with contextlib.suppress(KeyboardInterrupt):
                app.service.wait_for_termination()
    finally:
        app.close()
