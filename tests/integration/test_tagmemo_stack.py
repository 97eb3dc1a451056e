"""TagMemo through the real stack: untagged vaults are untouched, tags arrive live, rag_params hot-reloads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from k0maru.v1 import retriever_pb2
from k0maru_cli import Launcher
from k0maru_common import InvalidInput, StackClient
from tests.conftest import wait_for, write_notes

pytestmark = pytest.mark.integration
HYBRID, VECTOR = retriever_pb2.SEARCH_MODE_HYBRID, retriever_pb2.SEARCH_MODE_VECTOR

UNTAGGED = {
    "eng/sqlite.md": "# SQLite locking\n\n`SQLITE_BUSY` is returned when another connection holds the write lock.\n",
    "eng/cache.md": "# Caching\n\nA write-through cache keeps the store and the cache in step.\n",
    "eng/deploy.md": "# Deploying\n\nThe deployment uses docker compose and a vector database.\n",
    "life/garden.md": "# Garden\n\nTomatoes need sun and water every morning in summer.\n",
}
TAGGED = {
    "tagged/battery.md": "---\ntags: [battery, power]\n---\n# Battery drains fast\n\nThe phone loses charge overnight.\n",
    "tagged/charger.md": "---\ntags: [battery, charging]\n---\n# Charger is slow\n\nCharging takes hours.\n",
    "tagged/wifi.md": "# Wifi drops\n\nTag: wifi, network\n\nThe connection drops every few minutes.\n",
    "tagged/root.md": "# Rooting\n\nWhat do I gain from rooting? #root #rooting\n",
    "tagged/sms.md": "---\ntags: [sms, notifications]\n---\n# SMS twice\n\nI get notified twice for every message.\n",
    "tagged/camera.md": "---\ntags: [camera, photos]\n---\n# Camera blurry\n\nPhotos come out blurry.\n",
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StackClient, Path, Path]]:
    root = tmp_path_factory.mktemp("tagmemo")
    vault = write_notes(root / "vault", UNTAGGED)
    launcher = Launcher(vault, root / "data", embedders=1, http_port=0)
    state = launcher.start()
    client = state.client()
    yield client, vault, root / "data"
    client.close()
    launcher.stop()


def status(client: StackClient) -> retriever_pb2.IndexStatusResponse:
    reply: retriever_pb2.IndexStatusResponse = client.call(
        client.retriever.IndexStatus, retriever_pb2.IndexStatusRequest()
    )
    return reply


def search(client: StackClient, query: str, mode: int, tagmemo: bool, **extra: object) -> retriever_pb2.SearchResponse:
    reply: retriever_pb2.SearchResponse = client.call(
        client.retriever.Search,
        retriever_pb2.SearchRequest(
            query=query,
            limit=5,
            mode=mode,
            explain=True,
            tagmemo=retriever_pb2.TagMemoOptions(enabled=tagmemo, **extra),  # type: ignore[arg-type]
        ),
    )
    return reply


def ranked(reply: retriever_pb2.SearchResponse) -> list[tuple[str, float]]:
    return [(h.path, round(h.score, 9)) for h in reply.hits]


def indexed(client: StackClient, documents: int) -> bool:
    s = status(client)
    return s.documents == documents and s.chunks_with_vectors == s.chunks and s.tags_with_vectors == s.tags


def test_tagmemo_on_a_vault_without_tags_changes_nothing(stack):
    client, _vault, _data = stack
    wait_for(lambda: indexed(client, len(UNTAGGED)), 90, "every vector")
    assert status(client).tags == 0
    for mode in (HYBRID, VECTOR):
        for query in ("database lock held by another connection", "watering plants", "cache"):
            off = search(client, query, mode, tagmemo=False)
            on = search(client, query, mode, tagmemo=True, beta=0.4)
            assert ranked(on) == ranked(off)
            assert not on.tagmemo.applied
            assert on.tagmemo.reason == "the vault's tags have no vectors yet (or it has no tags)"
    with pytest.raises(InvalidInput, match=r"tagmemo\.beta"):  # INVALID_ARGUMENT, in every mode
        search(client, "cache", retriever_pb2.SEARCH_MODE_BM25, tagmemo=True, beta=1.5)


def test_tagged_notes_feed_the_tag_index_epa_and_the_query(stack):
    client, vault, _data = stack
    write_notes(vault, TAGGED)
    total = len(UNTAGGED) + len(TAGGED)
    wait_for(lambda: indexed(client, total), 90, "tagged notes and their tag vectors")
    s = status(client)
    assert s.tags == 11  # battery power charging wifi network root rooting sms notifications camera photos
    wait_for(lambda: status(client).epa_axes > 0, 30, "the EPA basis (≥ 8 tags) without a restart")
    reply = search(client, "my phone battery dies overnight", HYBRID, tagmemo=True, beta=0.4)
    assert reply.tagmemo.applied
    assert "battery" in [t.tag for t in reply.tagmemo.matched_tags]
    assert 0 < reply.tagmemo.beta <= 1
    assert reply.tagmemo.pyramid_levels and reply.tagmemo.dominant_axis
    top = reply.hits[0]
    assert top.path in ("tagged/battery.md", "tagged/charger.md")
    assert "battery" in [t.tag for t in top.explain.tagmemo_tags]
    # core tags given by the caller take part, in any case
    core = search(client, "my phone battery dies overnight", HYBRID, tagmemo=True, beta=0.4, core_tags=["CAMERA"])
    assert "camera" in core.tagmemo.core_tags and not core.tagmemo.core_tags_ignored
    # a core tag that takes no part says why (it vanished from the explanation without a word)
    odd = search(client, "my phone battery dies overnight", HYBRID, tagmemo=True, core_tags=["nosuchtag", "电池"])
    assert list(odd.tagmemo.core_tags_ignored) == ["nosuchtag: no note carries it", "电池: no note carries it"]
    # the last note carrying a tag takes the tag with it
    (vault / "tagged/camera.md").unlink()
    wait_for(lambda: status(client).tags == s.tags - 2, 30, "camera and photos to leave the tag index")


def test_rag_params_hot_reload_and_a_bad_file_changes_nothing(stack):
    client, _vault, data = stack
    wait_for(lambda: status(client).tags > 0, 60, "tags")
    path = data / "rag_params.json"
    path.write_text(json.dumps({"Retriever": {"tagMemoBeta": 0.31}}), encoding="utf-8")
    reply = search(client, "phone battery", HYBRID, tagmemo=True)
    assert reply.tagmemo.base_beta == pytest.approx(0.31)
    assert status(client).params_error == ""
    before = ranked(search(client, "phone battery", HYBRID, tagmemo=True))
    path.write_text('{"Retriever": {"tagMemoBeta": 7, "nonsense": 1}}', encoding="utf-8")
    error = status(client).params_error
    assert "rag_params.json" in error and "tagMemoBeta" in error
    again = search(client, "phone battery", HYBRID, tagmemo=True)
    assert again.tagmemo.base_beta == pytest.approx(0.31)  # the previous values stay in force
    assert ranked(again) == before
    path.write_text("{not json", encoding="utf-8")
    assert "rejected" in status(client).params_error
    path.unlink()
    assert status(client).params_error == ""


def test_dedup_drops_a_near_duplicate_and_keeps_rank_order(stack):
    client, vault, _data = stack
    text = "# Screen flickers\n\nThe screen flickers when brightness is low.\n"
    write_notes(vault, {"dup/one.md": text, "dup/two.md": text})
    wait_for(lambda: indexed(client, status(client).documents) and status(client).documents >= 11, 90, "duplicates")

    def paths(dedup: bool, limit: int = 10, mode: int = VECTOR) -> tuple[list[str], retriever_pb2.SearchResponse]:
        reply: retriever_pb2.SearchResponse = client.call(
            client.retriever.Search,
            retriever_pb2.SearchRequest(query="screen flickers", limit=limit, mode=mode, explain=True, dedup=dedup),
        )
        return [h.path for h in reply.hits], reply

    plain, _ = paths(False)
    deduped, reply = paths(True)
    assert {"dup/one.md", "dup/two.md"} <= set(plain[:2])
    assert len({"dup/one.md", "dup/two.md"} & set(deduped)) == 1
    assert reply.tagmemo.dedup_dropped == len(set(plain) - set(deduped)) >= 1  # of the 10 shown without it
    deeper, _ = paths(False, limit=20)  # chosen from VCP's 20 results: the list is filled from below
    assert deduped == [p for p in deeper if p in deduped]  # rank order kept
    for mode in (VECTOR, HYBRID):  # MCP's 5 hits: fewer than dedup's least list, it dropped nothing
        five, reply = paths(True, limit=5, mode=mode)
        assert len(five) == 5 and len({"dup/one.md", "dup/two.md"} & set(five)) == 1, (mode, five)
        assert reply.tagmemo.dedup_dropped == 1
