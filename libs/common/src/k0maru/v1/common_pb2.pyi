# Generated from protos/k0maru/v1 by scripts/gen_protos.py; do not edit. Regenerate with:
#   .venv/bin/python scripts/gen_protos.py
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChangeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CHANGE_KIND_UNSPECIFIED: _ClassVar[ChangeKind]
    CHANGE_KIND_ADDED: _ClassVar[ChangeKind]
    CHANGE_KIND_MODIFIED: _ClassVar[ChangeKind]
    CHANGE_KIND_DELETED: _ClassVar[ChangeKind]
    CHANGE_KIND_RENAMED: _ClassVar[ChangeKind]
CHANGE_KIND_UNSPECIFIED: ChangeKind
CHANGE_KIND_ADDED: ChangeKind
CHANGE_KIND_MODIFIED: ChangeKind
CHANGE_KIND_DELETED: ChangeKind
CHANGE_KIND_RENAMED: ChangeKind

class Link(_message.Message):
    __slots__ = ("target", "alias", "heading", "block", "embed", "markdown", "line", "property")
    TARGET_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    HEADING_FIELD_NUMBER: _ClassVar[int]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    EMBED_FIELD_NUMBER: _ClassVar[int]
    MARKDOWN_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    PROPERTY_FIELD_NUMBER: _ClassVar[int]
    target: str
    alias: str
    heading: str
    block: str
    embed: bool
    markdown: bool
    line: int
    property: str
    def __init__(self, target: _Optional[str] = ..., alias: _Optional[str] = ..., heading: _Optional[str] = ..., block: _Optional[str] = ..., embed: _Optional[bool] = ..., markdown: _Optional[bool] = ..., line: _Optional[int] = ..., property: _Optional[str] = ...) -> None: ...

class Supersession(_message.Message):
    __slots__ = ("path", "superseded_by")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    path: str
    superseded_by: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, path: _Optional[str] = ..., superseded_by: _Optional[_Iterable[str]] = ...) -> None: ...

class Chunk(_message.Message):
    __slots__ = ("index", "text", "heading_path", "start_line", "end_line", "hash")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    HEADING_PATH_FIELD_NUMBER: _ClassVar[int]
    START_LINE_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    index: int
    text: str
    heading_path: _containers.RepeatedScalarFieldContainer[str]
    start_line: int
    end_line: int
    hash: str
    def __init__(self, index: _Optional[int] = ..., text: _Optional[str] = ..., heading_path: _Optional[_Iterable[str]] = ..., start_line: _Optional[int] = ..., end_line: _Optional[int] = ..., hash: _Optional[str] = ...) -> None: ...

class Document(_message.Message):
    __slots__ = ("path", "title", "diary", "frontmatter_json", "tags", "aliases", "links", "chunks", "hash", "size", "mtime_ns", "problems", "block_ids", "date", "committed", "description", "conflict_of")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DIARY_FIELD_NUMBER: _ClassVar[int]
    FRONTMATTER_JSON_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MTIME_NS_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    BLOCK_IDS_FIELD_NUMBER: _ClassVar[int]
    DATE_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    CONFLICT_OF_FIELD_NUMBER: _ClassVar[int]
    path: str
    title: str
    diary: str
    frontmatter_json: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    aliases: _containers.RepeatedScalarFieldContainer[str]
    links: _containers.RepeatedCompositeFieldContainer[Link]
    chunks: _containers.RepeatedCompositeFieldContainer[Chunk]
    hash: str
    size: int
    mtime_ns: int
    problems: _containers.RepeatedScalarFieldContainer[str]
    block_ids: _containers.RepeatedScalarFieldContainer[str]
    date: str
    committed: str
    description: str
    conflict_of: str
    def __init__(self, path: _Optional[str] = ..., title: _Optional[str] = ..., diary: _Optional[str] = ..., frontmatter_json: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., aliases: _Optional[_Iterable[str]] = ..., links: _Optional[_Iterable[_Union[Link, _Mapping]]] = ..., chunks: _Optional[_Iterable[_Union[Chunk, _Mapping]]] = ..., hash: _Optional[str] = ..., size: _Optional[int] = ..., mtime_ns: _Optional[int] = ..., problems: _Optional[_Iterable[str]] = ..., block_ids: _Optional[_Iterable[str]] = ..., date: _Optional[str] = ..., committed: _Optional[str] = ..., description: _Optional[str] = ..., conflict_of: _Optional[str] = ...) -> None: ...

class ChangeEvent(_message.Message):
    __slots__ = ("seq", "kind", "path", "hash", "old_path", "at_unix_ms", "vault_id")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    OLD_PATH_FIELD_NUMBER: _ClassVar[int]
    AT_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    VAULT_ID_FIELD_NUMBER: _ClassVar[int]
    seq: int
    kind: ChangeKind
    path: str
    hash: str
    old_path: str
    at_unix_ms: int
    vault_id: str
    def __init__(self, seq: _Optional[int] = ..., kind: _Optional[_Union[ChangeKind, str]] = ..., path: _Optional[str] = ..., hash: _Optional[str] = ..., old_path: _Optional[str] = ..., at_unix_ms: _Optional[int] = ..., vault_id: _Optional[str] = ...) -> None: ...

class WorkerHealth(_message.Message):
    __slots__ = ("name", "state", "restarts", "last_error")
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    name: str
    state: str
    restarts: int
    last_error: str
    def __init__(self, name: _Optional[str] = ..., state: _Optional[str] = ..., restarts: _Optional[int] = ..., last_error: _Optional[str] = ...) -> None: ...
