"""Vector stores behind one interface: Qdrant Edge in-process, or a Qdrant server.

Point ids are the xxh3-64 of the chunk id, so writes are idempotent; every point carries
its chunk's hash, path, diary, tags and folders (payload-indexed for scoped search).
"""

from __future__ import annotations

import logging
import shutil
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import xxhash

from ._bm25 import Scope, folders_of

PAYLOAD_KEYS = ("path", "diary", "tags", "folders")

log = logging.getLogger(__name__)


def point_id(chunk_id: str) -> int:
    return int(xxhash.xxh3_64_intdigest(chunk_id.encode()) >> 1)  # fits a signed int64 too


@dataclass(frozen=True)
class VectorPoint:
    chunk_id: str
    hash: str
    path: str
    diary: str
    tags: list[str]
    vector: np.ndarray

    def payload(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "hash": self.hash,
            "path": self.path,
            "diary": self.diary,
            "tags": list(self.tags),
            "folders": [*folders_of(self.path), self.path],
        }


class VectorStore(Protocol):
    def upsert(self, points: list[VectorPoint]) -> None: ...
    def delete(self, chunk_ids: list[str]) -> None: ...
    def search(self, vector: np.ndarray, limit: int, scope: Scope) -> list[tuple[str, float]]: ...
    def vectors_of(self, chunk_ids: list[str]) -> dict[str, np.ndarray]: ...
    def count(self) -> int: ...
    def clear(self) -> None: ...
    def close(self) -> None: ...


class EdgeVectorStore:
    """Qdrant Edge: the Qdrant engine inside this process, one shard directory."""

    def __init__(self, directory: Path, dimension: int) -> None:
        import qdrant_edge as qe

        self._qe = qe
        self._dir = directory
        self._dim = dimension
        self._lock = threading.Lock()
        self._shard = self._open()

    def _open(self) -> Any:
        qe = self._qe
        # One search thread: a vault's shard is one or a few segments, and handing a query to Edge's
        # pool cost more than it saved (12k points: p50 4.9 -> 4.1 ms wall, 5.2 -> 4.1 ms CPU)
        config = qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=self._dim, distance=qe.Distance.Cosine), max_search_threads=1
        )
        if self._dir.exists() and any(self._dir.iterdir()):
            try:
                shard = qe.EdgeShard.load(str(self._dir), config)  # older shards take the setting too
            except Exception as exc:  # another dimension: loaded as it is, as before (the index rebuilds it)
                log.warning("vector shard %s kept its own configuration: %s", self._dir, exc)
                shard = qe.EdgeShard.load(str(self._dir))
        else:
            self._dir.mkdir(parents=True, exist_ok=True)
            shard = qe.EdgeShard.create(str(self._dir), config)
            for key in PAYLOAD_KEYS:
                shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))
        return shard

    def upsert(self, points: list[VectorPoint]) -> None:
        if not points:
            return
        qe = self._qe
        with self._lock:
            self._shard.update(
                qe.UpdateOperation.upsert_points(
                    [qe.Point(id=point_id(p.chunk_id), vector=p.vector.tolist(), payload=p.payload()) for p in points]
                )
            )

    def delete(self, chunk_ids: list[str]) -> None:
        if chunk_ids:
            with self._lock:
                self._shard.update(self._qe.UpdateOperation.delete_points([point_id(c) for c in chunk_ids]))

    def search(self, vector: np.ndarray, limit: int, scope: Scope) -> list[tuple[str, float]]:
        qe = self._qe
        must = []
        if scope.diaries:
            must.append(qe.FieldCondition(key="diary", match=qe.MatchAny(list(scope.diaries))))
        for tag in scope.tags:
            must.append(qe.FieldCondition(key="tags", match=qe.MatchValue(tag)))
        if scope.path_prefixes and all(p.endswith("/") for p in scope.path_prefixes):
            must.append(
                qe.FieldCondition(key="folders", match=qe.MatchAny([p.rstrip("/") for p in scope.path_prefixes]))
            )
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(vector.tolist()),
            with_payload=True,
            filter=qe.Filter(must=must) if must else None,
        )
        with self._lock:
            hits = self._shard.query(request)
        return [(h.payload["chunk_id"], float(h.score)) for h in hits]

    def vectors_of(self, chunk_ids: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these chunks (those that have one)."""
        ids = {point_id(c): c for c in chunk_ids}
        with self._lock:
            records = self._shard.retrieve(list(ids), None, True)
        return {ids[r.id]: np.asarray(r.vector, dtype=np.float32) for r in records if r.id in ids and r.vector}

    def count(self) -> int:
        with self._lock:
            return int(self._shard.count(self._qe.CountRequest()))

    def clear(self) -> None:
        with self._lock:
            self._shard.close()
            shutil.rmtree(self._dir, ignore_errors=True)
            self._shard = self._open()

    def close(self) -> None:
        with self._lock:
            self._shard.close()


class QdrantServerStore:
    """A Qdrant server through qdrant-client (team deployment); ':memory:' runs it locally."""

    def __init__(self, url: str, collection: str, dimension: int) -> None:
        from qdrant_client import QdrantClient, models

        self._m = models
        self._collection = collection
        self._dim = dimension
        self._client = QdrantClient(location=":memory:") if url == ":memory:" else QdrantClient(url=url)
        self._local = url == ":memory:"
        self._ensure()

    def _ensure(self) -> None:
        m = self._m
        if not self._client.collection_exists(self._collection):
            self._client.create_collection(
                self._collection, vectors_config=m.VectorParams(size=self._dim, distance=m.Distance.COSINE)
            )
            if not self._local:  # the local engine has no payload indexes and warns about them
                for key in PAYLOAD_KEYS:
                    self._client.create_payload_index(self._collection, key, field_schema=m.PayloadSchemaType.KEYWORD)

    def upsert(self, points: list[VectorPoint]) -> None:
        if points:
            self._client.upsert(
                self._collection,
                points=[
                    self._m.PointStruct(id=point_id(p.chunk_id), vector=p.vector.tolist(), payload=p.payload())
                    for p in points
                ],
            )

    def delete(self, chunk_ids: list[str]) -> None:
        if chunk_ids:
            self._client.delete(
                self._collection, points_selector=self._m.PointIdsList(points=[point_id(c) for c in chunk_ids])
            )

    def search(self, vector: np.ndarray, limit: int, scope: Scope) -> list[tuple[str, float]]:
        m = self._m
        must: list[Any] = []
        if scope.diaries:
            must.append(m.FieldCondition(key="diary", match=m.MatchAny(any=list(scope.diaries))))
        for tag in scope.tags:
            must.append(m.FieldCondition(key="tags", match=m.MatchValue(value=tag)))
        if scope.path_prefixes and all(p.endswith("/") for p in scope.path_prefixes):
            must.append(
                m.FieldCondition(key="folders", match=m.MatchAny(any=[p.rstrip("/") for p in scope.path_prefixes]))
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # local mode warns past 20k points
            reply = self._client.query_points(
                self._collection,
                query=vector.tolist(),
                limit=limit,
                with_payload=True,
                query_filter=m.Filter(must=must) if must else None,
            )
        return [(str(p.payload["chunk_id"]), float(p.score)) for p in reply.points if p.payload]

    def vectors_of(self, chunk_ids: list[str]) -> dict[str, np.ndarray]:
        ids = {point_id(c): c for c in chunk_ids}
        records = self._client.retrieve(self._collection, ids=list(ids), with_vectors=True)
        return {
            ids[int(r.id)]: np.asarray(r.vector, dtype=np.float32)
            for r in records
            if int(r.id) in ids and isinstance(r.vector, list)
        }

    def count(self) -> int:
        return int(self._client.count(self._collection, exact=True).count)

    def clear(self) -> None:
        self._client.delete_collection(self._collection)
        self._ensure()

    def close(self) -> None:
        self._client.close()
