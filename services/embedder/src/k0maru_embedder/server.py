"""Embedder gRPC service: Embed (query vectors, low latency) and Info; runs a StreamWorker."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import grpc
import numpy as np
import redis

from k0maru.v1 import embedder_pb2, embedder_pb2_grpc
from k0maru_common import HEALTH_NAMES, DependencyFailed, GrpcService, InvalidInput, K0Error, NotReady, TooLarge

from ._model import OnnxEmbedder, TextEmbedder
from ._presets import ModelPreset, resolve_preset
from ._worker import StreamWorker, ThroughputMeter, lower_this_thread
from .config import EmbedderSettings

log = logging.getLogger(__name__)
MAX_TEXTS = 256
MAX_TEXT_CHARS = 100_000


PROBE_TEXT = "k0maru health probe"  # short: paid endpoints count its tokens


def probe(embedder: TextEmbedder) -> None:
    """Embed one text through the real backend (ONNX session or HTTP endpoint); raise when it cannot."""
    vector = embedder.embed([PROBE_TEXT])
    if vector.shape != (1, embedder.preset.dimension) or not np.isfinite(vector).all():
        raise DependencyFailed(f"the model answered a {vector.shape} vector, expected (1, {embedder.preset.dimension})")


class EmbedderServicer(embedder_pb2_grpc.EmbedderServicer):  # type: ignore[misc]
    def __init__(self, meter: ThroughputMeter) -> None:
        self._loaded: TextEmbedder | None = None
        self._meter = meter
        self.worker: StreamWorker | None = None
        self.problem = "starting"  # "" once the model answered and the stream worker runs
        self.announced: ModelPreset | None = None  # the configured model, named by Info while it loads

    def loaded(self, embedder: TextEmbedder) -> None:
        self._loaded = embedder

    def state(self) -> str:
        """What Info reports, never a fixed word: SERVING; DEGRADED while the stream worker
        restarts after a failure or waits for Redis (queries still answered: they need no Redis);
        NOT_SERVING once it gave up or while the model does not answer; each followed by the reason."""
        if self.problem:
            return f"NOT_SERVING: {self.problem}"
        health = self.worker.health() if self.worker is not None else None
        if health is not None and health.state in ("starting", "running") and self.worker and self.worker.waiting:
            return f"DEGRADED: {health.name} takes no jobs: {self.worker.waiting}"
        if health is None or health.state in ("starting", "running"):
            return "SERVING"
        word = "DEGRADED" if health.state == "restarting" else "NOT_SERVING"
        return f"{word}: {health.name} {health.state}: {health.last_error}"

    @property
    def _embedder(self) -> TextEmbedder:
        if self._loaded is None:
            raise NotReady("the model is still loading")
        return self._loaded

    def Embed(self, request: embedder_pb2.EmbedRequest, context: grpc.ServicerContext) -> embedder_pb2.EmbedResponse:
        if not request.texts:
            raise InvalidInput("no texts to embed")
        if len(request.texts) > MAX_TEXTS:
            raise TooLarge(f"at most {MAX_TEXTS} texts per call")
        for i, text in enumerate(request.texts):
            if len(text) > MAX_TEXT_CHARS:
                raise TooLarge(f"text {i} has {len(text)} characters; the limit is {MAX_TEXT_CHARS}")
            if not text.strip():
                raise InvalidInput(f"text {i} is empty")
        vectors = self._embedder.embed(list(request.texts), is_query=request.is_query)
        self._meter.add(len(request.texts))
        preset = self._embedder.preset
        return embedder_pb2.EmbedResponse(
            vectors=[embedder_pb2.Vector(values=row.tolist()) for row in vectors],
            model=preset.model_id,
            dimension=preset.dimension,
        )

    def Info(
        self, request: embedder_pb2.EmbedderInfoRequest, context: grpc.ServicerContext
    ) -> embedder_pb2.EmbedderInfo:
        # while the model loads, Info already names it (so the retriever opens its collection in
        # parallel); `state` says NOT_SERVING: starting until it answers
        preset = self._loaded.preset if self._loaded is not None else self.announced
        if preset is None:
            raise NotReady("the model is still loading")
        return embedder_pb2.EmbedderInfo(
            model=preset.model_id,
            dimension=preset.dimension,
            max_tokens=preset.max_tokens,
            pid=os.getpid(),
            processed=self._meter.processed,
            chunks_per_s=self._meter.per_second(),
            state=self.state(),
            scripts=list(preset.scripts),
            workers=[self.worker.health().to_proto()] if self.worker else [],
        )


def load_embedder(settings: EmbedderSettings, threads: int) -> TextEmbedder:
    if settings.model == "http":
        from ._http import HttpEmbedder, HttpSettings  # httpx only for an HTTP endpoint

        return HttpEmbedder(
            HttpSettings(
                settings.http_base_url,
                settings.http_model,
                settings.http_api_key,
                settings.dimension,
                settings.batch_size,
            )
        )
    preset = resolve_preset(settings.model, settings.model_path, settings.tokenizer_path, settings.dimension)
    return OnnxEmbedder(preset, threads=threads, batch_size=settings.batch_size)


@dataclass
class EmbedderApp:
    """The service and what it owns: the model sessions (loaded by `load`), Redis, the worker."""

    settings: EmbedderSettings
    service: GrpcService
    servicer: EmbedderServicer
    meter: ThroughputMeter
    redis: redis.Redis | None = None
    worker: StreamWorker | None = None

    def load(self) -> None:
        """Load the model (health stays NOT_SERVING meanwhile), probe it until it answers, then
        connect the stream worker. Queries are answered by this session too (unless
        `K0_QUERY_THREADS` asks `load_query_session` for a second one)."""
        settings = self.settings
        try:
            embedder = self._load_session()
        except K0Error as exc:
            log.error("cannot start: %s", exc)
            raise SystemExit(f"embedder: {exc}") from exc
        self.servicer.loaded(embedder)  # Info names the model from now on; health waits for the probe
        backoff = 0.5
        while not self.service.stopping:
            try:
                probe(embedder)
                break
            except K0Error as exc:  # an HTTP endpoint that is down: NOT_SERVING, and Info says why
                self.servicer.problem = f"model probe failed: {exc}"
                log.warning("%s; retrying in %.1f s", self.servicer.problem, backoff)
                self.service.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
        if self.service.stopping:  # stopped while the model did not answer: nothing to start
            return
        self.redis = redis.Redis.from_url(settings.redis_url)
        self.worker = StreamWorker(
            self.redis,
            embedder,
            self.meter,
            settings.batch_size,
            settings.claim_idle_ms,
            settings.max_attempts,
            on_give_up=self.service.fail,
            nice=settings.worker_nice,
            cache_ttl_s=settings.cache_ttl_s,
        )
        self.servicer.worker = self.worker
        self.servicer.problem = ""

    def _load_session(self) -> TextEmbedder:
        """The stream's session. With several threads, loaded in a thread niced to
        `worker_nice`: onnxruntime's pool threads inherit the niceness of the thread that starts
        them, and half of a batch's work runs on them (the load itself is niced too, then). A
        query's own share runs in its gRPC handler's thread at the process's priority."""
        settings = self.settings
        if settings.threads <= 1 or settings.worker_nice <= 0 or settings.model == "http":
            return load_embedder(settings, settings.threads)

        def load() -> TextEmbedder:
            lower_this_thread(settings.worker_nice)
            return load_embedder(settings, settings.threads)

        with ThreadPoolExecutor(1, thread_name_prefix="session-load") as loader:
            return loader.submit(load).result()  # its errors are raised here

    def load_query_session(self) -> None:
        """The second session that answers Embed (`query_threads`), loaded after the service is
        SERVING: a second model load is not on the start-up path. Until it is there, and if it
        cannot load, the stream session answers queries."""
        settings = self.settings
        if settings.model == "http" or settings.query_threads in (0, settings.threads):
            log.info("queries share the stream's session (%d threads)", settings.threads)
            return
        lower_this_thread(settings.worker_nice)  # background work, like the stream worker
        try:
            queries = load_embedder(settings, settings.query_threads)
        except K0Error as exc:
            log.warning("query session not loaded (%s); the stream session answers queries", exc)
            return
        if not self.service.stopping:
            self.servicer.loaded(queries)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()
        if self.redis is not None:
            self.redis.close()


def build_server(settings: EmbedderSettings) -> EmbedderApp:
    """Bind gRPC with health NOT_SERVING and register the servicer; `load` brings the model."""
    service = GrpcService(HEALTH_NAMES["embedder"], settings.grpc_addr, token=settings.grpc_token)
    meter = ThroughputMeter()
    servicer = EmbedderServicer(meter)
    if settings.model != "http":  # a local preset is known before it loads; a bad one fails in load()
        with contextlib.suppress(K0Error):
            servicer.announced = resolve_preset(
                settings.model, settings.model_path, settings.tokenizer_path, settings.dimension
            )
    embedder_pb2_grpc.add_EmbedderServicer_to_server(servicer, service.server)
    return EmbedderApp(settings, service, servicer, meter)


def run(settings: EmbedderSettings) -> None:
    app = build_server(settings)
    try:
        with app.service:
            app.load()
            if app.worker is not None:  # None when stopped while probing
                app.worker.start()
                app.service.set_serving(True)
                threading.Thread(target=app.load_query_session, name="query-session", daemon=True).start()
                with contextlib.suppress(KeyboardInterrupt):
                    app.service.wait_for_termination()
    finally:
        app.close()
    app.service.exit_if_failed()
