"""What a search answer tells its reader about itself, worded once for MCP, the console and the CLI."""

from __future__ import annotations

from k0maru.v1 import retriever_pb2


def partial_channels(reply: retriever_pb2.SearchResponse) -> list[str]:
    """The channels that ran over part of the vault: while the index is being built, BM25
    searches the notes indexed so far; while a vault is still being embedded, the vector channel
    searches only the chunks that have vectors, so a note may be missing from it."""
    out = []
    if reply.HasField("index_progress"):
        done, total = reply.index_progress.notes_indexed, reply.index_progress.notes_total
        out.append(
            f"bm25: the index is being built ({done:,} of {total:,} notes so far); notes not indexed yet cannot be found"
        )
    vector_ran = any(c.channel == "vector" and c.ran for c in reply.channels)
    if vector_ran and reply.vector_coverage < 1.0:
        out.append(
            f"vector: {int(reply.vector_coverage * 100)} % of the vault's chunks have vectors so far (embedding is"
            " under way); notes not embedded yet can be found by BM25 only"
            + (
                ", and hybrid weighs the vector channel by that share"
                if reply.mode_used == retriever_pb2.SEARCH_MODE_HYBRID
                else ""
            )
        )
    return out
