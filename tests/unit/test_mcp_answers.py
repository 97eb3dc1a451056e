"""What recall_memory tells an agent about the channels behind an answer."""

from __future__ import annotations

from k0maru.v1 import retriever_pb2
from k0maru_gateway._answers import partial_channels


def _reply(coverage: float, vector_ran: bool) -> retriever_pb2.SearchResponse:
    return retriever_pb2.SearchResponse(
        vector_coverage=coverage,
        channels=[
            retriever_pb2.ChannelReport(channel="bm25", ran=True),
            retriever_pb2.ChannelReport(
                channel="vector", ran=vector_ran, reason="" if vector_ran else "no vectors yet"
            ),
        ],
    )


def test_a_vector_channel_over_part_of_the_vault_is_reported_partial():
    (note,) = partial_channels(_reply(0.4187, vector_ran=True))
    assert note.startswith("vector: 41 % of the vault's chunks have vectors") and "BM25 only" in note
    assert partial_channels(_reply(0.999, vector_ran=True))[0].startswith("vector: 99 %")  # never rounded up to all
    hybrid = _reply(0.5, vector_ran=True)
    hybrid.mode_used = retriever_pb2.SEARCH_MODE_HYBRID
    assert partial_channels(hybrid)[0].endswith("BM25 only, and hybrid weighs the vector channel by that share")


def test_a_whole_or_absent_vector_channel_is_not_partial():
    assert partial_channels(_reply(1.0, vector_ran=True)) == []
    assert partial_channels(_reply(0.0, vector_ran=False)) == []  # did not run: that is left_out, not partial
    assert partial_channels(retriever_pb2.SearchResponse(vector_coverage=0.5)) == []  # BM25 mode: no vector channel


def test_an_index_still_being_built_is_reported_partial_for_bm25():
    reply = _reply(0.0, vector_ran=False)
    reply.index_progress.notes_indexed, reply.index_progress.notes_total = 2400, 6571
    (note,) = partial_channels(reply)
    assert note == (
        "bm25: the index is being built (2,400 of 6,571 notes so far); notes not indexed yet cannot be found"
    )
    reply.index_progress.notes_indexed = 0  # set, even at nothing yet: the build is under way
    assert partial_channels(reply)[0].startswith("bm25: the index is being built (0 of 6,571")
