// k0maru console: one page, hash routes, everything from this origin (CSP: script-src 'self').
// Text from notes and logs is only ever inserted escaped (esc) or as text nodes.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const view = () => $("#view");
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const fmt = (n) => (n == null ? "—" : Number(n).toLocaleString("en-US"));
// how vectors are searched: brute force, an HNSW index (plus brute force over newer vectors), a build under way
const vectorIndex = (i) => {
  const kind = !i.vectors_indexed ? "brute force" : i.vectors_indexed >= i.chunks_with_vectors ? "HNSW" : `HNSW ${fmt(i.vectors_indexed)} + brute force`;
  return i.index_building ? `${kind} · building HNSW` : kind;
};
const noteHref = (p) => "#/note/" + encodeURIComponent(p);

// ---------- token mode ----------
const TOKEN_KEY = "k0maru.token";
(function takeTokenFromUrl() {
  const params = new URLSearchParams(location.search);
  const t = params.get("token");
  if (t) {
    sessionStorage.setItem(TOKEN_KEY, t);
    params.delete("token");
    history.replaceState(null, "", location.pathname + (params.toString() ? "?" + params : "") + location.hash);
  }
})();
const token = () => sessionStorage.getItem(TOKEN_KEY) || "";
const withToken = (url) => (token() ? url + (url.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token()) : url);

class AuthError extends Error {}
// An answer that came back after the user had moved on to another page: dropped, so a slow reply
// for the note left behind never replaces the note asked for since (each route() is a navigation).
class Stale extends Error {}
let navigation = 0;

async function api(path) {
  const asked = navigation;
  const headers = token() ? { Authorization: "Bearer " + token() } : {};
  let r;
  try {
    r = await fetch(path, { headers });
  } catch (e) {  // the browser's own "Failed to fetch": say what is not answering
    if (asked !== navigation) throw new Stale(path);
    throw new Error(`The console at ${location.origin} is not answering: is the stack running? (k0maru up, or k0maru status)`);
  }
  let body = null;
  try { body = await r.json(); } catch (e) { body = { error: "not JSON (HTTP " + r.status + ")" }; }
  if (asked !== navigation) throw new Stale(path);
  if (r.status === 401) { showLogin(token() ? "Wrong token: the console refused it. Check K0_CONSOLE_TOKEN of this stack." : ""); throw new AuthError("token needed"); }
  if (!r.ok) throw new Error(body.error || "HTTP " + r.status);
  return body;
}

function showLogin(message) {
  $("#login").hidden = false;
  $("#login-error").textContent = message || "";
  $("#login-token").focus();
}

$("#login-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const t = $("#login-token").value.trim();
  if (!t) { $("#login-error").textContent = "Enter the token."; return; }
  const r = await fetch("/api/status", { headers: { Authorization: "Bearer " + t } });
  if (r.status === 401) {
    $("#login-error").textContent = "Wrong token: the console refused it. Check K0_CONSOLE_TOKEN of this stack.";
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, t);
  $("#login").hidden = true;
  $("#login-token").value = "";
  startLive();
  route();
});

// ---------- live status (SSE, survives reloads: last snapshot kept in the session) ----------
let live = null;
let lastStatus = JSON.parse(sessionStorage.getItem("k0maru.status") || "null");
let consoleDown = false;  // the live stream broke: what lastStatus says may no longer hold
const DOWN_TEXT = "the console is not answering: reconnecting… (is the stack running? k0maru up)";
const statusListeners = new Set();

function startLive() {
  if (live) live.close();
  live = new EventSource(withToken("/api/live"));
  live.addEventListener("status", (m) => {
    consoleDown = false;
    lastStatus = JSON.parse(m.data);
    sessionStorage.setItem("k0maru.status", m.data);
    paintPulse();
    statusListeners.forEach((f) => f(lastStatus));
  });
  // the console itself stopped answering (the stack stopped, the gateway killed): its last snapshot
  // is no longer news, so no service is shown as serving until it answers again
  live.onerror = () => {
    consoleDown = true;
    paintPulse();
    statusListeners.forEach((f) => f(lastStatus));
  };
}

function healthClass(state) { return state === "SERVING" ? "ok" : state === "NOT_SERVING" || state === "UNKNOWN" ? "warn" : ""; }

function paintPulse() {
  const s = lastStatus;
  document.body.classList.toggle("down", consoleDown);  // what the page shows is the last snapshot
  if (consoleDown) {
    $("#health-dots").innerHTML = Object.keys(s ? s.services : {}).map((n) => `<span class="dot unknown" title="${esc(n)}: unknown (the console is not answering)"></span>`).join("");
    $("#mini-text").textContent = DOWN_TEXT;
    return;
  }
  if (!s) return;
  $("#health-dots").innerHTML = Object.entries(s.services).map(([n, st]) => `<span class="dot ${healthClass(st)}" title="${esc(n)}: ${esc(st)}"></span>`).join("");
  const q = s.queue;
  $("#mini-bar > div").style.width = q ? (100 * q.progress).toFixed(1) + "%" : "0";
  $("#mini-text").textContent = !q ? "retriever not ready" : !q.vectors_enabled && !q.indexing ? `${fmt(s.index.documents)} notes · no embedder (BM25 only)` : q.indexing ? `indexing ${(100 * q.progress).toFixed(0)}%${q.eta_s != null ? " · ETA " + eta(q.eta_s) : ""}` : `${fmt(s.index.documents)} notes · indexed`;
}

function eta(s) { return s < 90 ? Math.round(s) + " s" : s < 5400 ? Math.round(s / 60) + " min" : (s / 3600).toFixed(1) + " h"; }

// ---------- router ----------
const routes = { search: searchView, note: noteView, graph: graphView, logs: logsView, status: statusView };
let cleanup = null;

function route() {
  navigation += 1;
  if (cleanup) { cleanup(); cleanup = null; }
  statusListeners.clear();
  const hash = location.hash.replace(/^#\/?/, "") || "search";
  const [head, ...rest] = hash.split("/");
  const [first, query] = (rest.join("/") || "").split("?");
  const name = routes[head.split("?")[0]] ? head.split("?")[0] : "search";
  const params = new URLSearchParams(query ?? (head.includes("?") ? head.split("?")[1] : ""));
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("on", a.dataset.nav === (name === "note" ? "search" : name)));
  routes[name](decodeURIComponent(first || ""), params).catch((e) => {
    if (e instanceof AuthError || e instanceof Stale) return;
    view().insertAdjacentHTML("beforeend", `<p class="err">${esc(e.message)}</p>`);
  });
}
window.addEventListener("hashchange", route);

// ---------- search debugger ----------
function queryTerms(q) {
  const terms = new Set();
  for (const w of q.toLowerCase().split(/[\s,.;:!?()"'`]+/)) {
    if (!w) continue;
    if (/[\u3400-\u9fff]/.test(w)) {
      for (const run of w.match(/[\u3400-\u9fff]+/g) || []) {
        if (run.length <= 2) terms.add(run);
        else for (let i = 0; i + 2 <= run.length; i++) terms.add(run.slice(i, i + 2));
      }
      for (const lat of w.split(/[\u3400-\u9fff]+/)) if (lat.length >= 2) terms.add(lat);
    } else if (w.length >= 2) terms.add(w);
  }
  return [...terms].sort((a, b) => b.length - a.length);
}

function markTerms(root, terms) {
  // terms: the retriever's highlights ({text, word_start, whole_word}: what it placed the snippets
  // by, question words and stopwords left out), or the query's own words when it sent none
  if (!terms.length) return;
  const escaped = (t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const pattern = (t) => typeof t === "string"
    // Latin words at a word start only ("no" marks "notes" but not "nothing"'s middle, nor "piano"); Han anywhere
    ? (/^[\u3400-\u9fff]/.test(t) ? "" : "(?<![\\p{L}\\p{N}_])") + escaped(t)
        // a stem's part marks its whole word ("handl" marks "handling")
    : (t.word_start ? "(?<![\\p{L}\\p{N}])" : "") + escaped(t.text)
      + (t.whole_word ? "(?![\\p{L}\\p{N}])" : t.word_start ? "[\\p{L}\\p{N}]*" : "");
  const re = new RegExp("(" + terms.map(pattern).join("|") + ")", "giu");
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const parts = node.nodeValue.split(re);
    if (parts.length < 2) continue;
    const frag = document.createDocumentFragment();
    parts.forEach((part, i) => {
      if (i % 2) { const m = document.createElement("mark"); m.textContent = part; frag.appendChild(m); }
      else if (part) frag.appendChild(document.createTextNode(part));
    });
    node.parentNode.replaceChild(frag, node);
  }
}

async function searchView(_arg, params) {
  const q = params.get("q") || "";
  const mode = params.get("mode") || "hybrid";
  view().innerHTML = `<h1>Search debugger</h1>
  <form id="search-form">
    <div class="row"><input type="search" id="q" placeholder="SQLITE_BUSY, E0502, 借用检查器 …" value="${esc(q)}" autofocus>
    <select id="mode" aria-label="mode">${["hybrid", "bm25", "vector"].map((m) => `<option${m === mode ? " selected" : ""}>${m}</option>`).join("")}</select>
    <button>Search</button></div>
    <div class="row dim">scope:
      <input id="diary" placeholder="diary (top folder)" value="${esc(params.get("diary") || "")}" size="14" aria-label="diary">
      <input id="prefix" placeholder="path prefix" value="${esc(params.get("prefix") || "")}" size="14" aria-label="path prefix">
      <input id="tag" placeholder="tags (comma)" value="${esc(params.get("tag") || "")}" size="16" aria-label="tags">
      <input id="since" type="date" value="${esc(params.get("since") || "")}" aria-label="dated since" title="notes dated this day or later">
      <input id="until" type="date" value="${esc(params.get("until") || "")}" aria-label="dated until" title="notes dated this day or earlier">
      <label><input type="checkbox" id="tagmemo"${params.get("tagmemo") === "1" ? " checked" : ""}> TagMemo</label>
      <input id="tag_weight" placeholder="β₀ 0–1" value="${esc(params.get("tag_weight") || params.get("beta") || "")}" size="5" aria-label="TagMemo beta">
      <input id="core_tags" placeholder="core tags" value="${esc(params.get("core_tags") || "")}" size="10" aria-label="TagMemo core tags">
      <label><input type="checkbox" id="dedup"${params.get("dedup") === "1" ? " checked" : ""}> dedup</label>
      <input id="limit" type="number" min="1" max="100" value="${esc(params.get("limit") || "10")}" aria-label="limit">
    </div>
  </form>
  <div id="meta" class="dim"></div><div id="channels" class="channels"></div><div id="hits"></div>`;
  $("#search-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const p = new URLSearchParams({ q: $("#q").value, mode: $("#mode").value });
    for (const k of ["diary", "prefix", "tag", "since", "until", "tag_weight", "core_tags", "limit"]) if ($("#" + k).value.trim()) p.set(k, $("#" + k).value.trim());
    if ($("#tagmemo").checked) p.set("tagmemo", "1");
    if ($("#dedup").checked) p.set("dedup", "1");
    location.hash = "#/search?" + p;
  });
  const box = $("#q");  // the form is drawn anew for each search: keep typing where the query is
  box.focus({ preventScroll: true });
  box.setSelectionRange(box.value.length, box.value.length);
  const scoped = ["diary", "prefix", "tag", "since", "until"].some((k) => (params.get(k) || "").trim());
  if (!q.trim() && !scoped) { $("#hits").innerHTML = `<p class="dim">Type a query, or set a scope alone to list its notes, newest first. Every hit shows why it ranked where it did; click a hit to open the note.</p>`; return; }
  const p = new URLSearchParams({ q, mode, explain: "1", limit: params.get("limit") || "10" });
  for (const k of ["diary", "prefix", "since", "until"]) if (params.get(k)) p.append(k, params.get(k));
  for (const t of (params.get("tag") || "").split(",")) if (t.trim()) p.append("tag", t.trim().replace(/^#/, ""));
  if (params.get("tagmemo") === "1") { p.set("tagmemo", "1"); for (const k of ["tag_weight", "core_tags"]) if (params.get(k)) p.set(k, params.get(k)); }
  if (params.get("dedup") === "1") p.set("dedup", "1");
  const d = await api("/api/search?" + p);
  // where the retriever's time went: the query's embedding overlaps BM25, the vector search follows it
  const parts = [d.query_embedding_ms > 0 ? `embedding ${d.query_embedding_ms.toFixed(1)}` : "", ...d.channels.filter((c) => c.ran && c.took_ms > 0).map((c) => `${c.name} ${c.took_ms.toFixed(1)}`)].filter(Boolean);
  const listing = !q.trim();  // a scope alone: its notes, newest first; no channel ran
  $("#meta").textContent = listing ? `${d.hits.length} notes in this scope, newest first · ${d.took_ms.toFixed(1)} ms`
    : `${d.hits.length} hits · ${d.took_ms.toFixed(1)} ms${parts.length ? ` (${parts.join(", ")})` : ""} · asked ${d.mode}, ran ${d.mode_used} · ${(d.partial || []).length ? d.partial.join(" · ") : `index vector coverage ${(100 * d.vector_coverage).toFixed(0)}%`}`;
  const weighed = (c) => (c.weight > 0 ? ` · weight ${c.weight.toFixed(2)}` : "");
  const confidence = (c) => (c.weight > 0 ? `${c.name === "bm25" ? "best vs 10th score: relative drop" : "best vs 10th cosine: gap"} ${c.confidence.toFixed(3)}` : c.why);
  $("#channels").innerHTML = listing ? "" : d.channels.map((c) => `<span class="chan ${c.ran ? "ran" : "off"}" title="${esc(confidence(c))}">${c.ran ? "✓" : "✗"} ${esc(c.name)}${c.ran ? " ran" + weighed(c) : " left out: " + esc(c.why)}</span>`).join("")
    + (d.tagmemo ? tagmemoChip(d.tagmemo) : "")
    + Object.entries(d.extra || {}).map(([k, v]) => `<span class="chan">${esc(k)}: ${esc(JSON.stringify(v))}</span>`).join("");
  const terms = d.highlights && d.highlights.length
    ? [...d.highlights].sort((a, b) => b.text.length - a.text.length)
    : queryTerms(q);
  const hits = $("#hits");
  const empty = (d.empty_scope || []).map((x) => `<span class="empty-scope">${esc(x)}</span>`);
  hits.innerHTML = !d.hits.length ? `<p class="dim">No hits${empty.length ? `: ${empty.join("; ")}.` : "."}</p>`
    : d.by_meaning_only ? `<p class="superseded" id="by-meaning">No note holds these words: below are the nearest notes by meaning, which may be about something else (scores are relative).</p>` : "";
  for (const h of d.hits) {
    const x = h.explain || {};
    const el = document.createElement("div");
    el.className = "hit";
    el.dataset.path = h.path;
    const heading = (x.heading_path || []).join(" › ");
    const tagmemo = (x.tagmemo_tags || []).length ? `<span class="badge tag" title="TagMemo">TagMemo ${x.tagmemo_tags.map((t) => esc(t.tag) + " " + t.weight.toFixed(2)).join(", ")}</span>` : "";
    const extra = Object.entries(x.extra || {}).map(([k, v]) => `<span class="score">${esc(k)} <b>${esc(typeof v === "number" ? +v.toFixed(4) : JSON.stringify(v))}</b></span>`).join("");
    el.innerHTML = `<div class="head"><a class="title" href="${noteHref(h.path)}">${esc(h.title || h.path)}</a>
      <span class="path">${esc(h.path)}:${h.lines[0]}–${h.lines[1]}</span>${hitDate(h)}${(h.problems || []).length ? `<span class="badge problem" title="${esc(h.problems.join("; "))}">⚠ ${esc(h.problems[0].split(":")[0])}</span>` : ""}
      ${x.graph_boost > 0 ? `<span class="badge graph" title="linked to another hit: +${x.graph_boost.toFixed(4)}">+Graph Boost</span>` : ""}${x.name_match >= 0.5 ? `<span class="badge name" title="the query holds ${Math.round(100 * x.name_match)} % of this note's title or an alias">Name match</span>` : ""}${EXACT[x.exact] ? `<span class="badge exact" title="${EXACT[x.exact][1]}">${EXACT[x.exact][0]}</span>` : ""}${tagmemo}</div>
      ${heading ? `<div class="crumbs">${esc(heading)}</div>` : ""}
      ${(h.superseded_by || []).length ? `<div class="superseded" title="a later note says it replaces this one: read it before acting on this">Superseded by ${h.superseded_by.map((p) => `<a href="${noteHref(p)}">${esc(p)}</a>`).join(", ")}</div>` : ""}
      <div class="snippet"></div>
      <div class="scores">${listing ? (h.tags.length ? `<span class="tags">${h.tags.map((t) => `<span class="tagchip">#${esc(t)}</span>`).join("")}</span>` : "") + "</div>" : `
        <span class="score">BM25 ${x.bm25 ? `<b>#${x.bm25.rank}</b> · ${x.bm25.score.toFixed(3)}` : "<b>—</b>"}</span>
        <span class="score"${x.not_embedded ? ` title="the vault is still being embedded and this note has no vector yet: hybrid counted it in the vector channel as BM25 scored it"` : ""}>vector ${x.vector ? `<b>#${x.vector.rank}</b> · cos ${x.vector.score.toFixed(3)}` : x.not_embedded ? "<b>not embedded yet</b>" : "<b>—</b>"}</span>
        ${x.graph_boost > 0 ? `<span class="score">graph <b>+${x.graph_boost.toFixed(4)}</b></span>` : ""}
        ${x.name_match > 0 ? `<span class="score" title="share of the note's title or an alias the query holds; BM25 adds its cube × the best BM25 score × less where the name holds little of the query: under 50 % of it in hybrid, less than all of it where BM25 ranks alone">name <b>${Math.round(100 * x.name_match)} %</b></span>` : ""}
        <span class="score">fused <b>${(x.fused_score ?? h.score).toFixed(5)}</b></span>${extra}
        ${h.tags.length ? `<span class="tags">${h.tags.map((t) => `<span class="tagchip">#${esc(t)}</span>`).join("")}</span>` : ""}
      </div>`}`;
    const snip = $(".snippet", el);
    const same = h.same_passage_as ? d.hits.findIndex((o) => o.path === h.same_passage_as) : -1;
    if (same >= 0) { // a copied note, a section several notes share: the passage is shown once
      snip.className = "snippet dim same-passage";
      snip.innerHTML = `the same passage as <a href="${noteHref(h.same_passage_as)}">${same + 1}. ${esc(h.same_passage_as)}</a>`;
    } else {
      snip.innerHTML = inlineMd(h.snippet.replace(/(^|\s)#{1,6}\s+/g, "$1"), {});
      markTerms(snip, terms);
    }
    el.addEventListener("click", (e) => { if (!e.target.closest("a")) location.hash = noteHref(h.path); });
    hits.appendChild(el);
  }
}

function hitDate(h) {
  // the day the note goes by (a date scope's): its own date, else the day it was committed (a
  // vault in git), else its file's modification day; the tooltip says which, and the others
  const day = h.date || h.committed || h.modified;
  const said = [h.date && `the note's date ${h.date}`, h.committed && `committed ${h.committed}`, h.modified && `file modified ${h.modified}`].filter(Boolean);
  return day ? ` <span class="dim date" title="${esc(said.join("; "))}">${esc(day)}</span>` : "";
}

function tagmemoChip(t) {
  // the query's TagMemo explanation: whether it reshaped the query, β, the tags it matched, dedup
  const num = (v) => (+(v || 0)).toFixed(3);
  const tags = (t.matched_tags || []).map((x) => `${esc(x.tag)} ${num(x.weight)}`).join(", ");
  const ignored = (t.core_tags_ignored || []).length ? " · core tags ignored: " + t.core_tags_ignored.map(esc).join(", ") : "";
  const detail = [`β ${num(t.beta)} (β₀ ${num(t.base_beta)})`, tags && "nearest tags " + tags, (t.core_tags || []).length && "core " + t.core_tags.map(esc).join(", "),
    t.dominant_axis && "axis " + esc(t.dominant_axis), t.dedup_dropped && `dedup −${esc(t.dedup_dropped)}`].filter(Boolean).join(" · ");
  const title = `logic depth ${num(t.logic_depth)} · entropy ${num(t.entropy)} · resonance ${num(t.resonance)} · coverage ${num(t.coverage)} · novelty ${num(t.novelty)}`;
  if (!t.applied) return `<span class="chan tagmemo" title="${esc(t.reason || "")}">TagMemo not applied${t.reason ? ": " + esc(t.reason) : ""}${ignored}</span>`;
  return `<span class="chan tagmemo ran" title="${esc(title)}">TagMemo applied · ${detail}${ignored}</span>`;
}

// ---------- safe Markdown ----------
function safeUrl(u) { return /^https?:\/\//i.test(u) ? u : null; }

function unesc(s) { return s.replace(/&amp;/g, "&").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'"); }

function inlineMd(text, resolved) {
  const codes = [];
  let s = String(text).replace(/`([^`\n]+)`/g, (_, c) => { codes.push(c); return "\u0000" + (codes.length - 1) + "\u0000"; });
  s = esc(s);
  // Logseq's tag of several words, `#[[release train]]`: a tag, as the scanner reads it, not a link
  s = s.replace(/(^|[^\w\/\\=&?#.-])#\[\[([^\[\]\n]+)\]\]/gu, '$1<span class="tagchip">#$2</span>');
  s = s.replace(/!?\[\[([^\]|#^]*)(?:#[^\]|]*)?(?:\^[^\]|]*)?(?:\|([^\]]*))?\]\]/g, (_, target, alias) => {
    // as the scanner reads it: `dendron://vault/` and #heading / ^block off; Dendron writes the
    // label first, `[[label|dendron://vault/note]]` or `[[label|note]]` (tried when `label` is no note)
    const name = (t) => unesc(t).replace(/^\s*dendron:\/\/[^/\]|]*\//, "").split(/[#^]/)[0].trim().replace(/\.md$/i, "");
    const labelFirst = Boolean(alias) && alias.trim().startsWith("dendron://");
    let path = labelFirst ? undefined : resolved[name(target)];
    let label = labelFirst ? target : alias || esc(name(target)) || target;
    if (!path && alias && resolved[name(alias)]) { path = resolved[name(alias)]; label = target; }
    return path ? `<a class="wikilink" href="${esc(noteHref(path))}">${label}</a>` : `<span class="unresolved" title="unresolved link">${label}</span>`;
  });
  // [label](path.md), [label](<a path with spaces.md#A heading>), [label](url "title"); as the
  // scanner reads it: percent-decoded, without #heading and .md
  // ![alt](src), an image: a link to it with its alt text, not fetched (a remote image would tell its
  // host who reads the note; it showed as "!" and a link)
  // a URL may hold balanced parentheses, as CommonMark reads it: `wiki/Rust_(programming_language)`
  s = s.replace(/(!?)\[([^\]]*)\]\((&lt;.+?&gt;|(?:[^()\s]|\([^()\s]*\))+)(?:\s+&quot;[^)]*?&quot;)?\)/g, (whole, bang, label, url) => {
    if (!bang && !label) return whole;
    if (bang) label = `<span class="image-link" title="an image, not shown here">🖼 ${label || "image"}</span>`;
    const raw = unesc(url.replace(/^&lt;|&gt;$/g, ""));
    let name = raw;
    try { name = decodeURIComponent(raw); } catch { /* not percent-encoded: as written */ }
    name = name.split("#")[0].replace(/\.(md|markdown)$/i, "");
    const path = resolved[name] || resolved[raw];
    if (path) return `<a href="${esc(noteHref(path))}">${label}</a>`;
    const ok = safeUrl(raw);
    return ok ? `<a href="${esc(ok)}" rel="noopener noreferrer nofollow" target="_blank">${label}</a>` : `<span class="unresolved">${label}</span>`;
  });
  s = s.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>").replace(/(^|[^*])\*([^*\n]+)\*/g, "$1<em>$2</em>");
  s = s.replace(/(^|\s)#([\p{L}\p{N}_\/-]+)/gu, '$1<span class="tagchip">#$2</span>');
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => `<code>${esc(codes[+i])}</code>`);
}

function renderMarkdown(md, resolved) {
  let text = md.replace(/\r\n?/g, "\n");
  const fm = text.match(/^---\n[\s\S]*?\n(?:---|\.\.\.)\n/);
  if (fm) text = text.slice(fm[0].length);
  const lines = text.split("\n");
  const out = [];
  let para = [], list = null, inComment = false;
  const flushPara = () => { if (para.length) { out.push(`<p>${inlineMd(para.join("\n"), resolved).replace(/\n/g, "<br>")}</p>`); para = []; } };
  const flushList = () => { if (list) { out.push(`<${list.tag}>${list.items.map((i) => `<li>${inlineMd(i, resolved)}</li>`).join("")}</${list.tag}>`); list = null; } };
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i];
    const fence = inComment ? null : line.match(/^\s*(```+|~~~+)\s*([\w-]*)/);
    if (inComment || (!fence && line.includes("%%"))) {
      // Obsidian hides `%% comments %%` when it shows a note (the scanner reads no link or tag in them)
      let shown = "";
      line.split("%%").forEach((part, k) => { if (k) inComment = !inComment; if (!inComment) shown += part; });
      if (!shown.trim()) continue;
      line = shown;
    }
    if (fence) {
      flushPara(); flushList();
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) body.push(lines[i]);
      out.push(`<pre><code class="lang-${esc(fence[2])}">${esc(body.join("\n"))}</code></pre>`);
      continue;
    }
    let m;
    if ((m = line.match(/^(#{1,6})\s+(.*)$/))) { flushPara(); flushList(); out.push(`<h${m[1].length}>${inlineMd(m[2], resolved)}</h${m[1].length}>`); continue; }
    if (/^\s*([-*_])\s*\1\s*\1[\s\1]*$/.test(line)) { flushPara(); flushList(); out.push("<hr>"); continue; }
    if ((m = line.match(/^>\s?(.*)$/))) { flushPara(); flushList(); out.push(`<blockquote>${inlineMd(m[1], resolved)}</blockquote>`); continue; }
    if ((m = line.match(/^\s*([-*+]|\d+[.)])\s+(.*)$/))) {
      flushPara();
      const tag = /\d/.test(m[1]) ? "ol" : "ul";
      if (!list || list.tag !== tag) { flushList(); list = { tag, items: [] }; }
      list.items.push(m[2].replace(/^\[( |x)\]\s/i, (_, x) => (x.trim() ? "☑ " : "☐ ")));
      continue;
    }
    if (!line.trim()) { flushPara(); flushList(); continue; }
    flushList();
    para.push(line);
  }
  flushPara(); flushList();
  return out.join("\n");
}

// ---------- note view ----------
const FM_SHOWN = 300;  // characters of a frontmatter value shown in the side card
async function noteView(path) {
  view().innerHTML = `<p class="dim">loading ${esc(path)}…</p>`;
  const n = await api("/api/note?path=" + encodeURIComponent(path));
  const resolved = {};
  for (const l of n.links) if (l.path) resolved[l.target] = l.path;
  const fmRows = Object.entries(n.frontmatter).map(([k, v]) => {
    const text = typeof v === "string" ? v : JSON.stringify(v);  // a long value is cut, whole in its tooltip
    return `<tr><td>${esc(k)}</td><td${text.length > FM_SHOWN ? ` title="${esc(text.slice(0, 4000))}"` : ""}>${esc(text.length > FM_SHOWN ? text.slice(0, FM_SHOWN) + "…" : text)}</td></tr>`;
  }).join("");
  // where in the note a link leads, as written: `#A heading`, `^block`
  const part = (l) => (l.heading ? ` #${l.heading}` : "") + (l.block ? ` ^${l.block}` : "");
  const linkItems = n.links.map((l) => l.path ? `<li><a href="${esc(noteHref(l.path))}">${esc(l.alias || l.target)}</a>${part(l) ? ` <span class="dim">${esc(part(l))}</span>` : ""} <span class="dim">L${l.line}</span></li>` : `<li><span class="unresolved">${esc(l.target)}</span> <span class="dim">unresolved</span></li>`).join("");
  view().innerHTML = `<div class="row"><a href="#/search" id="back" class="dim">← back</a>${n.title ? `<strong class="note-title">${esc(n.title)}</strong>` : ""}<span class="path">${esc(n.path)}</span>${n.date ? `<span class="dim" title="the note's date">${esc(n.date)}</span>` : n.committed ? `<span class="dim" title="the day of the last commit that changed it">${esc(n.committed)}</span>` : ""}
    <a href="#/graph/${encodeURIComponent(n.path)}">graph around this note</a></div>
  ${(n.superseded_by || []).length ? `<div class="card superseded" id="superseded">Superseded by ${n.superseded_by.map((p) => `<a href="${noteHref(p)}">${esc(p)}</a>`).join(", ")}: a later note says it replaces this one</div>` : ""}
  ${n.unreadable ? `<div class="card warn" id="unreadable">${esc(n.unreadable)}: shown as it was indexed</div>` : ""}
  <div class="note"><article class="md" id="note-body"></article>
  <aside class="side">
    <div class="card"><h2>Tags</h2><div class="tags">${n.tags.map((t) => `<a href="#/search?q=${encodeURIComponent("#" + t)}&tag=${encodeURIComponent(t)}&mode=bm25">#${esc(t)}</a>`).join("") || '<span class="dim">none</span>'}</div></div>
    <div class="card"><h2>Frontmatter</h2>${fmRows ? `<table class="fm">${fmRows}</table>` : '<span class="dim">none</span>'}</div>
    <div class="card"><h2>Outgoing links (${n.links.length})</h2><ul id="outgoing">${linkItems || '<li class="dim">none</li>'}</ul></div>
    <div class="card"><h2>Backlinks (${n.backlinks.length})</h2><ul id="backlinks">${n.backlinks.map((b) => `<li><a href="${esc(noteHref(b))}">${esc(b)}</a></li>`).join("") || '<li class="dim">none</li>'}</ul></div>
    ${n.problems.length ? `<div class="card warn">${n.problems.map(esc).join("<br>")}</div>` : ""}
  </aside></div>`;
  // back within the console; a note opened directly (a new tab, a bookmark) goes to search, not away
  $("#back").addEventListener("click", (e) => { e.preventDefault(); if (navigation > 1) history.back(); else location.hash = "#/search"; });
  $("#note-body").innerHTML = renderMarkdown(n.markdown || "", resolved) || '<p class="dim">(empty note)</p>';
  document.title = (n.title || n.path) + " · k0maru";
}

// why a hit was put first, before fusion's order (the retriever's `explain.exact`)
const EXACT = {
  name: ["First: its name", "the query is this note's title or an alias (the same words both ways): put first"],
  line: ["First: holds the query", "this passage holds the query word for word, and no other candidate's does: put first"],
  symbol: ["First: holds the symbol", "no other note of the vault holds the query's code or identifier (E0502, exit code 137, SQLITE_BUSY): put first"],
  replaces: ["Replaces a hit", "the search found a note that this one says it replaces: this one comes before it"],
};

// ---------- graph (own canvas renderer) ----------
const PALETTE = ["#22C55E", "#38BDF8", "#A78BFA", "#F472B6", "#FBBF24", "#F87171", "#2DD4BF", "#FB923C", "#A3E635", "#818CF8", "#E879F9", "#94A3B8"];

function layoutOverview(nodes, edges) {
  const n = nodes.length, x = new Float32Array(n), y = new Float32Array(n);
  const groups = new Map();
  nodes.forEach((nd, i) => { const g = groups.get(nd[2]) || []; g.push(i); groups.set(nd[2], g); });
  const sorted = [...groups.entries()].sort((a, b) => b[1].length - a[1].length);
  const golden = Math.PI * (3 - Math.sqrt(5));
  let placed = 0;
  sorted.forEach(([, members], gi) => {
    const radius = Math.sqrt(members.length) * 9;
    const r0 = Math.sqrt(placed + members.length / 2) * 9 * 1.25;
    const cx = gi === 0 ? 0 : Math.cos(gi * golden) * (r0 + radius), cy = gi === 0 ? 0 : Math.sin(gi * golden) * (r0 + radius);
    members.sort((a, b) => nodes[b][3] - nodes[a][3]);
    members.forEach((idx, k) => { const r = 9 * Math.sqrt(k + 0.5), t = k * golden; x[idx] = cx + r * Math.cos(t); y[idx] = cy + r * Math.sin(t); });
    placed += members.length;
  });
  // a few smoothing passes: each node moves a little toward its neighbours (O(links) per pass)
  const sx = new Float32Array(n), sy = new Float32Array(n), cnt = new Uint16Array(n);
  for (let pass = 0; pass < 6; pass++) {
    sx.fill(0); sy.fill(0); cnt.fill(0);
    for (let e = 0; e < edges.length; e += 2) {
      const a = edges[e], b = edges[e + 1];
      sx[a] += x[b]; sy[a] += y[b]; cnt[a]++; sx[b] += x[a]; sy[b] += y[a]; cnt[b]++;
    }
    for (let i = 0; i < n; i++) if (cnt[i]) { x[i] += (sx[i] / cnt[i] - x[i]) * 0.08; y[i] += (sy[i] / cnt[i] - y[i]) * 0.08; }
  }
  return { x, y };
}

function layoutForce(nodes, edges) {
  const n = nodes.length, x = new Float32Array(n), y = new Float32Array(n);
  nodes.forEach((nd, i) => { const r = 40 + 110 * nd[4] + 6 * i ** 0.5, t = i * 2.399; x[i] = i === 0 ? 0 : r * Math.cos(t); y[i] = i === 0 ? 0 : r * Math.sin(t); });
  const iterations = Math.max(30, Math.min(300, Math.floor(2e7 / Math.max(1, n * n))));
  const dx = new Float32Array(n), dy = new Float32Array(n);
  for (let it = 0; it < iterations; it++) {
    dx.fill(0); dy.fill(0);
    const cool = 1 - it / iterations;
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) {
      let ddx = x[i] - x[j], ddy = y[i] - y[j], d2 = ddx * ddx + ddy * ddy + 0.01;
      const f = 2400 / d2; dx[i] += ddx * f; dy[i] += ddy * f; dx[j] -= ddx * f; dy[j] -= ddy * f;
    }
    for (let e = 0; e < edges.length; e += 2) {
      const a = edges[e], b = edges[e + 1], ddx = x[b] - x[a], ddy = y[b] - y[a], d = Math.sqrt(ddx * ddx + ddy * ddy) + 0.01;
      const f = (d - 70) * 0.04; dx[a] += (ddx / d) * f * 10; dy[a] += (ddy / d) * f * 10; dx[b] -= (ddx / d) * f * 10; dy[b] -= (ddy / d) * f * 10;
    }
    for (let i = 1; i < n; i++) {
      const len = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]) || 1, step = Math.min(len, 30 * cool + 1);
      x[i] += (dx[i] / len) * step; y[i] += (dy[i] / len) * step;
    }
  }
  return { x, y };
}

function drawGraph(canvas, data, pos, opts) {
  const nodes = data.nodes, edges = data.edges, n = nodes.length;
  const colour = new Map();
  const radius = new Float32Array(n);
  for (let i = 0; i < n; i++) { if (!colour.has(nodes[i][2])) colour.set(nodes[i][2], PALETTE[colour.size % PALETTE.length]); radius[i] = 2 + Math.sqrt(nodes[i][3]) * (opts.overview ? 0.6 : 1.2); }
  let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
  for (let i = 0; i < n; i++) { minX = Math.min(minX, pos.x[i]); maxX = Math.max(maxX, pos.x[i]); minY = Math.min(minY, pos.y[i]); maxY = Math.max(maxY, pos.y[i]); }
  const ctx = canvas.getContext("2d");
  const state = { scale: 1, ox: 0, oy: 0, hover: -1 };
  // labels go to the best-linked notes first, and a label that would cover one already drawn is left
  // out (the hover tip still names every note): a dense cluster's titles were drawn over each other
  const labelOrder = [...Array(n).keys()].sort((a, b) => nodes[b][3] - nodes[a][3] || a - b);
  const labelWidth = new Float32Array(n).fill(-1);
  function fit() {
    const w = canvas.clientWidth, h = canvas.clientHeight, dpr = window.devicePixelRatio || 1;
    canvas.width = w * dpr; canvas.height = h * dpr; ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const spanX = Math.max(1, maxX - minX), spanY = Math.max(1, maxY - minY);
    state.scale = Math.min((w - 60) / spanX, (h - 60) / spanY, 4);  // a small vault fills the canvas too
    state.ox = w / 2 - ((minX + maxX) / 2) * state.scale; state.oy = h / 2 - ((minY + maxY) / 2) * state.scale;
  }
  function paint() {
    const started = performance.now();
    const w = canvas.clientWidth, h = canvas.clientHeight, s = state.scale;
    ctx.fillStyle = "#0B1222"; ctx.fillRect(0, 0, w, h);
    ctx.strokeStyle = opts.overview ? "rgba(148,163,184,0.10)" : "rgba(148,163,184,0.45)"; ctx.lineWidth = 1;
    ctx.beginPath();
    for (let e = 0; e < edges.length; e += 2) {
      const a = edges[e], b = edges[e + 1];
      ctx.moveTo(pos.x[a] * s + state.ox, pos.y[a] * s + state.oy); ctx.lineTo(pos.x[b] * s + state.ox, pos.y[b] * s + state.oy);
    }
    ctx.stroke();
    for (const [diary, c] of colour) {
      ctx.fillStyle = c; ctx.beginPath();
      for (let i = 0; i < n; i++) {
        if (nodes[i][2] !== diary) continue;
        const px = pos.x[i] * s + state.ox, py = pos.y[i] * s + state.oy;
        if (px < -10 || py < -10 || px > w + 10 || py > h + 10) continue;
        const r = Math.max(1.2, radius[i] * Math.min(1.5, Math.sqrt(s)));
        ctx.moveTo(px + r, py); ctx.arc(px, py, r, 0, Math.PI * 2);
      }
      ctx.fill();
    }
    if (!opts.overview && n) { ctx.strokeStyle = "#F8FAFC"; ctx.lineWidth = 2; ctx.beginPath(); ctx.arc(pos.x[0] * s + state.ox, pos.y[0] * s + state.oy, radius[0] * Math.min(1.5, Math.sqrt(s)) + 3, 0, Math.PI * 2); ctx.stroke(); }
    ctx.fillStyle = "#E2E8F0"; ctx.font = "12px 'JetBrains Mono','Noto Sans SC',monospace";
    const labelAll = !opts.overview || s > 2.5;
    const drawn = [], labelled = [];  // [x0, y0, x1, y1] of each label drawn, and its note
    for (const i of labelOrder) {
      if (drawn.length >= 400 || (!labelAll && nodes[i][3] < opts.hubDegree)) break;
      const px = pos.x[i] * s + state.ox, py = pos.y[i] * s + state.oy;
      if (px < 0 || py < 0 || px > w || py > h) continue;
      const text = nodes[i][1] || nodes[i][0];
      if (labelWidth[i] < 0) labelWidth[i] = ctx.measureText(text).width;
      const box = [px + radius[i] + 3, py - 9, px + radius[i] + 3 + labelWidth[i], py + 6];
      if (drawn.some((b) => box[0] < b[2] && b[0] < box[2] && box[1] < b[3] && b[1] < box[3])) continue;
      ctx.fillText(text, box[0], py + 4); drawn.push(box); labelled.push(nodes[i][0]);
    }
    canvas.dataset.labels = JSON.stringify(drawn.map((b, k) => [labelled[k], ...b.map(Math.round)]));
    canvas.dataset.paintMs = (performance.now() - started).toFixed(1);
  }
  function nodeAt(mx, my) {
    let best = -1, bestD = 100;
    for (let i = 0; i < n; i++) {
      const px = pos.x[i] * state.scale + state.ox - mx, py = pos.y[i] * state.scale + state.oy - my, d = px * px + py * py;
      if (d < bestD) { bestD = d; best = i; }
    }
    return best;
  }
  fit(); paint();
  let drag = null, moved = false;
  canvas.onmousedown = (e) => { drag = [e.offsetX, e.offsetY, state.ox, state.oy]; moved = false; };
  canvas.onmousemove = (e) => {
    if (drag) { state.ox = drag[2] + e.offsetX - drag[0]; state.oy = drag[3] + e.offsetY - drag[1]; moved = moved || Math.abs(e.offsetX - drag[0]) + Math.abs(e.offsetY - drag[1]) > 3; requestAnimationFrame(paint); return; }
    const i = nodeAt(e.offsetX, e.offsetY), tip = $("#graph-tip");
    if (i >= 0) { tip.style.display = "block"; tip.style.left = e.offsetX + 12 + "px"; tip.style.top = e.offsetY + 8 + "px"; tip.textContent = `${nodes[i][1] || nodes[i][0]} · ${nodes[i][0]} · ${nodes[i][3]} links`; }
    else tip.style.display = "none";
  };
  canvas.onmouseup = (e) => { if (drag && !moved) { const i = nodeAt(e.offsetX, e.offsetY); if (i >= 0) opts.onClick(nodes[i][0], e); } drag = null; };
  canvas.onmouseleave = () => { drag = null; $("#graph-tip").style.display = "none"; };
  canvas.onwheel = (e) => {
    e.preventDefault();
    const f = Math.exp(-e.deltaY * 0.0015);
    state.ox = e.offsetX - (e.offsetX - state.ox) * f; state.oy = e.offsetY - (e.offsetY - state.oy) * f; state.scale *= f;
    requestAnimationFrame(paint);
  };
  const onResize = () => { fit(); paint(); };
  window.addEventListener("resize", onResize);
  return () => window.removeEventListener("resize", onResize);
}

async function graphView(path, params) {
  const t0 = performance.now();
  const hops = params.get("hops") === "2" ? 2 : 1;
  view().innerHTML = `<div class="row"><h1 id="graph-title">${path ? "Around " + esc(path) : "Whole vault"}</h1>
    ${path ? `<a href="#/graph/${encodeURIComponent(path)}?hops=${3 - hops}">${hops === 1 ? "2 hops" : "1 hop"}</a> · <a href="${noteHref(path)}">open note</a> · <a href="#/graph">whole vault</a>` : ""}
    <span id="graph-meta" class="dim"></span></div>
    <div id="graph-wrap"><canvas id="graph-canvas" aria-label="link graph"></canvas><div id="graph-tip"></div></div>
    <p class="dim">Drag to pan, wheel to zoom, click a note to ${path ? "open it" : "see its neighbourhood (shift-click opens it)"}.</p>`;
  const q = path ? `?path=${encodeURIComponent(path)}&hops=${hops}` : "";
  const data = await api("/api/graph" + q);
  const t1 = performance.now();
  const overview = !path;
  const pos = overview ? layoutOverview(data.nodes, data.edges) : layoutForce(data.nodes, data.edges);
  const degrees = data.nodes.map((nd) => nd[3]).sort((a, b) => b - a);
  const canvas = $("#graph-canvas");
  cleanup = drawGraph(canvas, data, pos, {
    overview,
    hubDegree: degrees[Math.min(degrees.length - 1, 40)] || 0,
    onClick: (p, e) => { location.hash = overview && !e.shiftKey ? "#/graph/" + encodeURIComponent(p) : noteHref(p); },
  });
  const t2 = performance.now();
  canvas.dataset.renderMs = (t2 - t0).toFixed(1);
  canvas.dataset.layoutMs = (t2 - t1).toFixed(1);
  canvas.dataset.nodes = data.nodes.length;
  canvas.dataset.edges = data.edges.length / 2;
  $("#graph-meta").textContent = `${fmt(data.nodes.length)} notes · ${fmt(data.edges.length / 2)} links${data.truncated ? " (truncated)" : ""} · drawn in ${(t2 - t0).toFixed(0)} ms`;
}

// ---------- offloaded logs ----------
async function logsView(node) {
  view().innerHTML = `<p class="dim">loading…</p>`;
  const d = await api("/api/logs");
  view().innerHTML = `<h1>Offloaded logs <span class="dim">(${fmt(d.total)})</span></h1><div id="logs"></div>`;
  const box = $("#logs");
  if (!d.logs.length) box.innerHTML = `<p class="muted-box">Nothing offloaded yet. <code>k0maru offload -- cargo test</code> or the MCP tool <code>offload_log</code> put long logs here.</p>`;
  for (const l of d.logs) {
    const el = document.createElement("div");
    el.className = "card log";
    el.id = l.node_id;
    const exit = l.exit_code == null ? '<span class="exit dim">exit ?</span>' : `<span class="exit ${l.exit_code ? "bad" : "good"}">exit ${l.exit_code}</span>`;
    el.innerHTML = `<div class="meta"><b>${esc(l.task_id || "(no task)")}</b> <code>${esc(l.command || "(piped)")}</code> ${exit}
      <span class="dim">${fmt(l.line_count)} lines · ${fmt(l.original_tokens)} → ${fmt(l.summary_tokens)} tokens</span>
      <span class="dim">${l.at_unix_ms ? new Date(+l.at_unix_ms).toLocaleString() : ""}</span> <code class="dim">${esc(l.node_id)}</code></div>
      <div>first error: <span class="err">${esc(l.first_error || "none recognised")}</span>${l.first_location ? ` at <span class="path">${esc(l.first_location)}</span>` : ""}</div>
      <div class="diagram"></div>
      <div class="row"><button type="button" data-act="error">around first error</button>
        <input data-in="start" size="6" placeholder="from" aria-label="from line"> <input data-in="end" size="6" placeholder="to" aria-label="to line"><button type="button" data-act="range" class="ghost">lines</button>
        <input data-in="grep" size="18" placeholder="grep regex" aria-label="grep"><button type="button" data-act="grep" class="ghost">grep</button></div>
      <pre class="lines" hidden></pre>`;
    $(".diagram", el).innerHTML = l.svg; // rendered on the server from the Mermaid source, every text escaped
    el.addEventListener("click", async (e) => {
      const act = e.target.dataset && e.target.dataset.act;
      if (!act) return;
      const p = new URLSearchParams();
      if (act === "error") p.set("around_error", "1");
      if (act === "range") { p.set("start", $('[data-in="start"]', el).value || "1"); p.set("end", $('[data-in="end"]', el).value || "0"); }
      if (act === "grep") { p.set("grep", $('[data-in="grep"]', el).value); p.set("context", "1"); }
      const pre = $("pre.lines", el);
      pre.hidden = false;
      try {
        const s = await api(`/api/logs/${encodeURIComponent(l.node_id)}?${p}`);
        pre.innerHTML = s.lines.length ? s.lines.map(([num, text]) => `<span class="n">${num}</span>${esc(text)}`).join("\n") : `<span class="dim">no lines (log has ${s.total_lines})</span>`;
      } catch (err) { if (!(err instanceof AuthError || err instanceof Stale)) pre.innerHTML = `<span class="err">${esc(err.message)}</span>`; }
    });
    box.appendChild(el);
  }
  if (node && document.getElementById(node)) document.getElementById(node).scrollIntoView();
}

// ---------- status, scoreboard, live changes ----------
function prices() {
  const saved = JSON.parse(localStorage.getItem("k0maru.prices") || "null");
  const server = (lastStatus && lastStatus.prices) || { per_million: 3, currency: "USD" };
  return saved || server;
}

async function statusView() {
  view().innerHTML = `<h1>Token scoreboard</h1><div class="cards" id="score"></div>
    <div class="row dim">price per million tokens <input id="price" size="7" aria-label="price per million tokens"> <input id="currency" size="4" aria-label="currency">
    <button type="button" class="ghost" id="price-reset">server default</button></div>
    <h2>Indexing</h2><div class="card"><div class="bar big" id="big-bar"><div></div></div><div id="queue" class="row"></div></div>
    <div class="cards" id="counts"></div><div id="scanner-notes"></div>
    <h2>Services</h2><div class="cards" id="services"></div>
    <h2>Embedder workers</h2><div class="cards" id="workers"></div>
    <h2>Live changes</h2><div id="changes-state" class="dim">connecting…</div><div id="changes" class="card changes"></div>`;
  const pr = prices();
  $("#price").value = pr.per_million; $("#currency").value = pr.currency;
  const savePrices = () => { const v = parseFloat($("#price").value); if (v >= 0) localStorage.setItem("k0maru.prices", JSON.stringify({ per_million: v, currency: $("#currency").value || "USD" })); paint(lastStatus); };
  $("#price").addEventListener("input", savePrices); $("#currency").addEventListener("input", savePrices);
  $("#price-reset").addEventListener("click", () => { localStorage.removeItem("k0maru.prices"); const p = prices(); $("#price").value = p.per_million; $("#currency").value = p.currency; paint(lastStatus); });
  function paint(s) {
    if (!s) return;
    const t = s.tokens, p = prices();
    const money = (tok) => (tok * p.per_million / 1e6).toLocaleString("en-US", { maximumFractionDigits: 4, minimumFractionDigits: 2 }) + " " + p.currency;
    const r = t && t.recall;
    const cards = !t ? [] : [
      ["tokens saved by offload", fmt(t.saved), "tokens-saved"], ["money saved by offload", money(t.saved), "money-saved"],
      ["offloaded logs (distinct)", fmt(t.offloads), "offloads"], ["offload before → after", `${fmt(t.original)} → ${fmt(t.summary)} (${t.saved_ratio > 0 ? "−" : ""}${(100 * t.saved_ratio).toFixed(1)}%)`, "", t.streamed ? `after: the summaries, and ${fmt(t.streamed)} tokens of lines shown while the commands ran` : ""],
      ...(t.repeats ? [["offloads of a log already counted", fmt(t.repeats), "repeats", "not counted again"]] : []),
      ...(r ? [["tokens saved by recall", fmt(r.saved), "recall-saved"], ["money saved by recall", money(r.saved), "recall-money"],
        ["recall answers", fmt(r.answers), "recalls"], ["notes read after a recall", fmt(r.reads || 0), "reads"], ["whole notes → answers", `${fmt(r.note_tokens)} → ${fmt(r.answer_tokens)}`, ""],
        ["total saved", `${fmt(t.saved + r.saved)} · ${money(t.saved + r.saved)}`, "total-saved"]] : []),
      ...Object.entries(t.extra || {}).map(([k, v]) => [k.replace(/_/g, " "), typeof v === "number" ? fmt(v) : JSON.stringify(v), ""]),
    ];
    $("#score").innerHTML = !t ? `<div class="card err">offload service unreachable</div>`
      : cards.map(([k, v, id, note]) => `<div class="card"${id ? ` id="${id}"` : ""}><div class="dim">${esc(k)}</div><div class="big">${esc(v)}</div>${note ? `<div class="dim">${esc(note)}</div>` : ""}</div>`).join("");
    const q = s.queue, i = s.index;
    $("#big-bar > div").style.width = q ? (100 * q.progress).toFixed(1) + "%" : "0";
    const build = i && i.build ? `building the index: ${fmt(i.build.notes_indexed)} of ${fmt(i.build.notes_total)} notes (searches answer from these)` : "";
    $("#queue").innerHTML = q ? `<span>${build ? esc(build) : q.indexing ? "indexing" : "up to date"}</span><span class="dim">queue ${fmt(q.pending_chunks)} chunks · ${q.rate_per_s}/s · ETA ${q.eta_s != null ? eta(q.eta_s) : "—"} · ${fmt(q.events_behind)} events behind</span>` : `<span class="err">retriever unreachable</span>`;
    $("#counts").innerHTML = i ? [["notes", i.documents], ["chunks", i.chunks], ["chunks with vectors", i.chunks_with_vectors], ["vector index", vectorIndex(i)], ["BM25", i.bm25_deleted ? `${fmt(i.bm25_deleted)} stale` : "compact", i.bm25_deleted ? `replaced chunk${i.bm25_deleted === 1 ? "" : "s"} still counted in its statistics; compacted once edits pause` : ""], ["applied seq", i.last_applied_seq], ["scanner seq", s.scanner ? s.scanner.last_seq : null], ["skipped files", s.scanner ? s.scanner.skipped : null], ["watching", s.scanner ? (s.scanner.watch_note ? "by polling" : s.scanner.watching ? "live" : "off") : null]]
      .map(([k, v, note]) => `<div class="card"><div class="dim">${k}</div><div class="big">${typeof v === "string" ? esc(v) : fmt(v)}</div>${note ? `<div class="dim">${esc(note)}</div>` : ""}</div>`).join("") : "";
    const notes = !s.scanner ? [] : [s.scanner.problem ? `changes not recorded: ${s.scanner.problem}` : "",
      i && i.params_error ? `rag_params.json rejected, the previous values hold: ${i.params_error}` : "",
      ...(s.scanner.out_of_sight || []).map((x) => `notes kept as they were, out of sight: ${x}`),
      s.scanner.watch_note ? `watching by polling: ${s.scanner.watch_note}` : ""].filter(Boolean);
    const excluded = s.scanner ? s.scanner.excluded || [] : [];
    $("#scanner-notes").innerHTML = notes.map((n) => `<div class="card warn">${esc(n)}</div>`).join("")
      + (excluded.length ? `<div class="card" id="excluded"><div class="dim">not indexed, as the vault's own settings exclude them</div>${excluded.map((x) => `<div>${esc(x)}</div>`).join("")}</div>` : "")
      + (s.scanner && s.scanner.commit_days ? `<div class="card" id="commit-days"><div class="dim">dates (a vault in git)</div><div>${esc(s.scanner.commit_days)}</div></div>` : "")
      + (i && i.notes_with_problems ? `<div class="card" id="problem-notes"><div class="dim">${fmt(i.notes_with_problems)} note${i.notes_with_problems === 1 ? "" : "s"} indexed with problems${i.notes_with_problems > (i.problem_notes || []).length ? ` (the first ${(i.problem_notes || []).length} by path)` : ""}</div>${(i.problem_notes || []).map((x) => `<div><a href="${noteHref(x.path)}">${esc(x.path)}</a>: ${esc(x.problems.join("; "))}</div>`).join("")}</div>` : "")
      + (s.scanner && s.scanner.skipped ? `<div class="card" id="skipped-files"><div class="dim">${fmt(s.scanner.skipped)} file${s.scanner.skipped === 1 ? "" : "s"} not indexed${s.scanner.skipped > (s.scanner.skipped_files || []).length ? ` (the first ${(s.scanner.skipped_files || []).length} by path)` : ""}</div>${(s.scanner.skipped_files || []).map((x) => `<div>${esc(x.path)}: ${esc(x.reason)}</div>`).join("")}</div>` : "");
    $("#services").innerHTML = consoleDown
      ? `<div class="card err" id="console-down">${esc(DOWN_TEXT)}</div>` + Object.keys(s.services).map((n) => `<div class="card"><span class="dot unknown"></span>${esc(n)}<div class="dim">unknown</div></div>`).join("")
      : Object.entries(s.services).map(([n, st]) => `<div class="card"><span class="dot ${healthClass(st)}"></span>${esc(n)}<div class="dim">${esc(st)}</div></div>`).join("");
    const w = s.workers || [];
    $("#workers").innerHTML = w.length ? w.map((x) => `<div class="card worker"><span class="dot ${x.gone || x.idle_ms >= 5000 ? "warn" : "ok"}"></span>${esc(x.name)}<div class="dim">${x.gone ? "gone" : x.idle_ms < 5000 ? "live" : "silent (busy, or stopped)"} · ${fmt(x.pending)} jobs held · idle ${(x.idle_ms / 1000).toFixed(1)} s</div></div>`).join("")
      : `<div class="card dim">no worker on the job stream</div>`;
  }
  paint(lastStatus);
  statusListeners.add(paint);
  if (!lastStatus) paint(await api("/api/status"));
  // the journal's last changes first (an idle vault shows what changed last), then each as it
  // is recorded; the server fills what PUB/SUB dropped and says what it could not
  const changes = [], MAX_CHANGES = 30;
  const when = (ms) => { const d = new Date(ms); return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleString(); };
  const stateLine = (text, cls) => { const el = $("#changes-state"); if (el) { el.textContent = text; el.className = cls; } };
  const add = (html) => {
    changes.unshift(html);
    changes.length = Math.min(changes.length, MAX_CHANGES);
    $("#changes").innerHTML = changes.join("");
  };
  const es = new EventSource(withToken("/api/events"));
  let journal = null;
  const recorded = (seq) => { // the count of changes the journal holds goes up with each one listed
    if (!journal || journal.error) return;
    journal.last_seq = Math.max(journal.last_seq, seq);
    stateLine(`live · newest first · ${fmt(journal.last_seq)} change${journal.last_seq === 1 ? "" : "s"} recorded since the index began`, "dim");
  };
  es.addEventListener("journal", (m) => { // first on every (re)connection: the list starts again
    journal = JSON.parse(m.data);
    changes.length = 0;
    $("#changes").innerHTML = journal.last_seq || journal.error ? "" : `<div class="dim">no change recorded yet</div>`;
    if (journal.error) stateLine(`the scanner's journal could not be read (${journal.error}): only changes from now on are listed`, "warn");
    recorded(journal.last_seq);
  });
  es.addEventListener("skipped", (m) => {
    const g = JSON.parse(m.data);
    add(`<div class="warn">${fmt(g.count)} change${g.count === 1 ? "" : "s"} not listed (#${g.after_seq + 1}–#${g.before_seq - 1})</div>`);
  });
  es.onmessage = (m) => {
    const e = JSON.parse(m.data);
    const path = e.kind === "deleted" ? esc(e.path) : `<a href="${noteHref(e.path)}">${esc(e.path)}</a>`;
    add(`<div class="change"><span class="dim">${esc(when(e.at_unix_ms))} #${e.seq}</span> ${esc(e.kind)} ${e.old_path ? esc(e.old_path) + " → " : ""}${path}</div>`);
    recorded(e.seq);
  };
  es.onerror = () => stateLine("the console's connection dropped; reconnecting…", "warn");
  cleanup = () => es.close();
}

// ---------- start ----------
(async function start() {
  paintPulse();
  try { await api("/api/status"); } catch (e) { if (e instanceof AuthError) return; }
  startLive();
  route();
})();
