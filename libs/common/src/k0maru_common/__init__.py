"""Pieces every k0maru service shares: settings, errors, gRPC serving and clients, events,
vault paths, the token estimate and the limits more than one package relies on."""

from __future__ import annotations

from ._lazy import lazy_exports

TYPE_CHECKING = (
    False  # typing.TYPE_CHECKING without importing typing (`k0maru search` is a whole process); mypy knows the name
)
if TYPE_CHECKING:
    from ._auth import CHANNEL_OPTIONS, TokenAuthInterceptor, is_loopback_address, open_channel
    from ._client import SEARCH_MODES, StackClient, mode_name
    from ._errors import (
        DependencyFailed,
        InvalidInput,
        JournalTruncated,
        K0Error,
        NotFound,
        NotReady,
        OutsideVault,
        TooLarge,
        error_from_rpc,
    )
    from ._events import TOPIC, ChangePublisher, ChangeSubscriber
    from ._limits import MAX_LOG_BYTES, OFFLOAD_THRESHOLD_LINES, SEARCH_MODE_NAMES
    from ._logging import configure_logging
    from ._process import orphan_guard, release_free_heap
    from ._server import (
        HEALTH_NAMES,
        KEEPALIVE_CLIENT_OPTIONS,
        PROBE_TIMEOUT_S,
        ROUND_ROBIN_CONFIG,
        ErrorMappingInterceptor,
        GrpcService,
        embedder_target,
        health_name,
        health_state,
        wait_until_serving,
    )
    from ._settings import Field, K0Settings, SettingsError, TypedFields
    from ._streams import (
        DEAD_STREAM,
        EMBED_GROUP,
        JOBS_STREAM,
        RESULTS_GROUP,
        RESULTS_STREAM,
        TOKEN_LEDGER,
        cache_key,
        ensure_group,
        reply_stream,
        results_stream,
        vector_from_bytes,
        vector_to_bytes,
    )
    from ._tokens import TOKEN_PATTERN, estimate_tokens, estimate_tokens_of_parts
    from ._validation import check_request
    from ._vault import confine, default_data_dir, default_data_root, relative_posix, vault_id
    from ._workers import BackgroundWorker, WorkerHealth

# Imported on first use (PEP 562): a command that needs only the gRPC client must not pay for
# numpy, ZeroMQ and pydantic (`k0maru search` is a whole process per call).
_WHERE = {
    "BackgroundWorker": "._workers",
    "CHANNEL_OPTIONS": "._auth",
    "TokenAuthInterceptor": "._auth",
    "WorkerHealth": "._workers",
    "check_request": "._validation",
    "is_loopback_address": "._auth",
    "open_channel": "._auth",
    "ChangePublisher": "._events",
    "ChangeSubscriber": "._events",
    "DEAD_STREAM": "._streams",
    "DependencyFailed": "._errors",
    "EMBED_GROUP": "._streams",
    "ErrorMappingInterceptor": "._server",
    "GrpcService": "._server",
    "HEALTH_NAMES": "._server",
    "InvalidInput": "._errors",
    "JOBS_STREAM": "._streams",
    "JournalTruncated": "._errors",
    "K0Error": "._errors",
    "Field": "._settings",
    "K0Settings": "._settings",
    "SettingsError": "._settings",
    "TypedFields": "._settings",
    "KEEPALIVE_CLIENT_OPTIONS": "._server",
    "MAX_LOG_BYTES": "._limits",
    "NotFound": "._errors",
    "NotReady": "._errors",
    "OFFLOAD_THRESHOLD_LINES": "._limits",
    "OutsideVault": "._errors",
    "RESULTS_GROUP": "._streams",
    "RESULTS_STREAM": "._streams",
    "ROUND_ROBIN_CONFIG": "._server",
    "SEARCH_MODE_NAMES": "._limits",
    "SEARCH_MODES": "._client",
    "StackClient": "._client",
    "TOKEN_LEDGER": "._streams",
    "TOKEN_PATTERN": "._tokens",
    "TOPIC": "._events",
    "TooLarge": "._errors",
    "cache_key": "._streams",
    "configure_logging": "._logging",
    "confine": "._vault",
    "default_data_dir": "._vault",
    "default_data_root": "._vault",
    "embedder_target": "._server",
    "ensure_group": "._streams",
    "reply_stream": "._streams",
    "results_stream": "._streams",
    "error_from_rpc": "._errors",
    "estimate_tokens": "._tokens",
    "estimate_tokens_of_parts": "._tokens",
    "PROBE_TIMEOUT_S": "._server",
    "health_name": "._server",
    "health_state": "._server",
    "mode_name": "._client",
    "orphan_guard": "._process",
    "release_free_heap": "._process",
    "relative_posix": "._vault",
    "vault_id": "._vault",
    "vector_from_bytes": "._streams",
    "vector_to_bytes": "._streams",
    "wait_until_serving": "._server",
    "lazy_exports": "._lazy",
}


__getattr__ = lazy_exports(__name__, _WHERE, globals())


__all__ = [
    "CHANNEL_OPTIONS",
    "DEAD_STREAM",
    "EMBED_GROUP",
    "HEALTH_NAMES",
    "JOBS_STREAM",
    "KEEPALIVE_CLIENT_OPTIONS",
    "MAX_LOG_BYTES",
    "OFFLOAD_THRESHOLD_LINES",
    "PROBE_TIMEOUT_S",
    "RESULTS_GROUP",
    "RESULTS_STREAM",
    "ROUND_ROBIN_CONFIG",
    "SEARCH_MODES",
    "SEARCH_MODE_NAMES",
    "TOKEN_LEDGER",
    "TOKEN_PATTERN",
    "TOPIC",
    "BackgroundWorker",
    "ChangePublisher",
    "ChangeSubscriber",
    "DependencyFailed",
    "ErrorMappingInterceptor",
    "Field",
    "GrpcService",
    "InvalidInput",
    "JournalTruncated",
    "K0Error",
    "K0Settings",
    "NotFound",
    "NotReady",
    "OutsideVault",
    "SettingsError",
    "StackClient",
    "TokenAuthInterceptor",
    "TooLarge",
    "TypedFields",
    "WorkerHealth",
    "cache_key",
    "check_request",
    "configure_logging",
    "confine",
    "default_data_dir",
    "default_data_root",
    "embedder_target",
    "ensure_group",
    "error_from_rpc",
    "estimate_tokens",
    "estimate_tokens_of_parts",
    "health_name",
    "health_state",
    "is_loopback_address",
    "lazy_exports",
    "mode_name",
    "open_channel",
    "orphan_guard",
    "relative_posix",
    "release_free_heap",
    "reply_stream",
    "results_stream",
    "vault_id",
    "vector_from_bytes",
    "vector_to_bytes",
    "wait_until_serving",
]
