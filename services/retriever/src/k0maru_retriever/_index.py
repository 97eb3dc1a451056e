"""NoteIndex: the one owner of the BM25 index, the vector store, the link graph and IndexState.

Every mutation goes through here under one lock, so the indexes never disagree with each
other. A chunk's vector is stored only when the key it was computed for (chunk text hash,
path and tags) is still the chunk's current key: results for older versions are dropped.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import xxhash

from k0maru.v1 import common_pb2

from ._bm25 import Bm25Index, ChunkRow
from ._graph import LinkGraph
from ._state import IndexState
from ._tags import TAG_PREFIX, TagIndex, tag_key
from ._vectors import VectorPoint, VectorStore


def chunk_id(path: str, index: int) -> str:
    return f"{path}#{index}"


def split_chunk_id(cid: str) -> tuple[str, int]:
    path, _, index = cid.rpartition("#")
    return path, int(index)


def vector_key(doc: common_pb2.Document, chunk: common_pb2.Chunk, model_id: str) -> str:
    """What a stored vector must match: the model, the text embedded and the payload it was filed with."""
    return xxhash.xxh3_64_hexdigest(f"{model_id}|{chunk.hash}|{doc.title}|{doc.path}|{','.join(doc.tags)}".encode())


def embed_text(doc: common_pb2.Document, chunk: common_pb2.Chunk) -> str:
    return f"{doc.title}\n{chunk.text}" if doc.title and doc.title not in chunk.text[:200] else chunk.text


@dataclass(frozen=True)
class EmbedJob:
    chunk_id: str
    key: str
    text: str


class NoteIndex:
    def __init__(
        self,
        bm25: Bm25Index,
        vectors: VectorStore,
        state: IndexState,
        dimension: int,
        model_id: str = "",
        tags: TagIndex | None = None,
    ) -> None:
        self.model_id = model_id
        self.tags = tags if tags is not None else TagIndex(None, model_id, dimension)
        self.bm25 = bm25
        self.vectors = vectors
        self.state = state
        self.graph = LinkGraph()
        self.dimension = dimension
        self.lock = threading.RLock()
        self._counted: tuple[tuple[int, int], int] = ((-1, -1), 0)
        self.graph.load({doc.path: [lk.target for lk in doc.links if lk.target] for doc in state.docs.values()})
        for doc in state.docs.values():
            self.tags.set_note(doc.path, doc.tags)

    def _tag_jobs(self, names: list[str]) -> list[EmbedJob]:
        return [EmbedJob(TAG_PREFIX + n, tag_key(n, self.model_id), n) for n in names]

    def retag(self) -> list[EmbedJob]:
        """Re-read every note's tags (after the tag blacklist changed); return the tag jobs needed."""
        with self.lock:
            self.tags.clear_notes()
            for doc in self.state.docs.values():
                self.tags.set_note(doc.path, doc.tags)
            self.tags.prune()
            return self._tag_jobs(self.tags.missing())

    def apply(self, doc: common_pb2.Document) -> list[EmbedJob]:
        """Index a document (replacing any older version); return the embedding jobs it needs."""
        with self.lock:
            old = self.state.docs.get(doc.path)
            self.bm25.delete_path(doc.path)
            prefix = "\n".join(filter(None, [doc.title, " ".join(doc.tags), " ".join(doc.aliases)]))
            for chunk in doc.chunks:
                heading = " ".join(chunk.heading_path)
                self.bm25.add(
                    ChunkRow(
                        chunk_id(doc.path, chunk.index),
                        doc.path,
                        doc.diary,
                        list(doc.tags),
                        f"{prefix}\n{heading}\n{chunk.text}",
                    )
                )
            self.graph.set_note(doc.path, [lk.target for lk in doc.links if lk.target])
            keys = {chunk_id(doc.path, c.index): (vector_key(doc, c, self.model_id), c) for c in doc.chunks}
            if old is not None:
                self._drop_vectors(
                    [chunk_id(old.path, c.index) for c in old.chunks if chunk_id(old.path, c.index) not in keys]
                )
            stale = [
                cid for cid, (key, _c) in keys.items() if cid in self.state.vectors and self.state.vectors[cid] != key
            ]
            self._drop_vectors(stale)
            self.state.put_doc(doc)
            return [
                EmbedJob(cid, key, embed_text(doc, c))
                for cid, (key, c) in keys.items()
                if self.state.vectors.get(cid) != key
            ] + self._tag_jobs(self.tags.set_note(doc.path, doc.tags))

    def remove(self, path: str) -> None:
        with self.lock:
            old = self.state.docs.get(path)
            self.bm25.delete_path(path)
            self.graph.remove_note(path)
            self.tags.drop_note(path)
            if old is not None:
                self._drop_vectors([chunk_id(path, c.index) for c in old.chunks])
                self.state.drop_doc(path)

    def _drop_vectors(self, cids: list[str]) -> None:
        present = [c for c in cids if c in self.state.vectors]
        if present:
            self.vectors.delete(present)
            for cid in present:
                self.state.drop_vector(cid)

    def apply_vectors(self, results: list[tuple[str, str, np.ndarray]]) -> int:
        """Store (chunk id, key, vector) results that still match; return how many were stored."""
        tag_results = [(c[len(TAG_PREFIX) :], k, v) for c, k, v in results if c.startswith(TAG_PREFIX)]
        stored = self.tags.apply_vectors(tag_results) if tag_results else 0
        with self.lock:
            points = []
            for cid, key, vector in results:
                if cid.startswith(TAG_PREFIX):
                    continue
                path, index = split_chunk_id(cid)
                doc = self.state.docs.get(path)
                if doc is None or index >= len(doc.chunks) or vector.shape != (self.dimension,):
                    continue
                chunk = doc.chunks[index]
                if vector_key(doc, chunk, self.model_id) != key:
                    continue  # computed for an older version of the chunk
                points.append(VectorPoint(cid, key, path, doc.diary, list(doc.tags), vector))
            self.vectors.upsert(points)
            for p in points:
                self.state.put_vector(p.chunk_id, p.hash)
            self.state.commit()
            return len(points) + stored

    def missing_vectors(self) -> list[EmbedJob]:
        with self.lock:
            jobs = []
            for doc in self.state.docs.values():
                for c in doc.chunks:
                    cid = chunk_id(doc.path, c.index)
                    key = vector_key(doc, c, self.model_id)
                    if self.state.vectors.get(cid) != key:
                        jobs.append(EmbedJob(cid, key, embed_text(doc, c)))
            return jobs + self._tag_jobs(self.tags.missing())

    def commit(self, last_applied_seq: int | None = None) -> None:
        with self.lock:
            self.bm25.commit()
            self.state.commit(last_applied_seq)

    def clear(self) -> None:
        with self.lock:
            self.bm25.clear()
            self.bm25.commit()
            self.vectors.clear()
            self.state.clear()
            self.tags.clear()
            self.graph = LinkGraph()

    def close(self) -> None:
        with self.lock:
            self.bm25.close()
            self.state.commit()
            self.vectors.close()
            self.state.close()
            self.tags.close()

    def counts(self) -> tuple[int, int, int]:
        """(documents, chunks, chunks with vectors), recounted only after a change."""
        with self.lock:
            marker = (len(self.state.docs), self.state.version)
            if self._counted[0] != marker:
                self._counted = (marker, sum(len(d.chunks) for d in self.state.docs.values()))
            return len(self.state.docs), self._counted[1], len(self.state.vectors)
