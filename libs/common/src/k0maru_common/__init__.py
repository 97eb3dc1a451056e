"""Pieces every k0maru service shares: settings, errors, gRPC serving, events, vault paths."""

from ._auth import CHANNEL_OPTIONS, TokenAuthInterceptor, is_loopback_address, open_channel
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
from ._logging import configure_logging
from ._process import orphan_guard
from ._server import (
    ErrorMappingInterceptor,
    GrpcService,
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
from ._validation import check_request
from ._vault import confine, default_data_dir, relative_posix, vault_id
from ._workers import BackgroundWorker, WorkerHealth

__all__ = [
    "CHANNEL_OPTIONS",
    "DEAD_STREAM",
    "EMBED_GROUP",
    "JOBS_STREAM",
    "RESULTS_GROUP",
    "RESULTS_STREAM",
    "TOKEN_LEDGER",
    "TOPIC",
    "BackgroundWorker",
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
    "TokenAuthInterceptor",
    "TooLarge",
    "WorkerHealth",
    "cache_key",
    "check_request",
    "configure_logging",
    "confine",
    "default_data_dir",
    "default_data_root",
    "ensure_group",
    "error_from_rpc",
    "health_state",
    "is_loopback_address",
    "open_channel",
    "orphan_guard",
    "relative_posix",
    "vault_id",
    "vector_from_bytes",
    "vector_to_bytes",
    "wait_until_serving",
]
