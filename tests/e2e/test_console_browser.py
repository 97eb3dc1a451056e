"""The console in a real browser (Debian's chromium through Playwright) on a real stack.

Every page is driven as a user would: search and open a hit, follow a backlink, the graph,
an offloaded log's diagram as `<svg>`, the scoreboard moving, token login. Each test asserts
the page asked nothing of any other origin. Screenshots go to `.artifacts/screenshots/`
(git-ignored). The JSON API is checked against the console's own OpenAPI description.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from k0maru.v1 import offload_pb2, retriever_pb2, scanner_pb2
from k0maru_cli import Launcher, free_port
from k0maru_common import InvalidInput, StackClient
from k0maru_gateway._mcp import build_mcp
from tests.conftest import git, git_commit, wait_for, write_notes

pytestmark = pytest.mark.e2e
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SHOTS = Path(__file__).resolve().parents[2] / ".artifacts" / "screenshots"
NOTES = {
    "ops/lighthouse.md": "---\ntags: [ops, coast]\nowner: keeper\n---\n# Lighthouse\n\nThe lighthouse keeper logs every storm. See [[storm log]] and [[missing note]].\n",
    "ops/storm log.md": "# Storm log\n\n## Winter\n\nEvery storm at the lighthouse is written down here. #weather\n",
    "misc/storm drain.md": "# Storm drain\n\nA storm drain by the lighthouse road, unrelated to the keeper.\n",
    "evil.md": '# Evil\n\n<script>window.__pwned = 1</script>\n\n<img src=x onerror="window.__pwned = 2">\n\n[click](javascript:window.__pwned=3)\n\n![Screenshot](https://example.invalid/shot.png)\n\nlighthouse\n\nSee [Rust](https://en.wikipedia.org/wiki/Rust_(programming_language)) here.\n',
    "中文/借用.md": "# 借用检查器\n\n可变借用与共享借用重叠时报错 E0502。参见 [[Lighthouse]]。\n",
    # Dendron writes the label first: `[[label|dendron://vault/note]]`, `[[label|note]]`
    "wiki/from dendron.md": "# From Dendron\n\n[[the drain|dendron://site/misc/storm drain]], [[borrowing|借用]], [[Storm drain|a drain]]\n"
    "\nAnd a Markdown link: [the drain again](<../misc/storm drain.md#Some heading>).\n"
    "\n%% a private remark on [[Secret Note]] %%\n",
    # frontmatter values no side card is wide enough for: a URL, a long list, a long text
    "misc/long front.md": "---\nsource: https://example.org/"
    + "a-very-long-path-segment-" * 12
    + "\nreferences_and_related_material_key: ["
    + ", ".join(f"item{i}" for i in range(80))
    + "]\nsummary: "
    + "word " * 400
    + "\n---\n# Long front\n\nA note whose frontmatter is long.\n",
    # a Logseq journal: titled by its date, a tag of two words written `#[[…]]`
    "journals/2026_12_04.md": "- Packed the kayak for the quay #[[release train]] #quay\n",
    # a plan, and the one that replaces it (a link property, as Obsidian writes one)
    "plans/ferry timetable.md": "# Ferry timetable\n\nThe ferry leaves the harbour at dawn.\n",
    "plans/boat schedule.md": '---\nsupersedes: "[[ferry timetable]]"\n---\n# Boat schedule\n\nFrom May on, every half hour.\n',
    # indexed with a problem: its frontmatter is no YAML
    "misc/broken front.md": "---\ntitle: [oops\n---\n# Broken front\n\nIndexed all the same.\n",
}
TOKEN = "s3cret-token"


def get_json(url: str, token: str = "") -> tuple[int, Any]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        body = json.loads(err.read())
        err.close()
        return err.code, body


def failing_log(tag: str) -> str:
    lines = [f"[{tag}] step {i}: compiling module_{i}" for i in range(120)]
    lines += [
        "Traceback (most recent call last):",
        '  File "app/config.py", line 42, in load',
        "    return settings[key]",
        "KeyError: 'token'",
    ]
    return "\n".join(lines) + "\n"


class Stack:
    def __init__(self, launcher: Launcher, base: str, client: StackClient, vault: Path) -> None:
        self.launcher, self.base, self.client, self.vault = launcher, base, client, vault

    def offload(self, tag: str) -> offload_pb2.OffloadResult:
        request = offload_pb2.OffloadLogRequest(text=failing_log(tag), task_id=tag, command="pytest -x", exit_code=1)
        return self.client.call(self.client.offload.OffloadLog, request)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("console")
    vault = write_notes(root / "vault", NOTES)
    # Obsidian's Excluded files: the archive is no note of the index (the wait below counts NOTES)
    write_notes(vault, {".obsidian/app.json": '{"userIgnoreFilters": ["Archive/"]}', "Archive/old.md": "# Old\n"})
    (vault / "scan.md").write_bytes(b"%PDF-1.7\x00\x01")  # a file the index cannot take
    git(vault, "init", "-q")  # a team's vault in git: a note that names no date goes by its commit's
    git_commit(vault, "2025-06-15", {})
    launcher = Launcher(
        vault, root / "data", embedders=1, model="minilm-l6-int8", http_port=0
    )  # the English model: the test checks a Han query on it
    state = launcher.start()
    base = state.console_url.rstrip("/")
    client = state.client()  # carries the stack's gRPC token
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            _code, status = get_json(f"{base}/api/status")
            index = status.get("index") or {}
            if index.get("documents") == len(NOTES) and index.get("chunks") == index.get("chunks_with_vectors"):
                break
            time.sleep(0.3)
        else:
            pytest.fail(f"stack did not finish indexing: {status}")

        def dated() -> bool:  # the history is read in the background; notes fetched before come again
            request = retriever_pb2.SearchRequest(query="", limit=50, scope=retriever_pb2.Scope(path_prefixes=["ops/"]))
            return all(h.committed == "2025-06-15" for h in client.call(client.retriever.Search, request).hits)

        wait_for(dated, 60, "the notes dated by their commit")
        yield Stack(launcher, base, client, vault)
    finally:
        client.close()
        launcher.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        if os.environ.get("K0_REQUIRE_BROWSER"):
            pytest.fail(f"{CHROMIUM} is missing (apt-get install chromium); K0_REQUIRE_BROWSER is set")
        pytest.skip(f"{CHROMIUM} is not installed (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, stack: Stack, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh tab; after the test, every request it made must have gone to the console's origin."""
    context = browser.new_context(viewport={"width": 1360, "height": 860})
    tab = context.new_page()
    seen: list[str] = []
    tab.on("request", lambda r: seen.append(r.url))
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.set_default_timeout(20_000)
    yield tab
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / f"{request.node.name}.png"), full_page=True)
    context.close()
    foreign = [u for u in seen if not u.startswith(stack.base + "/") and not u.startswith("data:")]
    assert not foreign, f"requests outside {stack.base}: {foreign}"
    assert not errors, f"script errors on the page: {errors}"
    assert seen, "the page made no request at all"


def open_page(tab: Any, stack: Stack, route: str) -> None:
    tab.goto(f"{stack.base}/#/{route}")


def test_search_debugger_explains_hits_and_opens_the_note(page: Any, stack: Stack):
    code, api = get_json(f"{stack.base}/api/search?q=lighthouse%20storm&mode=hybrid&explain=1")
    assert code == 200
    boosted = {h["path"] for h in api["hits"] if h["explain"]["graph_boost"] > 0}
    assert boosted and len(boosted) < len(api["hits"])  # the vault is built so that some, not all, are linked
    open_page(page, stack, "search?q=lighthouse%20storm&mode=hybrid")
    page.wait_for_selector(".hit")
    hits = page.locator(".hit")
    assert hits.count() == len(api["hits"])
    badged = {
        hits.nth(i).get_attribute("data-path")
        for i in range(hits.count())
        if hits.nth(i).locator(".badge.graph").count()
    }
    assert badged == boosted
    badge = page.locator(".badge.graph").first
    assert badge.inner_text() == "+Graph Boost"
    assert badge.evaluate("e => getComputedStyle(e).borderColor") == "rgb(16, 185, 129)"  # emerald
    # the name match: a badge where the query holds at least half of the note's title or an alias
    named = {h["path"] for h in api["hits"] if h["explain"]["name_match"] >= 0.5}
    assert named  # "lighthouse storm" holds the whole title of the lighthouse note
    assert named == {
        hits.nth(i).get_attribute("data-path")
        for i in range(hits.count())
        if hits.nth(i).locator(".badge.name").count()
    }
    first = hits.first
    assert "BM25 #" in first.inner_text() and "vector #" in first.inner_text() and "fused" in first.inner_text()
    assert first.locator(".snippet mark").count() >= 1
    assert page.locator(".chan.ran").count() == 2  # hybrid: both channels ran
    shares = [float(t.rsplit("weight ", 1)[1]) for t in page.locator(".chan.ran").all_inner_texts()]
    assert sum(shares) == pytest.approx(1.0, abs=0.011)  # each channel's per-query fusion weight
    assert sum(c["weight"] for c in api["channels"]) == pytest.approx(1.0, abs=1e-3)
    assert all(c["took_ms"] > 0 for c in api["channels"])  # where the retriever's time went
    # the page repeats the API's query: its vector is cached, so no embedding time is shown
    assert re.search(r"\d ms \(bm25 \d+\.\d, vector \d+\.\d\) · asked hybrid", page.inner_text("#meta"))
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(15, 23, 42)"
    assert "JetBrains Mono" in page.evaluate("getComputedStyle(document.body).fontFamily")
    page.evaluate("document.fonts.ready")
    assert page.evaluate("document.fonts.check(\"14px 'JetBrains Mono'\", 'lighthouse')")
    target = page.locator('.hit[data-path="ops/lighthouse.md"]')
    target.locator(".snippet").click()
    page.wait_for_selector("#note-body h1")
    assert page.url.endswith("#/note/" + "ops%2Flighthouse.md")
    assert page.locator("#note-body h1").inner_text() == "Lighthouse"
    assert page.locator(".fm").inner_text().count("keeper") == 1
    assert page.locator(".side .tags a").all_inner_texts() == ["#ops", "#coast"]
    assert page.locator("#note-body .unresolved").inner_text() == "missing note"


def test_search_says_how_long_the_query_embedding_took_unless_it_was_cached(page: Any, stack: Stack):
    url = f"{stack.base}/api/search?q=" + urllib.request.quote("keeper of a stormy light") + "&mode=hybrid"
    first = get_json(url)[1]
    again = get_json(url)[1]  # the retriever keeps recent query vectors: no embedding the second time
    assert first["query_embedding_ms"] > 0 and again["query_embedding_ms"] == 0
    vector = next(c for c in again["channels"] if c["name"] == "vector")
    assert vector["ran"] and vector["took_ms"] > 0
    bm25_only = get_json(f"{stack.base}/api/search?q=keeper&mode=bm25")[1]
    assert bm25_only["query_embedding_ms"] == 0
    assert [c["took_ms"] > 0 for c in bm25_only["channels"]] == [True, False]  # vector: not asked for
    open_page(page, stack, "search?q=" + urllib.request.quote("a keeper's lamp in the storm") + "&mode=hybrid")
    page.wait_for_selector(".hit")
    assert re.search(r"\d ms \(embedding \d+\.\d, bm25 \d+\.\d, vector \d+\.\d\)", page.inner_text("#meta"))


def test_a_hit_on_a_note_with_problems_carries_a_badge_that_says_so(page: Any, stack: Stack):
    code, api = get_json(f"{stack.base}/api/search?q=indexed%20all%20the%20same&mode=bm25")
    assert code == 200 and api["hits"][0]["path"] == "misc/broken front.md"
    assert api["hits"][0]["problems"][0].startswith("frontmatter is not valid YAML")
    assert all(h["problems"] == [] for h in api["hits"][1:])
    open_page(page, stack, "search?q=indexed%20all%20the%20same&mode=bm25")
    page.wait_for_selector(".hit")
    badge = page.locator('.hit[data-path="misc/broken front.md"] .badge.problem')
    assert badge.inner_text() == "⚠ frontmatter is not valid YAML"
    assert badge.get_attribute("title").startswith("frontmatter is not valid YAML")
    assert page.locator(".badge.problem").count() == 1


def test_terms_are_highlighted_at_word_starts_and_the_boost_is_rounded(page: Any, stack: Stack):
    open_page(page, stack, "search?q=ghthouse%20keep%20storm&mode=hybrid")
    page.wait_for_selector(".hit .snippet mark")
    marked = {m.lower() for m in page.locator(".snippet mark").all_inner_texts()}
    # a word is marked whole where it starts with what the search looks for ("keeper" for "keep")
    assert any(m.startswith("keep") for m in marked) and any(m.startswith("storm") for m in marked), marked
    assert "ghthouse" not in marked  # never inside "lighthouse"
    chips = [t for t in page.locator(".hit .score").all_inner_texts() if t.startswith("graph")]
    assert chips and all(re.fullmatch(r"graph \+\d\.\d{4}", t) for t in chips), chips


def test_the_words_a_question_searches_for_are_highlighted_and_not_its_question_words(page: Any, stack: Stack):
    code, api = get_json(f"{stack.base}/api/search?q=how%20do%20we%20keep%20the%20storms&mode=bm25")
    assert code == 200 and api["hits"]
    # what the retriever placed the snippets by: "storms" by the part it shares with its stem
    assert api["highlights"] == [
        {"text": "keep", "word_start": True, "whole_word": False},
        {"text": "storm", "word_start": True, "whole_word": False},
    ]
    open_page(page, stack, "search?q=how%20do%20we%20keep%20the%20storms&mode=bm25")
    page.wait_for_selector(".hit .snippet mark")
    marked = {m.lower() for m in page.locator(".snippet mark").all_inner_texts()}
    assert marked and all(m.startswith(("keep", "storm")) for m in marked), marked


def test_a_hit_put_first_for_its_name_says_so(page: Any, stack: Stack):
    """ "storm log" is a note's name: the retriever puts that note first, before fusion's order,
    and the debugger says why (the other storm notes are placed by fusion, with no such badge)."""
    code, api = get_json(f"{stack.base}/api/search?q=storm%20log&mode=hybrid&explain=1")
    assert code == 200 and api["hits"][0]["path"] == "ops/storm log.md"
    assert [h["explain"]["exact"] for h in api["hits"][:2]] == ["name", None]
    open_page(page, stack, "search?q=storm%20log&mode=hybrid")
    page.wait_for_selector(".hit")
    first = page.locator(".hit").first
    assert first.get_attribute("data-path") == "ops/storm log.md"
    assert first.locator(".badge.exact").inner_text() == "First: its name"
    assert page.locator(".badge.exact").count() == 1


def test_a_note_another_replaces_says_which_and_comes_after_it(page: Any, stack: Stack):
    """The query finds only the old ferry timetable; the boat schedule says it replaces it: the
    answer brings the schedule in first, and the timetable's hit names it."""
    code, api = get_json(f"{stack.base}/api/search?q=ferry%20harbour%20dawn&mode=bm25&explain=1")
    assert code == 200 and [h["path"] for h in api["hits"]] == ["plans/boat schedule.md", "plans/ferry timetable.md"]
    assert api["hits"][1]["superseded_by"] == ["plans/boat schedule.md"] and api["hits"][0]["superseded_by"] == []
    open_page(page, stack, "search?q=ferry%20harbour%20dawn&mode=bm25")
    page.wait_for_selector(".hit .superseded")
    first, second = page.locator(".hit").nth(0), page.locator(".hit").nth(1)
    assert first.locator(".badge.exact").inner_text() == "Replaces a hit"
    assert second.locator(".superseded").inner_text() == "Superseded by plans/boat schedule.md"
    second.locator(".superseded a").click()  # to the note that replaces it
    page.wait_for_function("() => decodeURIComponent(location.hash) === '#/note/plans/boat schedule.md'")
    old = "plans/ferry timetable.md"
    assert get_json(f"{stack.base}/api/note?path=" + urllib.request.quote(old))[1]["superseded_by"] == [
        "plans/boat schedule.md"
    ]
    open_page(page, stack, "note/" + urllib.request.quote(old, safe=""))  # the old note's page says it too
    assert page.locator("#superseded").inner_text().startswith("Superseded by plans/boat schedule.md")


def test_a_scope_no_note_is_in_is_said(page: Any, stack: Stack):
    code, api = get_json(f"{stack.base}/api/search?q=storm&mode=bm25&prefix=weather/&tag=ops")
    assert code == 200 and api["hits"] == [] and api["empty_scope"] == ["no note is in the folder weather/"]
    open_page(page, stack, "search?q=storm&mode=bm25&prefix=weather/")
    page.wait_for_selector("#hits .empty-scope")
    assert page.locator("#hits .empty-scope").inner_text().startswith("no note is in the folder weather")


def test_scope_and_mode_controls(page: Any, stack: Stack):
    open_page(page, stack, "search?q=storm&mode=bm25&diary=misc")
    page.wait_for_selector(".hit")
    assert page.locator(".hit").evaluate_all("els => els.map(e => e.dataset.path)") == ["misc/storm drain.md"]
    chans = page.locator(".chan").all_inner_texts()
    assert any(c.startswith("✓ bm25") for c in chans) and any("vector left out" in c for c in chans)
    zh = get_json(f"{stack.base}/api/search?q=" + urllib.request.quote("借用检查器") + "&mode=hybrid")[1]
    assert zh["mode_used"] == "bm25"  # the English default model (scripts: latin) cannot read Chinese
    vector = next(c for c in zh["channels"] if c["name"] == "vector")
    assert not vector["ran"] and "script" in vector["why"]  # said, not hidden behind "vectors 100%"
    open_page(page, stack, "search?q=lighthouse&mode=hybrid&tagmemo=1&tag_weight=0.4&dedup=1")
    page.wait_for_selector(".chan.tagmemo")  # the query's TagMemo explanation, shown when it ran
    assert "TagMemo" in page.inner_text(".chan.tagmemo") and "β" in page.inner_text(".chan.tagmemo")
    assert page.is_checked("#tagmemo") and page.is_checked("#dedup") and page.input_value("#tag_weight") == "0.4"
    page.select_option("#mode", "vector")
    page.fill("#diary", "")
    page.click("#search-form button")
    page.wait_for_function("() => location.hash.includes('mode=vector')")
    page.wait_for_selector(".hit")
    assert "ran vector" in page.inner_text("#meta")
    open_page(page, stack, "search?q=&prefix=ops%2F")  # a scope alone: its notes, newest first
    page.wait_for_selector(".hit")
    assert sorted(page.locator(".hit").evaluate_all("els => els.map(e => e.dataset.path)")) == [
        "ops/lighthouse.md",
        "ops/storm log.md",
    ]
    assert page.inner_text("#meta").startswith("2 notes in this scope, newest first")
    assert page.locator(".chan").count() == 0 and page.locator(".hit .score").count() == 0  # no channel ran
    assert page.locator(".hit .scores .tagchip").all_inner_texts() == ["#ops", "#coast", "#weather"]
    # neither names a date: each goes by the day it was committed (the files are of today)
    assert page.locator(".hit .date").all_inner_texts() == ["2025-06-15", "2025-06-15"]
    assert page.get_attribute(".hit .date", "title").startswith("committed 2025-06-15; file modified ")


def test_a_slow_answer_for_a_note_left_behind_never_replaces_the_next_one(page: Any, stack: Stack):
    open_page(page, stack, "search?q=keeper&mode=bm25")
    page.wait_for_selector(".hit")

    def slow(route: Any) -> None:  # the answer for the first note arrives after the second's
        time.sleep(1.5)
        route.continue_()

    page.route("**/api/note?path=ops%2Fstorm%20log.md", slow)
    storm, lighthouse = "#/note/ops%2Fstorm%20log.md", "#/note/ops%2Flighthouse.md"
    page.evaluate(f"location.hash = '{storm}'; setTimeout(() => {{ location.hash = '{lighthouse}'; }}, 100)")
    page.wait_for_function("() => document.querySelector('#note-body h1')?.textContent === 'Lighthouse'")
    page.wait_for_timeout(2500)  # the storm log's answer has come back meanwhile
    assert page.inner_text("#note-body h1") == "Lighthouse"
    assert page.locator(".path").inner_text() == "ops/lighthouse.md"
    assert page.locator("#view .err").count() == 0  # and no error shown for the dropped answer


def test_note_is_rendered_safely_and_backlinks_are_followed(page: Any, stack: Stack):
    open_page(page, stack, "note/" + urllib.request.quote("evil.md", safe=""))
    page.wait_for_selector("#note-body h1")
    body = page.inner_text("#note-body")
    assert "<script>window.__pwned = 1</script>" in body  # shown as text
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#note-body script, #note-body img, #note-body a[href^='javascript']").count() == 0
    # an image is a link to it, not fetched (it showed as "!" and a link)
    assert page.inner_text("#note-body a .image-link") == "🖼 Screenshot" and "!Screenshot" not in body
    open_page(page, stack, "note/" + urllib.request.quote("ops/storm log.md", safe=""))
    page.wait_for_selector("#backlinks a")
    assert page.locator("#backlinks a").all_inner_texts() == ["ops/lighthouse.md"]
    committed = page.locator("span[title='the day of the last commit that changed it']")
    assert committed.inner_text() == "2025-06-15"  # it names no date of its own
    page.click("#backlinks a")
    page.wait_for_function("() => location.hash === '#/note/ops%2Flighthouse.md'")
    page.wait_for_selector("#note-body h1")
    page.click("#note-body a.wikilink")  # the outgoing [[storm log]] leads back
    page.wait_for_function("() => decodeURIComponent(location.hash) === '#/note/ops/storm log.md'")
    open_page(page, stack, "note/" + urllib.request.quote("中文/借用.md", safe=""))
    page.wait_for_function("() => document.querySelector('#note-body h1')?.textContent === '借用检查器'")
    page.evaluate("document.fonts.ready")
    assert page.evaluate("document.fonts.check(\"14px 'Noto Sans SC'\", '借用检查器')")


def test_a_link_whose_address_holds_parentheses_keeps_them(page: Any, stack: Stack):
    """A Wikipedia or MSDN link was cut at its first ")": a broken address and a stray ")" in the text."""
    open_page(page, stack, "note/" + urllib.request.quote("evil.md", safe=""))
    page.wait_for_selector("#note-body h1")
    link = page.locator("#note-body a[href*='wikipedia']")
    assert link.get_attribute("href") == "https://en.wikipedia.org/wiki/Rust_(programming_language)"
    assert link.inner_text() == "Rust" and "See Rust here." in page.inner_text("#note-body")


def test_the_query_box_keeps_the_focus_and_back_stays_in_the_console(page: Any, stack: Stack):
    """After a search the focus was on the page, so typing to refine the query went nowhere; "← back"
    on a note opened in a new tab or from a bookmark left the console (about:blank)."""
    open_page(page, stack, "search")
    page.fill("#q", "storm")
    page.press("#q", "Enter")
    page.wait_for_selector("#hits .hit")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type(" log")
    assert page.input_value("#q") == "storm log"
    page.click("#hits .hit a")  # within the console, back returns to the search
    page.wait_for_selector("#note-body h1")
    page.click("#back")
    page.wait_for_function("() => location.hash.startsWith('#/search?')")
    direct = page.context.new_page()
    direct.goto(f"{stack.base}/#/note/" + urllib.request.quote("ops/storm log.md", safe=""))
    direct.wait_for_selector("#note-body h1")
    direct.click("#back")
    direct.wait_for_function("() => location.hash === '#/search'")
    assert direct.url.startswith(stack.base)
    direct.close()


def test_the_tagmemo_chip_says_why_tagmemo_did_not_apply(page: Any, stack: Stack):
    """It showed "not applied · β 0.000" and zeros; the answer holds the reason."""
    open_page(page, stack, "search?q=" + urllib.request.quote("借用检查器") + "&tagmemo=1")
    chip = page.locator(".chan.tagmemo")
    chip.wait_for()
    assert chip.inner_text().startswith("TagMemo not applied: ") and "β" not in chip.inner_text()
    assert "script" in chip.inner_text()  # the English model reads no Han: the reason says so

    def names_the_ignored_core_tag() -> bool:  # once the vault's tags have vectors
        open_page(page, stack, "search?q=storm%20at%20the%20lighthouse&tagmemo=1&core_tags=nosuchtag")
        page.locator(".chan.tagmemo").wait_for()
        return "core tags ignored: nosuchtag: no note carries it" in page.inner_text(".chan.tagmemo")

    wait_for(names_the_ignored_core_tag, 60, "the core tag no note carries, named")


def test_links_written_label_first_lead_to_their_notes(page: Any, stack: Stack):
    """Dendron's `[[label|note]]`: the list of links and the rendered note show the label and
    lead to the note; Obsidian's `[[note|label]]` beside them still does."""
    status, note = get_json(f"{stack.base}/api/note?path=wiki/from%20dendron.md")
    assert status == 200
    assert [(lk["target"], lk["alias"], lk["path"]) for lk in note["links"]] == [
        ("misc/storm drain", "the drain", "misc/storm drain.md"),
        ("借用", "borrowing", "中文/借用.md"),
        ("Storm drain", "a drain", "misc/storm drain.md"),
        ("../misc/storm drain", "the drain again", "misc/storm drain.md"),  # relative to wiki/
    ]
    assert sorted(note["outgoing"]) == ["misc/storm drain.md", "中文/借用.md"]
    open_page(page, stack, "note/" + urllib.request.quote("wiki/from dendron.md", safe=""))
    page.wait_for_selector("#note-body a.wikilink")
    links = page.locator("#note-body a.wikilink")
    assert links.all_inner_texts() == ["the drain", "borrowing", "a drain"]
    hrefs = [urllib.request.unquote(links.nth(i).get_attribute("href") or "") for i in range(3)]
    assert hrefs == ["#/note/misc/storm drain.md", "#/note/中文/借用.md", "#/note/misc/storm drain.md"]
    assert "private remark" not in page.inner_text("#note-body")  # an Obsidian comment, hidden as Obsidian hides it
    markdown = page.locator("#note-body a:not(.wikilink)")
    assert markdown.all_inner_texts() == ["the drain again"]
    assert urllib.request.unquote(markdown.get_attribute("href") or "") == "#/note/misc/storm drain.md"


def test_a_logseq_journal_shows_its_title_and_its_tags_of_several_words(page: Any, stack: Stack):
    open_page(page, stack, "note/" + urllib.request.quote("journals/2026_12_04.md", safe=""))
    page.wait_for_selector("#note-body .tagchip")
    assert page.locator(".note-title").inner_text() == "Dec 4th, 2026"  # the file name says 2026_12_04
    assert page.locator("#note-body .tagchip").all_inner_texts() == ["#release train", "#quay"]
    assert page.locator("#note-body .unresolved, #note-body a").count() == 0  # `#[[x]]` is no link
    assert page.locator(".side .tags a").all_inner_texts() == ["#quay", "#release train"]


def test_long_frontmatter_values_stay_within_the_side_card(page: Any, stack: Stack):
    open_page(page, stack, "note/" + urllib.request.quote("misc/long front.md", safe=""))
    page.wait_for_selector(".fm td")
    widths = page.evaluate(
        """() => { const side = document.querySelector('.side').getBoundingClientRect();
                   const cells = [...document.querySelectorAll('.fm td, .fm')].map(e => e.getBoundingClientRect());
                   const card = document.querySelector('.side .card:nth-child(2)');
                   return {side: side.right, right: Math.max(...cells.map(r => r.right)),
                           overflow: card.scrollWidth - card.clientWidth, page: document.documentElement.scrollWidth - innerWidth}; }"""
    )
    assert widths["right"] <= widths["side"] + 1 and widths["overflow"] <= 0 and widths["page"] <= 0, widths
    summary = page.locator(".fm tr", has_text="summary").locator("td").nth(1)
    assert summary.inner_text().endswith("…") and len(summary.inner_text()) == 301
    assert (summary.get_attribute("title") or "").startswith("word word") and len(
        summary.get_attribute("title") or ""
    ) > 1900


def test_graph_overview_and_neighbourhood(page: Any, stack: Stack):
    open_page(page, stack, "graph")
    page.wait_for_selector("#graph-canvas[data-nodes]")
    canvas = page.locator("#graph-canvas")
    assert int(canvas.get_attribute("data-nodes") or 0) == len(NOTES)
    # lighthouse→storm log, 借用→lighthouse, from dendron→storm drain (three links, one edge) and →借用,
    # boat schedule→ferry timetable (a link in its frontmatter)
    assert int(canvas.get_attribute("data-edges") or 0) == 5
    open_page(page, stack, "graph/" + urllib.request.quote("ops/storm log.md", safe="") + "?hops=2")
    page.wait_for_function("() => document.querySelector('#graph-title').textContent.includes('storm log')")
    page.wait_for_selector("#graph-canvas[data-nodes]")
    assert int(page.get_attribute("#graph-canvas", "data-nodes") or 0) == 3  # itself, lighthouse, 借用 (2 hops)
    one = get_json(f"{stack.base}/api/graph?path=ops/storm%20log.md&hops=1")[1]
    assert sorted(n[0] for n in one["nodes"]) == ["ops/lighthouse.md", "ops/storm log.md"]


def test_graph_labels_never_cover_each_other_and_hubs_get_theirs_first(page: Any, stack: Stack):
    """A dense cluster: 60 notes with long titles around one hub, all within 40 px. Their labels were
    drawn over each other (the foam vault's overview was unreadable); now a label that would cover
    one already drawn is left out, the best-linked notes' first."""
    open_page(page, stack, "graph")
    page.wait_for_selector("#graph-canvas[data-nodes]")
    labels = page.evaluate(
        """() => {
        const canvas = document.createElement("canvas");
        canvas.style.width = "800px"; canvas.style.height = "600px";
        document.body.appendChild(canvas);
        const nodes = [], edges = [], x = new Float32Array(60), y = new Float32Array(60);
        for (let i = 0; i < 60; i++) {
          nodes.push([`n${i}.md`, i ? `A rather long note title number ${i}` : "The hub", "", i ? 1 + (i % 5) : 59, 0]);
          if (i) edges.push(0, i);
          x[i] = (i % 8) * 5; y[i] = Math.floor(i / 8) * 5;
        }
        drawGraph(canvas, { nodes, edges }, { x, y }, { overview: true, hubDegree: 0, onClick() {} });
        return JSON.parse(canvas.dataset.labels);
      }"""
    )
    assert labels[0][0] == "n0.md" and 1 < len(labels) < 60  # the hub first; not all 60 fit
    boxes = [label[1:] for label in labels]
    for i, a in enumerate(boxes):
        for b in boxes[:i]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)


def test_offloaded_log_shows_its_diagram_as_svg_and_slices(page: Any, stack: Stack):
    result = stack.offload("browser-log")
    assert result.offloaded
    open_page(page, stack, "logs")
    card = page.locator(f"#{result.node_id}")
    card.wait_for()
    assert card.locator(".diagram svg").count() == 1
    assert "KeyError" in card.locator(".diagram svg").inner_html() or "KeyError" in card.inner_text()
    assert (
        "app/config.py:42" in card.inner_text() and "exit 1" in card.inner_text() and "pytest -x" in card.inner_text()
    )
    card.locator("[data-act=error]").click()
    page.wait_for_function(
        f"() => document.querySelector('#{result.node_id} pre.lines').textContent.includes('KeyError')"
    )
    card.locator('[data-in="grep"]').fill("step 7:")
    card.locator("[data-act=grep]").click()
    page.wait_for_function(
        f"() => document.querySelector('#{result.node_id} pre.lines').textContent.includes('step 7: compiling')"
    )
    card.locator('[data-in="start"]').fill("2")
    card.locator('[data-in="end"]').fill("3")
    card.locator("[data-act=range]").click()
    page.wait_for_function(f"() => document.querySelector('#{result.node_id} pre.lines .n')?.textContent === '2'")
    assert card.locator("pre.lines .n").all_inner_texts() == ["2", "3"]


def test_scoreboard_moves_live_and_survives_a_reload(page: Any, stack: Stack):
    open_page(page, stack, "status")
    page.wait_for_selector("#tokens-saved")
    # how vectors are searched: a small vault stays under the HNSW threshold (brute force)
    page.wait_for_function("() => document.querySelector('#counts').textContent.includes('vector index')")
    assert "vector indexbrute force" in page.inner_text("#counts").replace("\n", "")
    index = get_json(f"{stack.base}/api/status")[1]["index"]
    assert index["vectors_indexed"] == 0
    # BM25's replaced chunks (none here, or some while an edit waits for its compaction)
    stale = index["bm25_deleted"]
    assert ("BM25compact" if stale == 0 else "stale") in page.inner_text("#counts").replace("\n", "")
    # the OS tells the scanner of every change (no folder beyond the watch limit: no polling note)
    assert "watchinglive" in page.inner_text("#counts").replace("\n", "")
    assert get_json(f"{stack.base}/api/status")[1]["scanner"]["watch_note"] == ""
    assert page.locator("#scanner-notes .warn").count() == 0
    excluded = page.inner_text("#scanner-notes #excluded")  # what the vault's own settings leave out
    assert "Archive/ (Obsidian's Excluded files, .obsidian/app.json)" in excluded
    skipped = page.inner_text("#scanner-notes #skipped-files")  # what is not indexed, and why
    assert "1 file not indexed" in skipped and "scan.md: binary content (NUL bytes)" in skipped
    with_problems = page.locator("#scanner-notes #problem-notes")  # indexed, with what went wrong
    assert "1 note indexed with problems" in with_problems.inner_text()
    assert "misc/broken front.md: frontmatter is not valid YAML" in with_problems.inner_text()
    assert with_problems.locator("a").get_attribute("href") == "#/note/misc%2Fbroken%20front.md"
    dates = page.inner_text("#scanner-notes #commit-days")  # a vault in git: where notes' days come from
    assert "notes that name no date go by their last commit (read at " in dates
    page.wait_for_function("() => document.querySelector('#money-saved .big').textContent.includes('USD')")
    before = page.inner_text("#tokens-saved .big")
    stack.offload("scoreboard-log")
    page.wait_for_function(
        f"() => document.querySelector('#tokens-saved .big').textContent !== {json.dumps(before)}", timeout=20_000
    )
    offloads = get_json(f"{stack.base}/api/status")[1]["tokens"]["offloads"]
    stack.offload("scoreboard-log")  # the same log again: counted once
    assert get_json(f"{stack.base}/api/status")[1]["tokens"]["offloads"] == offloads
    page.wait_for_selector("#repeats", timeout=20_000)  # said as a number, not protobuf's JSON string `"1"`
    assert page.inner_text("#repeats .big") == "1" and '"' not in page.inner_text("#score")
    recalls = page.inner_text("#recalls .big")
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
        recall = pool.submit(
            anyio.run, build_mcp(stack.client).call_tool, "recall_memory", {"query": "lighthouse storm"}
        )
        answer = recall.result(timeout=60)
    assert not getattr(answer, "is_error", False)
    page.wait_for_function(f"() => document.querySelector('#recalls .big').textContent !== {json.dumps(recalls)}")
    tokens = get_json(f"{stack.base}/api/status")[1]["tokens"]["recall"]
    assert tokens["answers"] >= 1 and tokens["note_tokens"] > 0 and tokens["answer_tokens"] > 0
    assert tokens["saved"] == max(0, tokens["note_tokens"] - tokens["answer_tokens"])
    with pytest.raises(InvalidInput):
        stack.client.call(stack.client.offload.RecordRecall, offload_pb2.RecallRecord(paths=["../x.md"], answer="a"))
    page.fill("#price", "1000000")  # one currency unit per token: money equals tokens
    saved = page.inner_text("#tokens-saved .big").replace(",", "")
    assert page.inner_text("#money-saved .big").replace(",", "").startswith(saved + ".00")
    assert page.locator("#services .dot.ok").count() >= 4
    assert page.locator("#big-bar > div").evaluate("e => e.style.width") == "100%"
    page.reload()
    page.wait_for_selector("#tokens-saved")
    assert page.inner_text("#tokens-saved .big").replace(",", "") == saved  # painted from the session at once
    assert page.input_value("#price") == "1000000"
    page.fill("#price", "3")


def test_live_changes_open_on_the_last_ones_recorded_and_follow_new_ones(page: Any, stack: Stack):
    open_page(page, stack, "status")
    # an idle vault: the panel lists what changed last, newest first, rather than waiting
    page.wait_for_function("() => document.querySelectorAll('#changes .change').length > 0")
    scanner = stack.client.call(stack.client.scanner.Status, scanner_pb2.ScannerStatusRequest())
    state = page.inner_text("#changes-state")
    assert state.startswith("live · newest first") and f"{scanner.last_seq:,} change" in state
    first = page.inner_text("#changes .change >> nth=0")
    assert f"#{scanner.last_seq} " in first and "waiting" not in page.inner_text("#changes")
    shown = page.locator("#changes .change").count()
    assert shown == min(scanner.last_seq, 30)
    (stack.vault / "live-panel.md").write_text("# Live panel\n\nwritten while the page was open\n")
    page.wait_for_function("() => document.querySelector('#changes .change').textContent.includes('live-panel.md')")
    newest = page.locator("#changes .change >> nth=0")
    assert f"#{scanner.last_seq + 1} added live-panel.md" in newest.inner_text()
    assert newest.locator("a").get_attribute("href") == "#/note/live-panel.md"
    assert page.locator("#changes .change").count() == min(shown + 1, 30)
    assert f"{scanner.last_seq + 1:,} change" in page.inner_text("#changes-state")  # the count follows
    (stack.vault / "live-panel.md").unlink()
    page.wait_for_function("() => document.querySelector('#changes .change').textContent.includes('deleted')")
    assert page.locator("#changes .change >> nth=0").locator("a").count() == 0  # a deleted note: no link


@contextmanager
def own_console(stack: Stack, folder: Path, token: str = "") -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A second gateway process on the same stack (its console's base URL, its process)."""
    addresses = stack.launcher.state.addresses if stack.launcher.state else {}
    port = free_port()
    env = {
        **os.environ,
        "K0_VAULT": str(stack.vault),
        "K0_SCANNER_ADDR": addresses["scanner"],
        "K0_RETRIEVER_ADDR": addresses["retriever"],
        "K0_OFFLOAD_ADDR": addresses["offload"],
        "K0_GRPC_ADDR": f"127.0.0.1:{free_port()}",
        "K0_HTTP_PORT": str(port),
        "K0_CONSOLE_TOKEN": token,
        "K0_GRPC_TOKEN": stack.launcher.state.grpc_token if stack.launcher.state else "",
    }
    with open(folder / "gateway.log", "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "k0maru_gateway"], env=env, stdout=out, stderr=out)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2).close()
                break
            except (OSError, urllib.error.HTTPError):
                time.sleep(0.2)
        yield base, proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def token_console(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second gateway on the same stack, in token mode."""
    with own_console(stack, tmp_path_factory.mktemp("token"), TOKEN) as (base, _proc):
        yield base


def test_a_console_that_stops_answering_shows_no_service_as_serving(browser: Any, stack: Stack, tmp_path: Path):
    """With the stack stopped or the gateway killed, the status page kept its last snapshot (every
    service SERVING, green) for the whole outage, and a search said only "Failed to fetch"."""
    with own_console(stack, tmp_path) as (base, proc):
        context = browser.new_context()
        tab = context.new_page()
        tab.goto(base + "/#/status")
        tab.wait_for_function("() => document.querySelectorAll('#services .dot.ok').length >= 3")
        assert tab.locator("#console-down").count() == 0
        proc.kill()
        proc.wait(timeout=10)
        tab.wait_for_selector("#console-down")
        assert tab.locator("#services .dot.ok, #health-dots .dot.ok").count() == 0
        assert "not answering" in tab.inner_text("#mini-text")
        SHOTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(SHOTS / "test_a_console_that_stops_answering.png"), full_page=True)
        tab.evaluate("location.hash = '#/search?q=storm'")
        tab.wait_for_selector("#view .err")
        said = tab.inner_text("#view .err")
        assert f"The console at {base} is not answering" in said and "Failed to fetch" not in said
        context.close()


def test_token_login_form(browser: Any, token_console: str):
    context = browser.new_context()
    tab = context.new_page()
    seen: list[str] = []
    tab.on("request", lambda r: seen.append(r.url))
    tab.goto(token_console + "/#/status")
    tab.wait_for_selector("#login:not([hidden])")
    tab.fill("#login-token", "wrong")
    tab.click("#login-form button")
    tab.wait_for_function("() => document.querySelector('#login-error').textContent.includes('Wrong token')")
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / "test_token_login_form_wrong.png"))
    tab.fill("#login-token", TOKEN)
    tab.click("#login-form button")
    tab.wait_for_selector("#login", state="hidden")
    tab.wait_for_selector("#tokens-saved")
    tab.reload()  # the token stays for the session
    tab.wait_for_selector("#tokens-saved")
    assert tab.locator("#login").is_hidden()
    tab.wait_for_function("() => document.querySelectorAll('#health-dots .dot').length >= 3")  # SSE with the token
    tab.screenshot(path=str(SHOTS / "test_token_login_form.png"), full_page=True)
    context.close()
    assert all(u.startswith(token_console + "/") for u in seen), seen
    assert get_json(token_console + "/api/status")[0] == 401
    assert get_json(token_console + "/api/status", TOKEN)[0] == 200


def test_every_endpoint_answers_as_its_openapi_description_says(stack: Stack):
    code, spec = get_json(f"{stack.base}/api/openapi.json")
    assert code == 200 and spec["openapi"].startswith("3.1")

    def check(url: str, expected_code: int, schema: str) -> Any:
        got, body = get_json(stack.base + url)
        assert got == expected_code, (url, body)
        ref = {"$ref": f"#/components/schemas/{schema}", "components": spec["components"]}
        jsonschema.validate(body, ref, cls=jsonschema.Draft202012Validator)
        return body

    node = stack.offload("openapi-log").node_id
    check("/healthz", 200, "Health")
    check("/api/search?q=lighthouse", 200, "SearchResult")
    check("/api/search?q=storm&mode=bm25&diary=ops&tag=weather&limit=3", 200, "SearchResult")
    check("/api/search?q=x&tagmemo=1&tag_weight=0.5&core_tags=ops&dedup=1", 200, "SearchResult")
    check("/api/search?q=x&tagmemo=1&beta=0.5", 200, "SearchResult")
    check("/api/note?path=ops/lighthouse.md", 200, "Note")
    check("/api/graph", 200, "Graph")
    check("/api/graph?path=ops/lighthouse.md&hops=2", 200, "Graph")
    check("/api/logs", 200, "Logs")
    check(f"/api/logs/{node}?around_error=1", 200, "LogSlice")
    check(f"/api/logs/{node}?grep=KeyError&context=1", 200, "LogSlice")
    check("/api/status", 200, "Status")
    assert stack.launcher.state is not None
    stack_token = f"Bearer {stack.launcher.state.grpc_token}"  # a console without a token: the stack's, to scan
    for body, content_type, auth, code, schema in (
        (b"{}", "application/json", stack_token, 200, "ScanStats"),
        (b'{"full": true}', "application/json", stack_token, 200, "ScanStats"),
        (b"{}", "application/json", "", 401, "Error"),  # reading needs no token here; reindexing does
        (b'{"full": "yes"}', "application/json", stack_token, 400, "Error"),
        (b"full=1", "application/x-www-form-urlencoded", stack_token, 400, "Error"),  # no cross-site forms
    ):
        headers = {"Content-Type": content_type, **({"Authorization": auth} if auth else {})}
        request = urllib.request.Request(stack.base + "/api/scan", body, headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                got, answer = r.status, json.loads(r.read())
        except urllib.error.HTTPError as err:
            got, answer = err.code, json.loads(err.read())
            err.close()
        assert got == code, (body, answer)
        ref = {"$ref": f"#/components/schemas/{schema}", "components": spec["components"]}
        jsonschema.validate(answer, ref, cls=jsonschema.Draft202012Validator)
    for url, code in (
        ("/api/search", 400),
        ("/api/search?q=x&mode=nope", 400),
        ("/api/search?q=x&limit=0", 400),
        ("/api/search?q=x&tagmemo=1&beta=nan-ish", 400),
        ("/api/search?q=x&tagmemo=1&tag_weight=2", 400),
        ("/api/search?q=" + "x" * 10_001, 413),
        ("/api/note", 400),
        ("/api/note?path=nope.md", 404),
        ("/api/note?path=../etc/passwd", 400),
        ("/api/graph?hops=3", 400),
        ("/api/graph?path=nope.md", 404),
        ("/api/logs/node_0000000000000000", 404),
        ("/api/logs/not-a-node", 400),
        (f"/api/logs/{node}?grep=(", 400),
        ("/api/logs?limit=abc", 400),
    ):
        check(url, code, "Error")
    with urllib.request.urlopen(f"{stack.base}/api/live", timeout=30) as stream:
        event = b""
        for raw in stream:
            if raw.startswith(b"data: "):
                event = raw[6:]
                break
    jsonschema.validate(
        json.loads(event),
        {"$ref": "#/components/schemas/Status", "components": spec["components"]},
        cls=jsonschema.Draft202012Validator,
    )
    documented = set(spec["paths"])
    assert documented == {
        "/healthz",
        "/api/search",
        "/api/scan",
        "/api/note",
        "/api/graph",
        "/api/logs",
        "/api/logs/{node_id}",
        "/api/status",
        "/api/live",
        "/api/events",
        "/api/openapi.json",
    }


def test_ui_command_opens_the_running_stacks_console(stack: Stack, tmp_path: Path):
    opened = tmp_path / "opened.txt"
    browser_cmd = f"{sys.executable} -c \"import sys; open({str(opened)!r}, 'w').write(sys.argv[1])\" %s"
    state = stack.launcher.state
    assert state is not None
    out = subprocess.run(
        [
            str(Path(sys.executable).parent / "k0maru"),
            "ui",
            "--open",
            "--vault",
            state.vault,
            "--data-dir",
            state.data_dir,
        ],
        env={**os.environ, "BROWSER": browser_cmd, "K0_CONSOLE_TOKEN": "t k"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"k0maru: console {state.console_url}"
    deadline = time.monotonic() + 10
    while not opened.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert opened.read_text() == state.console_url + "?token=t%20k"
