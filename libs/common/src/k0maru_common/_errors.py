"""The k0maru exception tree, mapped to gRPC status codes in exactly one place.

    K0Error                      base; never raised directly
    ├── InvalidInput             the caller sent something unusable     → INVALID_ARGUMENT
    │   └── OutsideVault         a path that escapes the vault          → INVALID_ARGUMENT
    ├── NotFound                 a named thing does not exist           → NOT_FOUND
    ├── TooLarge                 a request or file over a limit         → RESOURCE_EXHAUSTED
    ├── JournalTruncated         since_seq older than the journal keeps → OUT_OF_RANGE
    ├── NotReady                 the service is still starting          → UNAVAILABLE
    ├── DependencyFailed         another service or store failed        → UNAVAILABLE
    └── CannotWrite              a file for the user could not be written: disk full
                                 → RESOURCE_EXHAUSTED, else (read-only…) → FAILED_PRECONDITION

Servers raise these; `ErrorMappingInterceptor` turns them into statuses with the message
intact. Anything else becomes INTERNAL with a generic message (and a logged traceback).
Codes are named by `grpc.StatusCode` member name, so importing the tree (every CLI command does)
does not load grpcio.
"""

from __future__ import annotations

import errno

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; mypy knows the name
if TYPE_CHECKING:
    import grpc


class K0Error(Exception):
    """Base of every error k0maru reports to a caller."""

    code: str = "INTERNAL"  # a grpc.StatusCode member name


class InvalidInput(K0Error):
    code = "INVALID_ARGUMENT"


class OutsideVault(InvalidInput):
    """A path that resolves outside the vault (.., absolute paths, escaping symlinks)."""


class NotFound(K0Error):
    code = "NOT_FOUND"


class TooLarge(K0Error):
    code = "RESOURCE_EXHAUSTED"


class JournalTruncated(K0Error):
    code = "OUT_OF_RANGE"


class NotReady(K0Error):
    code = "UNAVAILABLE"


class DependencyFailed(K0Error):
    code = "UNAVAILABLE"


class CannotWrite(K0Error):
    """A file k0maru writes could not be written: into the vault for the user (an offloaded log,
    a note; nothing partial is left), or its own index (vectors on a full disk). `what` names it
    as the user knows it."""

    code = "FAILED_PRECONDITION"

    def __init__(self, what: str, exc: OSError) -> None:
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        super().__init__(f"cannot write {what}: {'the disk is full' if full else exc.strerror or exc}")
        if full:
            self.code = "RESOURCE_EXHAUSTED"


_CODE_TO_ERROR: dict[str, type[K0Error]] = {
    "INVALID_ARGUMENT": InvalidInput,
    "NOT_FOUND": NotFound,
    "RESOURCE_EXHAUSTED": TooLarge,
    "OUT_OF_RANGE": JournalTruncated,
    "UNAVAILABLE": DependencyFailed,
}


def error_from_rpc(exc: grpc.RpcError) -> K0Error:
    """Turn a failed client call back into the matching K0Error (clients' side of the map)."""
    import grpc

    code = exc.code() if isinstance(exc, grpc.Call) else grpc.StatusCode.UNKNOWN
    details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
    return _CODE_TO_ERROR.get(code.name, DependencyFailed)(details or str(code))
