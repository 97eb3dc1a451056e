# Generated from protos/k0maru/v1 by scripts/gen_protos.py; do not edit. Regenerate with:
#   .venv/bin/python scripts/gen_protos.py
from k0maru.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ScanRequest(_message.Message):
    __slots__ = ("force_full",)
    FORCE_FULL_FIELD_NUMBER: _ClassVar[int]
    force_full: bool
    def __init__(self, force_full: _Optional[bool] = ...) -> None: ...

class ScanStats(_message.Message):
    __slots__ = ("added", "modified", "deleted", "renamed", "unchanged", "skipped", "ms", "last_seq")
    ADDED_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    RENAMED_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    MS_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    added: int
    modified: int
    deleted: int
    renamed: int
    unchanged: int
    skipped: int
    ms: float
    last_seq: int
    def __init__(self, added: _Optional[int] = ..., modified: _Optional[int] = ..., deleted: _Optional[int] = ..., renamed: _Optional[int] = ..., unchanged: _Optional[int] = ..., skipped: _Optional[int] = ..., ms: _Optional[float] = ..., last_seq: _Optional[int] = ...) -> None: ...

class ChangesRequest(_message.Message):
    __slots__ = ("since_seq", "limit", "journal_id")
    SINCE_SEQ_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    JOURNAL_ID_FIELD_NUMBER: _ClassVar[int]
    since_seq: int
    limit: int
    journal_id: str
    def __init__(self, since_seq: _Optional[int] = ..., limit: _Optional[int] = ..., journal_id: _Optional[str] = ...) -> None: ...

class GetDocumentsRequest(_message.Message):
    __slots__ = ("paths",)
    PATHS_FIELD_NUMBER: _ClassVar[int]
    paths: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, paths: _Optional[_Iterable[str]] = ...) -> None: ...

class GetDocumentsResponse(_message.Message):
    __slots__ = ("documents", "missing")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    MISSING_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[_common_pb2.Document]
    missing: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, documents: _Optional[_Iterable[_Union[_common_pb2.Document, _Mapping]]] = ..., missing: _Optional[_Iterable[str]] = ...) -> None: ...

class ListDocumentsRequest(_message.Message):
    __slots__ = ("include_skipped",)
    INCLUDE_SKIPPED_FIELD_NUMBER: _ClassVar[int]
    include_skipped: bool
    def __init__(self, include_skipped: _Optional[bool] = ...) -> None: ...

class ManifestEntry(_message.Message):
    __slots__ = ("path", "size", "mtime_ns", "hash", "parsed_at_unix_ms", "skipped_reason")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MTIME_NS_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    PARSED_AT_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_REASON_FIELD_NUMBER: _ClassVar[int]
    path: str
    size: int
    mtime_ns: int
    hash: str
    parsed_at_unix_ms: int
    skipped_reason: str
    def __init__(self, path: _Optional[str] = ..., size: _Optional[int] = ..., mtime_ns: _Optional[int] = ..., hash: _Optional[str] = ..., parsed_at_unix_ms: _Optional[int] = ..., skipped_reason: _Optional[str] = ...) -> None: ...

class ManifestPage(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[ManifestEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[ManifestEntry, _Mapping]]] = ...) -> None: ...

class ScannerStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ScannerStatus(_message.Message):
    __slots__ = ("vault", "vault_id", "last_seq", "oldest_seq", "documents", "skipped", "watching", "parser_version", "workers", "watch_note", "problem", "excluded", "commit_days", "out_of_sight", "skipped_files", "journal_id")
    VAULT_FIELD_NUMBER: _ClassVar[int]
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    OLDEST_SEQ_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    WATCHING_FIELD_NUMBER: _ClassVar[int]
    PARSER_VERSION_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    WATCH_NOTE_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    EXCLUDED_FIELD_NUMBER: _ClassVar[int]
    COMMIT_DAYS_FIELD_NUMBER: _ClassVar[int]
    OUT_OF_SIGHT_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FILES_FIELD_NUMBER: _ClassVar[int]
    JOURNAL_ID_FIELD_NUMBER: _ClassVar[int]
    vault: str
    vault_id: str
    last_seq: int
    oldest_seq: int
    documents: int
    skipped: int
    watching: bool
    parser_version: str
    workers: _containers.RepeatedCompositeFieldContainer[_common_pb2.WorkerHealth]
    watch_note: str
    problem: str
    excluded: _containers.RepeatedScalarFieldContainer[str]
    commit_days: str
    out_of_sight: _containers.RepeatedScalarFieldContainer[str]
    skipped_files: _containers.RepeatedCompositeFieldContainer[SkippedFile]
    journal_id: str
    def __init__(self, vault: _Optional[str] = ..., vault_id: _Optional[str] = ..., last_seq: _Optional[int] = ..., oldest_seq: _Optional[int] = ..., documents: _Optional[int] = ..., skipped: _Optional[int] = ..., watching: _Optional[bool] = ..., parser_version: _Optional[str] = ..., workers: _Optional[_Iterable[_Union[_common_pb2.WorkerHealth, _Mapping]]] = ..., watch_note: _Optional[str] = ..., problem: _Optional[str] = ..., excluded: _Optional[_Iterable[str]] = ..., commit_days: _Optional[str] = ..., out_of_sight: _Optional[_Iterable[str]] = ..., skipped_files: _Optional[_Iterable[_Union[SkippedFile, _Mapping]]] = ..., journal_id: _Optional[str] = ...) -> None: ...

class SkippedFile(_message.Message):
    __slots__ = ("path", "reason")
    PATH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    path: str
    reason: str
    def __init__(self, path: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...
