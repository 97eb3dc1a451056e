"""Console in headless Chromium on an Obsidian-sized vault: page weights and graph overview time.

Builds a synthetic vault (default 6,000 notes, ~40,000 resolved links, a few hubs, some Chinese
titles), starts the real stack on it (no embedders: the graph and page weights do not need
vectors), waits for the index, then opens each console page in a fresh browser context and
prints one JSON line per measurement:
  page weight     bytes the page fetched (document + scripts + styles + fonts + API answers),
                  from the Resource Timing entries (all same-origin)
  graph overview  ms from the route starting to the whole vault drawn on the canvas (fetch +
                  layout + first paint, measured in the page): the first (cold) and the median of
                  the rest (the gateway caches the answer per index state); wall time from navigation;
                  the time one paint of the whole vault takes after a zoom step

Run: nice -n 10 .venv/bin/python bench/console_bench.py [--notes 6000] [--links 40000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from _common import emit

from k0maru_cli import Launcher

LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ZH = ["借用检查器", "数据库锁", "构建失败", "内存泄漏", "并发", "缓存", "日志", "部署"]


def obsidian_vault(root: Path, notes: int, links: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    names = [f"{ZH[i % len(ZH)]} {i}" if i % 9 == 0 else f"note {i}" for i in range(notes)]
    hubs = rng.sample(range(notes), max(1, notes // 200))
    per_note = -(-links // notes)  # at least `links` in all
    for i, name in enumerate(names):
        folder = root / f"area{i % 12}" / f"sub{i % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        targets = set()
        while len(targets) < per_note:
            j = rng.choice(hubs) if rng.random() < 0.2 else rng.randrange(notes)
            if j != i:
                targets.add(j)
        body = " ".join(f"[[{names[j]}]]" for j in sorted(targets))
        (folder / f"{name}.md").write_text(
            f"---\ntags: [t{i % 23}]\n---\n# {name}\n\nText about topic {i % 41}. Links: {body}\n", encoding="utf-8"
        )
    return root


def status_of(base: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base}/api/status", timeout=30) as r:
        status: dict[str, Any] = json.loads(r.read())
    return status


def wait_indexed(base: str, notes: int, timeout_s: float = 900) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        with urllib.request.urlopen(f"{base}/api/status", timeout=30) as r:
            index = json.loads(r.read()).get("index") or {}
        if index.get("documents") == notes:
            return time.monotonic() - started
        time.sleep(1)
    raise SystemExit(f"index did not reach {notes} notes")


WEIGHT_JS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  const kinds = {};
  for (const r of res) {
    const k = r.name.includes('/static/fonts/') ? 'fonts' : r.name.includes('/api/') ? 'api' : 'code';
    kinds[k] = (kinds[k] || 0) + r.encodedBodySize;
  }
  return {document: nav.encodedBodySize, ...kinds, requests: res.length + 1,
          total: nav.encodedBodySize + res.reduce((s, r) => s + r.encodedBodySize, 0)};
}"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=6000)
    parser.add_argument("--links", type=int, default=40000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="k0-console-bench-") as tmp:
        root = Path(tmp)
        vault = obsidian_vault(root / "vault", args.notes, args.links)
        launcher = Launcher(vault, root / "data", embedders=0, http_port=0, startup_timeout_s=600)
        state = launcher.start()
        base = state.console_url.rstrip("/")
        try:
            indexed_s = wait_indexed(base, args.notes)
            t = time.perf_counter()
            with urllib.request.urlopen(f"{base}/api/graph", timeout=60) as r:
                graph = json.loads(r.read())
                graph_bytes = int(r.headers.get("content-length") or 0)
            emit(
                "console_graph_api",
                notes=len(graph["nodes"]),
                links=len(graph["edges"]) // 2,
                bytes=graph_bytes,
                ms=round((time.perf_counter() - t) * 1000, 1),
                index_wait_s=round(indexed_s, 1),
            )
            hub = max(graph["nodes"], key=lambda n: n[3])[0]
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=LAUNCH_ARGS)
                pages = {
                    "search": "#/search?q=topic%2017&mode=bm25",
                    "note": "#/note/" + urllib.request.quote(hub, safe=""),
                    "graph_overview": "#/graph",
                    "graph_2_hops": "#/graph/" + urllib.request.quote(hub, safe="") + "?hops=2",
                    "logs": "#/logs",
                    "status": "#/status",
                }
                ready = {
                    "search": ".hit",
                    "note": "#note-body h1",
                    "graph_overview": "#graph-canvas[data-nodes]",
                    "graph_2_hops": "#graph-canvas[data-nodes]",
                    "logs": "#logs",
                    "status": "#tokens-saved",
                }
                render, wall = [], []
                seq = status_of(base)["index"]["last_applied_seq"]
                with next(vault.rglob("note 12.md")).open("a", encoding="utf-8") as f:
                    f.write("\nOne more line, so that the first render below is a cold one.\n")
                while status_of(base)["index"]["last_applied_seq"] == seq:
                    time.sleep(0.2)
                for _ in range(args.runs):
                    context = browser.new_context(viewport={"width": 1360, "height": 860})
                    tab = context.new_page()
                    t = time.perf_counter()
                    tab.goto(f"{base}/#/graph")
                    tab.wait_for_selector("#graph-canvas[data-nodes]", timeout=60_000)
                    wall.append((time.perf_counter() - t) * 1000)
                    render.append(float(tab.get_attribute("#graph-canvas", "data-render-ms") or "nan"))
                    layout = float(tab.get_attribute("#graph-canvas", "data-layout-ms") or "nan")
                    first_paint = float(tab.get_attribute("#graph-canvas", "data-paint-ms") or "nan")
                    tab.mouse.move(680, 430)  # responsiveness: a zoom step repaints the whole vault
                    tab.mouse.wheel(0, -300)
                    tab.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                    repaint = float(tab.get_attribute("#graph-canvas", "data-paint-ms") or "nan")
                    context.close()
                emit(
                    "console_graph_overview",
                    notes=len(graph["nodes"]),
                    links=len(graph["edges"]) // 2,
                    cold_render_ms=round(render[0], 1),  # first fetch after indexing: the gateway builds the answer
                    render_ms_median=round(statistics.median(render[1:] or render), 1),  # served from its cache
                    render_ms_max=round(max(render), 1),
                    wall_ms_median=round(statistics.median(wall), 1),
                    last_layout_and_paint_ms=round(layout, 1),
                    last_first_paint_ms=round(first_paint, 1),
                    last_zoom_repaint_ms=round(repaint, 1),
                    runs=args.runs,
                )
                for name, route in pages.items():
                    context = browser.new_context(viewport={"width": 1360, "height": 860})
                    tab = context.new_page()
                    tab.goto(f"{base}/{route}")
                    tab.wait_for_selector(ready[name], timeout=60_000)
                    tab.evaluate("document.fonts.ready")
                    time.sleep(0.5)
                    emit("console_page_weight", page=name, **tab.evaluate(WEIGHT_JS))
                    context.close()
                browser.close()
        finally:
            launcher.stop()


if __name__ == "__main__":
    main()
