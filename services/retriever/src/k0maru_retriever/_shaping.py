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
from k0maru_common import InvalidInput, model_reads

from ._dedup import deduplicate
from ._fusion import FusedHit
from ._index import NoteIndex
from ._params import ParamsFile
from ._tagmemo import TagMemo, TagSpace
from ._tags import normalise_tag

if TYPE_CHECKING:
    from ._search import FusionParams


class QueryShaper:
    def __init__(self, index: NoteIndex, params: ParamsFile) -> None:
        self._index = index
        self._params = params

    @staticmethod
    def check(request: retriever_pb2.SearchRequest) -> None:
        """Refuse TagMemo options no search can honour, whatever the mode."""
        beta = request.tagmemo.beta
        if not 0.0 <= beta <= 1.0:  # also NaN
            raise InvalidInput(f"tagmemo.beta must be between 0 and 1 (0 = configured), not {beta:g}")

    def fusion(self, base: FusionParams) -> FusionParams:
        """The fusion knobs of rag_params.json over the K0_* settings (hot-reloaded)."""
        r = self._params.current().retriever
        return replace(
            base,
            method=r.fusion if r.fusion is not None else base.method,
            k=r.rrf_k if r.rrf_k is not None else base.k,
            w_bm25=r.weight_bm25 if r.weight_bm25 is not None else base.w_bm25,
            w_vector=r.weight_vector if r.weight_vector is not None else base.w_vector,
            adaptive=r.fusion_adaptive if r.fusion_adaptive is not None else base.adaptive,
            gap_scale=r.vector_gap_scale or base.gap_scale,  # 0 or null: the setting in force
            graph_boost=r.graph_boost if r.graph_boost is not None else base.graph_boost,
            name_match=r.name_match if r.name_match is not None else base.name_match,
        )

    def vectors(
        self, q: np.ndarray, request: retriever_pb2.SearchRequest
    ) -> tuple[list[np.ndarray], retriever_pb2.TagMemoExplanation | None]:
        if not request.tagmemo.enabled:
            return [q], None
        space = self._index.tags.space()
        if space is None:
            return [q], retriever_pb2.TagMemoExplanation(
                applied=False, reason="the vault's tags have no vectors yet (or it has no tags)"
            )
        params = self._params.current()
        memo = TagMemo(q, space, params)
        beta0 = request.tagmemo.beta or params.retriever.tagmemo_beta
        if beta0 is None:
            beta0 = memo.base_weight()
        core = list(dict.fromkeys(n for n in (normalise_tag(t) for t in request.tagmemo.core_tags) if n))
        ignored = self._ignored(core, space)  # dropped without a word before
        if params.retriever.sense_core_tags:
            core = list(dict.fromkeys([*core, *memo.sense_core()]))
        shaped = memo.reshape(beta0, core, details=request.explain)
        info = shaped.info
        if info is None:
            return [q], retriever_pb2.TagMemoExplanation(
                applied=False,
                base_beta=beta0,
                reason="no tag of the vault matched the query",
                core_tags_ignored=ignored,
            )
        vectors = [q, shaped.vector] if params.retriever.vector_query == "raw+fused" else [shaped.vector]
        if not request.explain:  # the explanation is only read with explain: skip building it
            return vectors, retriever_pb2.TagMemoExplanation(applied=True, beta=info.beta, base_beta=beta0)
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
            core_tags_ignored=ignored,
        )
        return vectors, explanation

    def _ignored(self, core: list[str], space: TagSpace) -> list[str]:
        """The caller's core tags the tag space has no row for, each as "tag: why"."""
        tags = self._index.tags
        out = []
        for name in core:
            if name in space.row_of or name in space.row_of_lower:
                continue
            why = (
                "blacklisted (tagBlacklist)"
                if name in tags.blacklist
                else "no note carries it"
                if not tags.note_count.get(name)
                else "in a script the embedding model does not read"
                if not model_reads(name, tags.scripts)
                else "no vector yet"
            )
            out.append(f"{name}: {why}")
        return out

    def dedup(self, hits: list[FusedHit], best_chunk: dict[str, str], q: np.ndarray, limit: int) -> list[FusedHit]:
        """The hits SVD-residual deduplication keeps (at most `limit`), in their rank order."""
        cids = [best_chunk[h.path] for h in hits]
        with self._index.lock:
            stored = self._index.vectors.vectors_of(cids)
        usable = [i for i, c in enumerate(cids) if c in stored]
        if len(usable) < len(hits) or not hits:
            return hits[:limit]  # some candidates have no vector yet: nothing to compare them by
        top = max(h.score for h in hits) or 1.0
        scores = np.array([hits[i].score / top for i in usable])
        picked = deduplicate(np.stack([stored[cids[i]] for i in usable]), scores, q, limit)
        # the greedy selection decides which hits stay; they keep their rank order (in selection
        # order, novelty outranks relevance: −0.044 nDCG@10 on tagged_android, bench/README.md)
        return [hits[usable[i]] for i in sorted(picked)]
