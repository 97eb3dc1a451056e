"""QueryShaper: the two TagMemo hooks of a search, kept out of the fusion code.

- `vectors(q, request)`: the query vector(s) the vector channel searches with. TagMemo off,
  or a vault without embedded tags: [q] unchanged. On: the V3.7 fused vector (or raw and
  fused, by `Retriever.vectorQuery` in rag_params.json), with an explanation.
- `dedup(hits, ...)`: SVD-residual selection over the candidates' best-chunk vectors.
- `fusion(base)`: the fusion knobs with rag_params.json's overrides applied.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from k0maru.v1 import retriever_pb2

from ._dedup import deduplicate
from ._fusion import FusedHit
from ._index import NoteIndex
from ._params import ParamsFile
from ._tagmemo import TagMemo

if TYPE_CHECKING:
    from ._search import FusionParams


class QueryShaper:
    def __init__(self, index: NoteIndex, params: ParamsFile) -> None:
        self._index = index
        self._params = params

    def fusion(self, base: FusionParams) -> FusionParams:
        r = self._params.current().retriever
        return replace(
            base,
            k=r.rrf_k if r.rrf_k is not None else base.k,
            w_bm25=r.weight_bm25 if r.weight_bm25 is not None else base.w_bm25,
            w_vector=r.weight_vector if r.weight_vector is not None else base.w_vector,
            graph_boost=r.graph_boost if r.graph_boost is not None else base.graph_boost,
        )

    def vectors(
        self, q: np.ndarray, request: retriever_pb2.SearchRequest
    ) -> tuple[list[np.ndarray], retriever_pb2.TagMemoExplanation | None]:
        if not request.tagmemo.enabled:
            return [q], None
        space = self._index.tags.space()
        if space is None:
            return [q], retriever_pb2.TagMemoExplanation(applied=False)
        params = self._params.current()
        memo = TagMemo(q, space, params)
        beta0 = request.tagmemo.beta or params.retriever.tagmemo_beta
        if beta0 is None:
            beta0 = memo.base_weight()
        core = list(dict.fromkeys(t.lower() for t in request.tagmemo.core_tags if t))
        if params.retriever.sense_core_tags:
            core = list(dict.fromkeys([*core, *memo.sense_core()]))
        shaped = memo.reshape(beta0, core)
        info = shaped.info
        if info is None:
            return [q], retriever_pb2.TagMemoExplanation(applied=False, base_beta=beta0)
        explanation = retriever_pb2.TagMemoExplanation(
            applied=True,
            matched_tags=[retriever_pb2.TagFactor(tag=t.name, weight=t.weight) for t in info.matched],
            core_tags=list(info.core),
            beta=info.beta,
            base_beta=beta0,
            logic_depth=info.logic_depth,
            entropy=info.entropy,
            resonance=info.resonance,
            coverage=info.coverage,
            novelty=info.novelty,
            dominant_axis=info.world,
            pyramid_levels=list(info.level_energies),
        )
        if params.retriever.vector_query == "raw+fused":
            return [q, shaped.vector], explanation
        return [shaped.vector], explanation

    def dedup(self, hits: list[FusedHit], best_chunk: dict[str, str], q: np.ndarray, limit: int) -> list[FusedHit]:
        """The hits SVD-residual deduplication keeps (at most `limit`), in selection order."""
        cids = [best_chunk[h.path] for h in hits]
        with self._index.lock:
            stored = self._index.vectors.vectors_of(cids)
        usable = [i for i, c in enumerate(cids) if c in stored]
        if len(usable) < len(hits) or not hits:
            return hits[:limit]  # some candidates have no vector yet: nothing to compare them by
        top = max(h.score for h in hits) or 1.0
        scores = np.array([hits[i].score / top for i in usable])
        picked = deduplicate(np.stack([stored[cids[i]] for i in usable]), scores, q, limit)
        return [hits[usable[i]] for i in picked]
