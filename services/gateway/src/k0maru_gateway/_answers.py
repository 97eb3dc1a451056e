"""What a search answer tells its reader about itself, worded once for MCP, the console and the CLI."""

from __future__ import annotations

from k0maru.v1 import retriever_pb2


def partial_channels(reply: retriever_pb2.SearchResponse) -> list[str]:
    """The channels that ran over part of the vault: while a vault is still being embedded, the
    vector channel searches only the chunks that have vectors, so a note may be missing from it."""
    vector_ran = any(c.channel == "vector" and c.ran for c in reply.channels)
    if not vector_ran or reply.vector_coverage >= 1.0:
        return []
    return [
        f"vector: {int(reply.vector_coverage * 100)} % of the vault's chunks have vectors so far (embedding is under way);"
        " notes not embedded yet can be found by BM25 only"
    ]
