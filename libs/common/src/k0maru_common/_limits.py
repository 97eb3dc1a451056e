"""Numbers more than one package relies on, defined once."""

from __future__ import annotations

OFFLOAD_THRESHOLD_LINES = 50
"""Logs longer than this many lines are offloaded (shorter ones pass through to the agent)."""

MAX_LOG_BYTES = 64 * 1024 * 1024
"""The largest log the offload engine accepts (also gRPC's message limit)."""

MODEL_CHOICES = ("minilm-l6-int8", "minilm-l6-q8", "use-multilingual", "custom", "http")
"""The embedder's models by name (its presets, `custom` files, an `http` endpoint), named here so a
command line refuses a mistyped one before anything starts (the embedder's `PRESETS` are checked
against it by a test)."""

SEARCH_MODE_NAMES = ("hybrid", "bm25", "vector")
"""Search modes by name; `SEARCH_MODES` maps them to the proto enum (named here so a command line
can offer them without loading protobuf)."""
