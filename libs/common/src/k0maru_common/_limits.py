"""Numbers more than one package relies on, defined once."""

from __future__ import annotations

OFFLOAD_THRESHOLD_LINES = 50
"""Logs longer than this many lines are offloaded (shorter ones pass through to the agent)."""

MAX_LOG_BYTES = 64 * 1024 * 1024
"""The largest log the offload engine accepts (also gRPC's message limit)."""
