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

from k0maru_common import Unreadable

from ._bm25 import Scope, folders_of
from ._disk import BYTES_PER_POINT, check_room
from ._hnsw import HnswBuilder, recover

PAYLOAD_KEYS = ("path", "diary", "tags", "folders")

log = logging.getLogger(__name__)
# what Qdrant Edge says of shard files it cannot read (a segment's state, a config: damaged)
EDGE_UNREADABLE = ("deserialize", "failed to read segment state", "corrupt")


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
    def index_state(self) -> tuple[int, bool]: ...  # (vectors in an HNSW index, a build running)
    def clear(self) -> None: ...
    def close(self) -> None: ...


class EdgeVectorStore:
    """Qdrant Edge: the Qdrant engine inside this process, one shard directory.

    With `hnsw_min_points` > 0, an HNSW index is built in a child process once that many points
    were written without one, and swapped in under this store's lock (`_hnsw.HnswBuilder`);
    until then queries are brute force. 0: never (brute force only).
    """

    def __init__(self, directory: Path, dimension: int, hnsw_min_points: int = 0) -> None:
        import qdrant_edge as qe

        self._qe = qe
        self._dir = directory
        self._dim = dimension
        self._hnsw_min = hnsw_min_points
        self._lock = threading.Lock()
        self._hnsw = HnswBuilder(
            directory, dimension, hnsw_min_points, self._lock, lambda: self._shard, self._reopen, self._load
        )
        # opening a shard writes (its WAL's next segment): on a full disk that too is a SIGBUS
        check_room(directory.parent, f"the vector store {directory}", 0)
        with self._lock:
            self._shard = self._open()

    def _config(self) -> Any:
        qe = self._qe
        # Edge indexes (in optimize()) only segments above its indexing threshold, in KB: half of
        # what starts a build, so the segment that made a build start gets its HNSW index
        optimizers = (
            qe.EdgeOptimizersConfig(indexing_threshold=max(1, self._hnsw_min * self._dim * 4 // 2048))
            if self._hnsw_min > 0
            else None
        )
        # One search thread: a vault's shard is one or a few segments, and handing a query to Edge's
        # pool cost more than it saved (12k points: p50 4.9 -> 4.1 ms wall, 5.2 -> 4.1 ms CPU)
        return qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=self._dim, distance=qe.Distance.Cosine),
            max_search_threads=1,
            optimizers=optimizers,
        )

    def _load(self, directory: Path) -> Any:
        """The shard at `directory`; Unreadable when Edge cannot read its files (damaged: the
        caller sets it aside), not when another process holds it (WouldBlock)."""
        try:
            return self._qe.EdgeShard.load(str(directory), self._config())  # older shards take the settings too
        except Exception as exc:  # another dimension: loaded as it is, as before (the index rebuilds it)
            _raise_if_unreadable(exc)  # no word about its configuration then
            log.warning("vector shard %s kept its own configuration: %s", directory, exc)
        try:
            return self._qe.EdgeShard.load(str(directory))
        except Exception as exc:
            _raise_if_unreadable(exc)
            raise

    def _open(self) -> Any:
        qe = self._qe
        recover(self._dir)  # a build or swap cut short by a crash
        if self._dir.exists() and any(self._dir.iterdir()):
            shard = self._load(self._dir)
        else:
            self._dir.mkdir(parents=True, exist_ok=True)
            shard = qe.EdgeShard.create(str(self._dir), self._config())
            for key in PAYLOAD_KEYS:
                shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))
        if self._hnsw_min > 0:
            self._hnsw.opened(shard)
            self._hnsw.maybe_start()
        return shard

    def _reopen(self) -> Any:
        """After an HNSW swap (lock held): the live directory now holds the indexed shard."""
        self._shard = self._load(self._dir)
        return self._shard

    @property
    def hnsw_building(self) -> bool:
        """An HNSW build is under way in the background."""
        return self._hnsw.building

    @property
    def hnsw_builds(self) -> int:
        """HNSW indexes swapped in since this store was opened."""
        return self._hnsw.builds

    def indexed_points(self) -> tuple[int, int]:
        """(points in HNSW segments, all points)."""
        with self._lock:
            info = self._shard.info()
        return int(info.indexed_vectors_count), int(info.points_count)

    def index_state(self) -> tuple[int, bool]:
        """(vectors in an HNSW index, a background build running): what IndexStatus reports. The
        engine counts a deleted point in its segment until the segment is rebuilt: after 1,500
        notes were deleted status said "651 with vectors, 5002 in an HNSW index"; at most all."""
        indexed, points = self.indexed_points()
        return min(indexed, points), self.hnsw_building

    def upsert(self, points: list[VectorPoint]) -> None:
        if not points:
            return
        qe = self._qe
        ids = [point_id(p.chunk_id) for p in points]
        check_room(self._dir.parent, f"vectors into {self._dir}", len(points) * BYTES_PER_POINT)
        with self._lock:
            self._shard.update(
                qe.UpdateOperation.upsert_points(
                    [
                        qe.Point(id=i, vector=p.vector.tolist(), payload=p.payload())
                        for i, p in zip(ids, points, strict=True)
                    ]
                )
            )
            self._hnsw.written(ids, upserted=True)

    def delete(self, chunk_ids: list[str]) -> None:
        if chunk_ids:
            ids = [point_id(c) for c in chunk_ids]
            check_room(self._dir.parent, f"vector deletions into {self._dir}", 0)
            with self._lock:
                self._shard.update(self._qe.UpdateOperation.delete_points([*ids]))
                self._hnsw.written(ids, upserted=False)

    def search(self, vector: np.ndarray, limit: int, scope: Scope) -> list[tuple[str, float]]:
        qe = self._qe
        must = []
        if scope.diaries:
            must.append(qe.FieldCondition(key="diary", match=qe.MatchAny(list(scope.diaries))))
        for group in scope.tag_groups():
            must.append(qe.FieldCondition(key="tags", match=qe.MatchAny(list(group))))
        if scope.path_prefixes and all(p.endswith("/") for p in scope.path_prefixes):
            must.append(
                qe.FieldCondition(key="folders", match=qe.MatchAny([p.rstrip("/") for p in scope.path_prefixes]))
            )
        if scope.keep_paths is not None:
            must.append(qe.FieldCondition(key="path", match=qe.MatchAny([*scope.keep_paths])))
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(vector.tolist()),
            with_payload=["chunk_id"],  # the only key read: all of it (folders, tags…) cost 1.4 of 5.5 ms
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
        self._hnsw.close()
        with self._lock:
            self._shard.close()
            shutil.rmtree(self._dir, ignore_errors=True)
            self._hnsw.reset()
            self._shard = self._open()

    def close(self) -> None:
        self._hnsw.close()
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
        for group in scope.tag_groups():
            must.append(m.FieldCondition(key="tags", match=m.MatchAny(any=list(group))))
        if scope.path_prefixes and all(p.endswith("/") for p in scope.path_prefixes):
            must.append(
                m.FieldCondition(key="folders", match=m.MatchAny(any=[p.rstrip("/") for p in scope.path_prefixes]))
            )
        if scope.keep_paths is not None:
            must.append(m.FieldCondition(key="path", match=m.MatchAny(any=[*scope.keep_paths])))
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

    def index_state(self) -> tuple[int, bool]:
        """The Qdrant server indexes on its own; IndexStatus reports 0 / false for it."""
        return 0, False

    def clear(self) -> None:
        self._client.delete_collection(self._collection)
        self._ensure()

    def close(self) -> None:
        self._client.close()


def _raise_if_unreadable(exc: Exception) -> None:
    """Unreadable for Edge's words of a shard it cannot read (not for one another process holds)."""
    said = str(exc).lower()
    if any(words in said for words in EDGE_UNREADABLE) and "wouldblock" not in said:
        raise Unreadable(str(exc)) from exc
