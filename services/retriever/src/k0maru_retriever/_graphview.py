"""The link graph as the console draws it: a note's 1–2 hop neighbourhood, or the whole vault.

Nodes are the indexed notes; edges are resolved wikilinks and Markdown links (unresolved
targets are not drawn). Edges come back as flat index pairs so 40,000 links stay small.
"""

from __future__ import annotations

from k0maru.v1 import retriever_pb2
from k0maru_common import InvalidInput, NotFound

from ._index import NoteIndex


def graph_view(index: NoteIndex, request: retriever_pb2.GraphRequest) -> retriever_pb2.GraphResponse:
    """Build the reply under the index lock (the caller holds it)."""
    hops = request.hops or 1
    if hops > 2:
        raise InvalidInput("hops must be 1 or 2")
    graph = index.graph
    docs = index.state.docs
    hop: dict[str, int] = {}
    if request.path:
        if request.path not in docs:
            raise NotFound(f"no indexed note at {request.path!r}")
        hop[request.path] = 0
        frontier = [request.path]
        for distance in range(1, hops + 1):
            following: list[str] = []
            for path in frontier:
                for near in graph.outgoing(path) | graph.backlinks(path):
                    if near not in hop and near in docs:
                        hop[near] = distance
                        following.append(near)
            frontier = following
    else:
        hop = dict.fromkeys(docs, 0)

    outgoing = {p: graph.outgoing(p) for p in hop}  # once per note: it builds a set each call
    degree = {p: len(out) + len(graph.backlinks(p)) for p, out in outgoing.items()}
    paths = sorted(hop, key=lambda p: (hop[p], -degree[p], p))
    truncated = bool(request.max_nodes) and len(paths) > request.max_nodes
    if truncated:
        paths = paths[: request.max_nodes]
    position = {p: i for i, p in enumerate(paths)}
    reply = retriever_pb2.GraphResponse(truncated=truncated, total_notes=len(docs))
    for p in paths:
        doc = docs[p]
        reply.nodes.add(path=p, title=doc.title, diary=doc.diary, degree=degree[p], hop=hop[p])
    edges: list[int] = []
    for source, p in enumerate(paths):
        for target in sorted(outgoing[p]):
            t = position.get(target)
            if t is not None:
                edges += (source, t)
    reply.edges.extend(edges)
    return reply
