"""Retriever settings (K0_ environment variables)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from k0maru_common import Field, K0Settings


class RetrieverSettings(K0Settings):
    grpc_addr: str = Field(
        "127.0.0.1:50053",
        description="host:port this service's gRPC server binds: the port clients default to (K0_RETRIEVER_ADDR)",
    )
    vault: Path = Field(description="the vault (for naming it in responses)")
    data_dir: Path = Field(description="where the retriever keeps its indexes")
    scanner_addr: str = Field("127.0.0.1:50051", description="scanner gRPC address")
    events_addr: str = Field("tcp://127.0.0.1:5561", description="scanner ZeroMQ PUB address")
    embedder_target: str = Field(
        "",
        description="gRPC target of the embedders, e.g. ipv4:127.0.0.1:7001,127.0.0.1:7002 or dns:///embedder:50052 (empty: BM25 only)",
    )
    redis_url: str = Field("redis://127.0.0.1:6379/0", description="Redis/Valkey for embedding jobs")
    vector_backend: Literal["edge", "qdrant"] = Field("edge", description="Qdrant Edge in-process, or a Qdrant server")
    qdrant_url: str = Field(":memory:", description="Qdrant server URL for the 'qdrant' backend")
    hnsw_min_points: int = Field(
        5_000,
        ge=0,
        description="Qdrant Edge: build the HNSW index in a background process once this many points, and as many as it already holds (at most 20,000), are written without one (brute force until it is swapped in; 0 = never)",
    )
    vector_dim: int = Field(384, description="vector size when no embedder is configured (BM25 only)")
    embedder_wait_s: float = Field(120.0, description="how long to wait at start for an embedder to report its model")
    fusion: Literal["convex", "rrf"] = Field(
        "convex", description="hybrid fusion: convex (weighted min-max channel scores) or rrf (reciprocal ranks)"
    )
    rrf_k: int = Field(60, description="RRF constant")
    weight_bm25: float = Field(0.5, ge=0.0, description="fusion weight of the BM25 channel")
    weight_vector: float = Field(0.5, ge=0.0, description="fusion weight of the vector channel")
    fusion_adaptive: float = Field(
        1.25,
        ge=0.0,
        description="per-query weights: the vector weight times (vector gap / (K0_VECTOR_GAP_SCALE x BM25 spread)) to this power, each channel's best note against its 10th (0 = fixed weights)",
    )
    vector_gap_scale: float = Field(
        0.0,
        ge=0.0,
        description="the ratio of the vector channel's cosine gap to BM25's relative spread at which the weights are unchanged (0 = the model's own, measured per model)",
    )
    graph_boost: float = Field(
        0.1,
        ge=0.0,
        lt=1.0,
        description="rank bonus of a hit linked to or from another candidate: the share of the distance to rank 1 it closes in each channel",
    )
    name_match: float = Field(
        1.0,
        ge=0.0,
        description="BM25 channel: a note whose title or aliases the query covers gets this share of the query's best BM25 score, times the cube of the share of its name covered (0 = off)",
    )
    retriever_id: str = Field(
        "",
        pattern=r"^[A-Za-z0-9_-]{0,64}$",
        description="this retriever's name when several follow the same scanner (its own embedding results stream and Qdrant collection); empty for the only one",
    )
    embedder_gone_s: float = Field(
        30.0, gt=0.0, description="an embedder silent on the job stream this long is listed as gone by status"
    )
    catchup_interval_s: float = Field(2.0, description="poll the journal this often even without events")
    bm25_compact_quiet_s: float = Field(
        30.0,
        ge=0.0,
        description="once no note has changed for this long and edits left replaced documents in BM25's statistics (which rank edited notes lower), BM25 is rebuilt in the background and swapped in (0 = never; a restart no longer rebuilds it either)",
    )
    build_commit_s: float = Field(
        1.0,
        ge=0.0,
        description="an index build (first start, re-sync, reindex) commits this long after it starts, then at doubling intervals: searchable meanwhile, resumed after a crash (0 = after every 200 notes)",
    )
