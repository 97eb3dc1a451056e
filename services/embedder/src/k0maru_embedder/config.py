"""Embedder settings (K0_ environment variables)."""

from __future__ import annotations

from pathlib import Path

from k0maru_common import Field, K0Settings


class EmbedderSettings(K0Settings):
    grpc_addr: str = Field(
        "127.0.0.1:50052",
        description="host:port this service's gRPC server binds: the port compose gives it (K0_EMBEDDER_TARGET names it, dns:///embedder:50052)",
    )
    model: str = Field("minilm-l6-int8", description="model preset: minilm-l6-int8, use-multilingual, custom, or http")
    model_path: Path | None = Field(None, description="ONNX file for the custom preset")
    tokenizer_path: Path | None = Field(None, description="tokenizer.json for the custom preset")
    dimension: int = Field(0, description="vector size for the custom preset")
    http_base_url: str = Field("", description="OpenAI-compatible API base URL for the http model (…/v1)")
    http_model: str = Field("", description="model name sent to the http endpoint")
    http_api_key: str = Field("", description="bearer token for the http endpoint")
    threads: int = Field(
        1,
        ge=1,
        description="onnxruntime intra-op threads of the session (bulk work and queries); the local"
        " launcher gives a lone embedder the machine's cores, up to 4",
    )
    query_threads: int = Field(
        0,
        ge=0,
        description="intra-op threads for Embed (queries), 0 = `threads`; another value loads a second"
        " session (≈ 70 MB more) for lower latency on an idle machine with cores to spare",
    )
    worker_nice: int = Field(
        0,
        ge=0,
        le=19,
        description="niceness of the background threads (stream worker, onnxruntime's pool, query-session load); the local launcher sets 10",
    )
    batch_size: int = Field(32, description="texts per ONNX run and per stream read")
    redis_url: str = Field("redis://127.0.0.1:6379/0", description="Redis/Valkey for jobs and the cache")
    claim_idle_ms: int = Field(15_000, description="reclaim jobs pending longer than this")
    max_attempts: int = Field(3, description="deliveries before a job goes to dead letter")
    cache_ttl_s: int = Field(
        30 * 86_400,
        ge=0,
        description="a cached vector is dropped this long after it was last computed or used, so edits do not grow the cache forever (0 = kept for good)",
    )
