# Generated from protos/k0maru/v1 by scripts/gen_protos.py; do not edit. Regenerate with:
#   .venv/bin/python scripts/gen_protos.py
from k0maru.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EmbedRequest(_message.Message):
    __slots__ = ("texts", "is_query")
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    IS_QUERY_FIELD_NUMBER: _ClassVar[int]
    texts: _containers.RepeatedScalarFieldContainer[str]
    is_query: bool
    def __init__(self, texts: _Optional[_Iterable[str]] = ..., is_query: _Optional[bool] = ...) -> None: ...

class Vector(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class EmbedResponse(_message.Message):
    __slots__ = ("vectors", "model", "dimension")
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    vectors: _containers.RepeatedCompositeFieldContainer[Vector]
    model: str
    dimension: int
    def __init__(self, vectors: _Optional[_Iterable[_Union[Vector, _Mapping]]] = ..., model: _Optional[str] = ..., dimension: _Optional[int] = ...) -> None: ...

class EmbedderInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class EmbedderInfo(_message.Message):
    __slots__ = ("model", "dimension", "max_tokens", "pid", "processed", "chunks_per_s", "state", "scripts", "workers")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PROCESSED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_PER_S_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SCRIPTS_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    model: str
    dimension: int
    max_tokens: int
    pid: int
    processed: int
    chunks_per_s: float
    state: str
    scripts: _containers.RepeatedScalarFieldContainer[str]
    workers: _containers.RepeatedCompositeFieldContainer[_common_pb2.WorkerHealth]
    def __init__(self, model: _Optional[str] = ..., dimension: _Optional[int] = ..., max_tokens: _Optional[int] = ..., pid: _Optional[int] = ..., processed: _Optional[int] = ..., chunks_per_s: _Optional[float] = ..., state: _Optional[str] = ..., scripts: _Optional[_Iterable[str]] = ..., workers: _Optional[_Iterable[_Union[_common_pb2.WorkerHealth, _Mapping]]] = ...) -> None: ...
