"""Pieces every k0maru service shares: settings, errors, gRPC serving and clients, events,
vault paths, the token estimate and the limits more than one package relies on."""

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
from ._limits import MAX_LOG_BYTES, OFFLOAD_THRESHOLD_LINES
from ._logging import configure_logging
from ._process import orphan_guard
from ._server import (
    CHANNEL_OPTIONS,
    HEALTH_NAMES,
    ROUND_ROBIN_CONFIG,
    ErrorMappingInterceptor,
    GrpcService,
    embedder_target,
    health_name,
    health_state,
    wait_until_serving,
)
from ._settings import K0Settings, default_data_root
from ._streams import (
    DEAD_STREAM,
    EMBED_GROUP,
    JOBS_STREAM,
    RESULTS_GROUP,
    RESULTS_STREAM,
    TOKEN_LEDGER,
    cache_key,
    ensure_group,
    vector_from_bytes,
    vector_to_bytes,
)
from ._tokens import TOKEN_PATTERN, estimate_tokens
from ._vault import confine, default_data_dir, relative_posix, vault_id

__all__ = [
    "CHANNEL_OPTIONS",
    "DEAD_STREAM",
    "EMBED_GROUP",
    "HEALTH_NAMES",
    "JOBS_STREAM",
    "MAX_LOG_BYTES",
    "OFFLOAD_THRESHOLD_LINES",
    "RESULTS_GROUP",
    "RESULTS_STREAM",
    "ROUND_ROBIN_CONFIG",
    "SEARCH_MODES",
    "TOKEN_LEDGER",
    "TOKEN_PATTERN",
    "TOPIC",
    "ChangePublisher",
    "ChangeSubscriber",
    "DependencyFailed",
    "ErrorMappingInterceptor",
    "GrpcService",
    "InvalidInput",
    "JournalTruncated",
    "K0Error",
    "K0Settings",
    "NotFound",
    "NotReady",
    "OutsideVault",
    "StackClient",
    "TooLarge",
    "cache_key",
    "configure_logging",
    "confine",
    "default_data_dir",
    "default_data_root",
    "embedder_target",
    "ensure_group",
    "error_from_rpc",
    "estimate_tokens",
    "health_name",
    "health_state",
    "mode_name",
    "orphan_guard",
    "relative_posix",
    "vault_id",
    "vector_from_bytes",
    "vector_to_bytes",
    "wait_until_serving",
]
