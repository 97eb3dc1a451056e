"""OpenAPI 3.1 description of the console's JSON API (served at /api/openapi.json).

The schemas are strict about what the console relies on and open (`additionalProperties`)
where newer services add fields; tests validate every endpoint's answers against them.
"""

from __future__ import annotations

from typing import Any

_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}
_NUM = {"type": "number"}
_BOOL = {"type": "boolean"}


def _obj(props: dict[str, Any], required: list[str] | None = None, extra: bool = True) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required if required is not None else list(props),
        "additionalProperties": extra,
    }


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _query(name: str, schema: dict[str, Any], description: str, required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": description}


SCHEMAS: dict[str, Any] = {
    "Error": _obj({"error": _STR}),
    "Channel": _obj(
        {
            "name": {"enum": ["bm25", "vector"]},
            "ran": _BOOL,
            "why": _STR,
            "asked": _BOOL,
            "weight": {**_NUM, "minimum": 0, "maximum": 1, "description": "hybrid: share of the fused score"},
            "confidence": {**_NUM, "minimum": 0, "description": "hybrid: best note against the 10th"},
        }
    ),
    "Highlight": _obj(
        {
            "text": _STR,
            "word_start": {**_BOOL, "description": "only where no letter or digit comes before it (Latin)"},
            "whole_word": {**_BOOL, "description": "and none after it either (words under 3 characters)"},
        }
    ),
    "ScanRequest": _obj({"full": {**_BOOL, "default": False, "description": "re-read and re-hash every file"}}, []),
    "ScanStats": _obj(
        {
            "added": _INT,
            "modified": _INT,
            "deleted": _INT,
            "renamed": _INT,
            "unchanged": _INT,
            "skipped": _INT,
            "last_seq": _INT,
            "ms": _NUM,
        }
    ),
    "ChannelScore": _nullable(_obj({"rank": {"type": "integer", "minimum": 1}, "score": _NUM})),
    "Explain": _obj(
        {
            "bm25": _ref("ChannelScore"),
            "vector": _ref("ChannelScore"),
            "graph_boost": _NUM,
            "name_match": _NUM,
            "not_embedded": _BOOL,
            "exact": {"type": ["string", "null"], "enum": ["name", "line", "symbol", "replaces", None]},
            "fused_score": _NUM,
            "heading_path": {"type": "array", "items": _STR},
            "tagmemo_tags": {"type": "array", "items": _obj({"tag": _STR, "weight": _NUM})},
            "extra": {"type": "object"},
        }
    ),
    "Hit": _obj(
        {
            "path": _STR,
            "title": _STR,
            "snippet": _STR,
            "score": _NUM,
            "diary": _STR,
            "tags": {"type": "array", "items": _STR},
            "lines": {"type": "array", "items": _INT, "minItems": 2, "maxItems": 2},
            "date": _nullable({"type": "string", "format": "date"}),  # the note's own date
            "modified": _nullable({"type": "string", "format": "date"}),  # its file's modification day (UTC)
            "committed": _nullable({"type": "string", "format": "date"}),  # a vault in git: its last commit's day
            "problems": {"type": "array", "items": _STR},  # what the index found wrong with the note
            "same_passage_as": _nullable(_STR),  # an earlier hit whose passage is this one's, word for word
            "superseded_by": {"type": "array", "items": _STR},  # the notes that say they replace this one
            "explain": _ref("Explain"),
        },
        required=["path", "title", "snippet", "score", "diary", "tags", "lines"],
    ),
    "SearchResult": _obj(
        {
            "vault": _STR,
            "query": _STR,
            "mode": {"enum": ["hybrid", "bm25", "vector"]},
            "mode_used": _STR,
            "vector_coverage": {"type": "number", "minimum": 0, "maximum": 1},
            "took_ms": _NUM,
            "channels": {"type": "array", "items": _ref("Channel")},
            "partial": {
                "type": "array",
                "items": _STR,
                "description": "channels that ran over part of the vault (BM25 while the index is being built, the vector channel while embedding)",
            },
            "hits": {"type": "array", "items": _ref("Hit")},
            "highlights": {
                "type": "array",
                "items": _ref("Highlight"),
                "description": "what the snippets were placed by: the words searched for, lowered, as the part of each that is matched",
            },
            "empty_scope": {
                "type": "array",
                "items": _STR,
                "description": "no hits: each folder, diary or tag of the scope that no note is in, as a sentence",
            },
            "by_meaning_only": {
                "type": "boolean",
                "description": "hybrid: no note holds any of the query's words; the hits are only the nearest "
                "notes by meaning (scores are relative), which may be about something else",
            },
            "tagmemo": {"type": ["object", "null"], "description": "how TagMemo reshaped the query (explain on)"},
            "extra": {"type": "object"},
        }
    ),
    "Link": _obj(
        {
            "target": _STR,
            "alias": _STR,
            "heading": _STR,
            "line": _INT,
            "embed": _BOOL,
            "path": _nullable(_STR),
        }
    ),
    "Note": _obj(
        {
            "path": _STR,
            "title": _STR,
            "diary": _STR,
            "frontmatter": {"type": "object"},
            "tags": {"type": "array", "items": _STR},
            "aliases": {"type": "array", "items": _STR},
            "links": {"type": "array", "items": _ref("Link")},
            "outgoing": {"type": "array", "items": _STR},
            "backlinks": {"type": "array", "items": _STR},
            "superseded_by": {"type": "array", "items": _STR},  # the notes that say they replace this one
            "markdown": _STR,
            "chunks": {
                "type": "array",
                "items": _obj(
                    {"index": _INT, "heading_path": {"type": "array", "items": _STR}, "lines": {"type": "array"}}
                ),
            },
            "problems": {"type": "array", "items": _STR},
            "size": _INT,
            "mtime_ns": {"type": "integer"},
            "date": _nullable({"type": "string", "format": "date"}),
            "committed": _nullable({"type": "string", "format": "date"}),
            # why the file cannot be read now (an unmounted drive); markdown is then its text as indexed
            "unreadable": _nullable(_STR),
        }
    ),
    "Graph": _obj(
        {
            "path": _STR,
            "hops": {"type": "integer", "minimum": 0, "maximum": 2},
            "nodes": {
                "type": "array",
                "description": "[path, title, diary, degree, hop] per note",
                "items": {
                    "type": "array",
                    "prefixItems": [_STR, _STR, _STR, _INT, _INT],
                    "minItems": 5,
                    "maxItems": 5,
                },
            },
            "edges": {"type": "array", "items": _INT, "description": "flat pairs of node indices: source, target"},
            "truncated": _BOOL,
            "total_notes": _INT,
        }
    ),
    "LogEntry": _obj(
        {
            "node_id": {"type": "string", "pattern": "^node_[0-9a-f]{16}$"},
            "task_id": _STR,
            "command": _STR,
            "exit_code": _nullable({"type": "integer"}),
            "first_error": _STR,
            "first_location": _STR,
            "original_tokens": _INT,
            "summary_tokens": _INT,
            "line_count": _INT,
            "ref_path": _STR,
            "mermaid": _STR,
            "svg": {"type": "string", "pattern": "^<svg "},
            "at_unix_ms": {"type": ["integer", "string"]},
        },
        required=["node_id", "exit_code", "first_error", "first_location", "line_count", "mermaid", "svg"],
    ),
    "Logs": _obj({"total": _INT, "logs": {"type": "array", "items": _ref("LogEntry")}}),
    "LogSlice": _obj(
        {
            "node_id": _STR,
            "total_lines": _INT,
            "lines": {
                "type": "array",
                "items": {"type": "array", "prefixItems": [_INT, _STR], "minItems": 2, "maxItems": 2},
            },
        }
    ),
    "Status": _obj(
        {
            "vault": _STR,
            "at_unix_ms": _INT,
            "services": {"type": "object", "additionalProperties": _STR},
            "index": _nullable(
                _obj(
                    {
                        "documents": _INT,
                        "chunks": _INT,
                        "chunks_with_vectors": _INT,
                        "last_applied_seq": _INT,
                        "vectors_indexed": _INT,
                        "index_building": _BOOL,
                        "bm25_deleted": _INT,
                        "params_error": {
                            **_STR,
                            "description": "why rag_params.json was rejected (the previous values hold); empty when it was not",
                        },
                        "notes_with_problems": _INT,
                        "problem_notes": {
                            "type": "array",
                            "items": _obj({"path": _STR, "problems": {"type": "array", "items": _STR}}),
                        },
                        "build": _nullable(_obj({"notes_indexed": _INT, "notes_total": _INT})),
                    }
                )
            ),
            "scanner": _nullable(
                _obj(
                    {
                        "last_seq": _INT,
                        "documents": _INT,
                        "skipped": _INT,
                        "skipped_files": {"type": "array", "items": _obj({"path": _STR, "reason": _STR})},
                        "watching": _BOOL,
                        "watch_note": _STR,
                        "problem": _STR,
                        "excluded": {"type": "array", "items": _STR},
                        "out_of_sight": {"type": "array", "items": _STR},
                        "commit_days": _STR,
                    }
                )
            ),
            "workers": {
                "type": "array",
                "items": _obj({"name": _STR, "pending": _INT, "idle_ms": _INT, "gone": _BOOL}),
            },
            "queue": _nullable(
                _obj(
                    {
                        "vectors_enabled": _BOOL,
                        "pending_chunks": _INT,
                        "rate_per_s": _NUM,
                        "eta_s": _nullable(_NUM),
                        "progress": {"type": "number", "minimum": 0, "maximum": 1},
                        "events_behind": _INT,
                        "indexing": _BOOL,
                    }
                )
            ),
            "tokens": _nullable(
                _obj(
                    {
                        "offloads": _INT,
                        "original": _INT,
                        "summary": _INT,
                        "saved": _INT,
                        "saved_ratio": _NUM,
                        "streamed": {**_INT, "description": "of summary: tokens of lines shown while the commands ran"},
                        "repeats": {**_INT, "description": "offloads of a log already counted (not added again)"},
                        "saved_money": _NUM,
                        "recall": _obj(
                            {
                                "answers": _INT,
                                "note_tokens": _INT,
                                "answer_tokens": _INT,
                                "reads": _INT,
                                "saved": _INT,
                                "saved_money": _NUM,
                            }
                        ),
                        "extra": {"type": "object"},
                    }
                )
            ),
            "prices": _obj({"per_million": _NUM, "currency": _STR}),
        }
    ),
    "Health": _obj({"status": {"enum": ["ok", "degraded"]}, "retriever": _STR, "vault": _STR}),
}


def _answers(schema: str, errors: tuple[int, ...] = (400, 401, 502, 503)) -> dict[str, Any]:
    out: dict[str, Any] = {"200": {"description": "OK", "content": {"application/json": {"schema": _ref(schema)}}}}
    for code in errors:
        out[str(code)] = {"description": "error", "content": {"application/json": {"schema": _ref("Error")}}}
    return out


_SSE = {"200": {"description": "server-sent events", "content": {"text/event-stream": {"schema": _STR}}}}


def openapi_spec() -> dict[str, Any]:
    token_note = "When the console runs with a token, send `Authorization: Bearer <token>` (or `?token=` for streams)."
    path_param = _query("path", _STR, "vault-relative path of a note", required=True)
    return {
        "openapi": "3.1.0",
        "info": {"title": "k0maru console API", "version": "1", "description": token_note},
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"token": []}, {}],
        "paths": {
            "/healthz": {
                "get": {"summary": "retriever health", "security": [], "responses": _answers("Health", (503,))}
            },
            "/api/search": {
                "get": {
                    "summary": "search with a per-hit explanation",
                    "parameters": [
                        _query(
                            "q",
                            {"type": "string", "maxLength": 10_000},
                            "the query; empty with a scope (diary, prefix, tag, since, until): the notes in it, "
                            "newest first",
                        ),
                        _query("mode", {"enum": ["hybrid", "bm25", "vector"], "default": "hybrid"}, "channels"),
                        _query("limit", {"type": "integer", "minimum": 1, "maximum": 100, "default": 10}, "hits"),
                        _query("explain", {"enum": ["0", "1"], "default": "1"}, "per-hit explanation"),
                        _query("diary", {"type": "array", "items": _STR}, "first folder(s) to search in"),
                        _query("prefix", {"type": "array", "items": _STR}, "path prefix(es) to search in"),
                        _query(
                            "tag",
                            {"type": "array", "items": _STR},
                            "tags every hit must carry (any case, # or not; a tag takes the tags nested under it)",
                        ),
                        _query(
                            "since", _STR, "notes dated this day or later (YYYY-MM-DD, or today, yesterday, 7d, 2w)"
                        ),
                        _query("until", _STR, "notes dated this day or earlier (YYYY-MM-DD, or today, yesterday, 7d)"),
                        _query("tagmemo", {"enum": ["0", "1"]}, "run TagMemo"),
                        _query(
                            "tag_weight", {"type": "number", "minimum": 0, "maximum": 1}, "TagMemo β₀ (0 = configured)"
                        ),
                        _query("beta", {"type": "number", "minimum": 0, "maximum": 1}, "alias of tag_weight"),
                        _query("core_tags", _STR, "TagMemo core tags, comma-separated"),
                        _query("dedup", {"enum": ["0", "1"]}, "SVD-residual deduplication of the hits"),
                    ],
                    "responses": _answers("SearchResult", (400, 401, 413, 502, 503)),
                }
            },
            "/api/scan": {
                "post": {
                    "summary": "scan the vault once (what `k0maru scan` calls); a JSON body is required",
                    "description": "Takes the console token; a console without one takes the stack's gRPC token "
                    "(K0_GRPC_TOKEN) here, so reading the vault does not let anyone reindex it.",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _ref("ScanRequest")}},
                    },
                    "responses": _answers("ScanStats"),
                }
            },
            "/api/note": {
                "get": {
                    "summary": "a note: Markdown, frontmatter, tags, links and backlinks",
                    "parameters": [path_param],
                    "responses": _answers("Note", (400, 401, 404, 502, 503)),
                }
            },
            "/api/graph": {
                "get": {
                    "summary": "the link graph: a note's neighbourhood, or the whole vault without `path`",
                    "parameters": [
                        _query("path", _STR, "centre note (omit for the whole vault)"),
                        _query("hops", {"type": "integer", "minimum": 1, "maximum": 2, "default": 1}, "radius"),
                        _query("max_nodes", {"type": "integer", "minimum": 0}, "bound (0 = none)"),
                    ],
                    "responses": _answers("Graph", (400, 401, 404, 502, 503)),
                }
            },
            "/api/logs": {
                "get": {
                    "summary": "offloaded logs, newest first, each with its diagram as SVG",
                    "parameters": [_query("limit", {"type": "integer", "minimum": 1, "maximum": 1000}, "at most")],
                    "responses": _answers("Logs"),
                }
            },
            "/api/logs/{node_id}": {
                "get": {
                    "summary": "a slice of an offloaded log: a line range, a grep, or around the first error",
                    "parameters": [
                        {"name": "node_id", "in": "path", "required": True, "schema": _STR},
                        _query("start", _INT, "first line (1-based)"),
                        _query("end", _INT, "last line (inclusive)"),
                        _query("grep", {"type": "string", "maxLength": 500}, "regular expression"),
                        _query("context", {"type": "integer", "minimum": 0, "maximum": 50}, "lines around matches"),
                        _query("around_error", {"enum": ["0", "1"]}, "lines around the first error"),
                    ],
                    "responses": _answers("LogSlice", (400, 401, 404, 502, 503)),
                }
            },
            "/api/status": {"get": {"summary": "one status snapshot", "responses": _answers("Status", (401,))}},
            "/api/live": {
                "get": {"summary": "status snapshots as they change (SSE, event `status`)", "responses": _SSE}
            },
            "/api/events": {
                "get": {
                    "summary": "the scanner's changes (SSE): event `journal`, the journal's last 30 changes, then each new one; event `skipped` for a gap the journal could not fill",
                    "responses": _SSE,
                }
            },
            "/api/openapi.json": {
                "get": {"summary": "this description", "security": [], "responses": {"200": {"description": "OK"}}}
            },
        },
    }
