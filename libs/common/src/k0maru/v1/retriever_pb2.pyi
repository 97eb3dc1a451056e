# Generated from protos/k0maru/v1 by scripts/gen_protos.py; do not edit. Regenerate with:
#   .venv/bin/python scripts/gen_protos.py
from k0maru.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SearchMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEARCH_MODE_UNSPECIFIED: _ClassVar[SearchMode]
    SEARCH_MODE_BM25: _ClassVar[SearchMode]
    SEARCH_MODE_VECTOR: _ClassVar[SearchMode]
    SEARCH_MODE_HYBRID: _ClassVar[SearchMode]
SEARCH_MODE_UNSPECIFIED: SearchMode
SEARCH_MODE_BM25: SearchMode
SEARCH_MODE_VECTOR: SearchMode
SEARCH_MODE_HYBRID: SearchMode

class Scope(_message.Message):
    __slots__ = ("diaries", "path_prefixes", "tags", "since", "until")
    DIARIES_FIELD_NUMBER: _ClassVar[int]
    PATH_PREFIXES_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    diaries: _containers.RepeatedScalarFieldContainer[str]
    path_prefixes: _containers.RepeatedScalarFieldContainer[str]
    tags: _containers.RepeatedScalarFieldContainer[str]
    since: str
    until: str
    def __init__(self, diaries: _Optional[_Iterable[str]] = ..., path_prefixes: _Optional[_Iterable[str]] = ..., tags: _Optional[_Iterable[str]] = ..., since: _Optional[str] = ..., until: _Optional[str] = ...) -> None: ...

class TagMemoOptions(_message.Message):
    __slots__ = ("enabled", "core_tags", "beta")
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    CORE_TAGS_FIELD_NUMBER: _ClassVar[int]
    BETA_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    core_tags: _containers.RepeatedScalarFieldContainer[str]
    beta: float
    def __init__(self, enabled: _Optional[bool] = ..., core_tags: _Optional[_Iterable[str]] = ..., beta: _Optional[float] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("query", "limit", "mode", "scope", "tagmemo", "explain", "dedup")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TAGMEMO_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    DEDUP_FIELD_NUMBER: _ClassVar[int]
    query: str
    limit: int
    mode: SearchMode
    scope: Scope
    tagmemo: TagMemoOptions
    explain: bool
    dedup: bool
    def __init__(self, query: _Optional[str] = ..., limit: _Optional[int] = ..., mode: _Optional[_Union[SearchMode, str]] = ..., scope: _Optional[_Union[Scope, _Mapping]] = ..., tagmemo: _Optional[_Union[TagMemoOptions, _Mapping]] = ..., explain: _Optional[bool] = ..., dedup: _Optional[bool] = ...) -> None: ...

class ChannelExplanation(_message.Message):
    __slots__ = ("present", "rank", "score")
    PRESENT_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    present: bool
    rank: int
    score: float
    def __init__(self, present: _Optional[bool] = ..., rank: _Optional[int] = ..., score: _Optional[float] = ...) -> None: ...

class TagFactor(_message.Message):
    __slots__ = ("tag", "weight")
    TAG_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    tag: str
    weight: float
    def __init__(self, tag: _Optional[str] = ..., weight: _Optional[float] = ...) -> None: ...

class Explanation(_message.Message):
    __slots__ = ("bm25", "vector", "graph_boost", "fused_score", "tagmemo_tags", "heading_path", "name_match", "not_embedded", "exact")
    BM25_FIELD_NUMBER: _ClassVar[int]
    VECTOR_FIELD_NUMBER: _ClassVar[int]
    GRAPH_BOOST_FIELD_NUMBER: _ClassVar[int]
    FUSED_SCORE_FIELD_NUMBER: _ClassVar[int]
    TAGMEMO_TAGS_FIELD_NUMBER: _ClassVar[int]
    HEADING_PATH_FIELD_NUMBER: _ClassVar[int]
    NAME_MATCH_FIELD_NUMBER: _ClassVar[int]
    NOT_EMBEDDED_FIELD_NUMBER: _ClassVar[int]
    EXACT_FIELD_NUMBER: _ClassVar[int]
    bm25: ChannelExplanation
    vector: ChannelExplanation
    graph_boost: float
    fused_score: float
    tagmemo_tags: _containers.RepeatedCompositeFieldContainer[TagFactor]
    heading_path: _containers.RepeatedScalarFieldContainer[str]
    name_match: float
    not_embedded: bool
    exact: str
    def __init__(self, bm25: _Optional[_Union[ChannelExplanation, _Mapping]] = ..., vector: _Optional[_Union[ChannelExplanation, _Mapping]] = ..., graph_boost: _Optional[float] = ..., fused_score: _Optional[float] = ..., tagmemo_tags: _Optional[_Iterable[_Union[TagFactor, _Mapping]]] = ..., heading_path: _Optional[_Iterable[str]] = ..., name_match: _Optional[float] = ..., not_embedded: _Optional[bool] = ..., exact: _Optional[str] = ...) -> None: ...

class SearchHit(_message.Message):
    __slots__ = ("path", "title", "snippet", "score", "diary", "tags", "chunk_index", "start_line", "end_line", "explain", "date", "modified", "committed", "problems", "same_passage_as", "superseded_by")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    SNIPPET_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    DIARY_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_INDEX_FIELD_NUMBER: _ClassVar[int]
    START_LINE_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    DATE_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    SAME_PASSAGE_AS_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    path: str
    title: str
    snippet: str
    score: float
    diary: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    chunk_index: int
    start_line: int
    end_line: int
    explain: Explanation
    date: str
    modified: str
    committed: str
    problems: _containers.RepeatedScalarFieldContainer[str]
    same_passage_as: str
    superseded_by: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, path: _Optional[str] = ..., title: _Optional[str] = ..., snippet: _Optional[str] = ..., score: _Optional[float] = ..., diary: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., chunk_index: _Optional[int] = ..., start_line: _Optional[int] = ..., end_line: _Optional[int] = ..., explain: _Optional[_Union[Explanation, _Mapping]] = ..., date: _Optional[str] = ..., modified: _Optional[str] = ..., committed: _Optional[str] = ..., problems: _Optional[_Iterable[str]] = ..., same_passage_as: _Optional[str] = ..., superseded_by: _Optional[_Iterable[str]] = ...) -> None: ...

class ChannelReport(_message.Message):
    __slots__ = ("channel", "ran", "reason", "weight", "confidence", "took_ms")
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    RAN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    TOOK_MS_FIELD_NUMBER: _ClassVar[int]
    channel: str
    ran: bool
    reason: str
    weight: float
    confidence: float
    took_ms: float
    def __init__(self, channel: _Optional[str] = ..., ran: _Optional[bool] = ..., reason: _Optional[str] = ..., weight: _Optional[float] = ..., confidence: _Optional[float] = ..., took_ms: _Optional[float] = ...) -> None: ...

class TagMemoExplanation(_message.Message):
    __slots__ = ("applied", "matched_tags", "core_tags", "beta", "base_beta", "logic_depth", "entropy", "resonance", "coverage", "novelty", "dominant_axis", "pyramid_levels", "dedup_dropped", "reason", "core_tags_ignored")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    MATCHED_TAGS_FIELD_NUMBER: _ClassVar[int]
    CORE_TAGS_FIELD_NUMBER: _ClassVar[int]
    BETA_FIELD_NUMBER: _ClassVar[int]
    BASE_BETA_FIELD_NUMBER: _ClassVar[int]
    LOGIC_DEPTH_FIELD_NUMBER: _ClassVar[int]
    ENTROPY_FIELD_NUMBER: _ClassVar[int]
    RESONANCE_FIELD_NUMBER: _ClassVar[int]
    COVERAGE_FIELD_NUMBER: _ClassVar[int]
    NOVELTY_FIELD_NUMBER: _ClassVar[int]
    DOMINANT_AXIS_FIELD_NUMBER: _ClassVar[int]
    PYRAMID_LEVELS_FIELD_NUMBER: _ClassVar[int]
    DEDUP_DROPPED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CORE_TAGS_IGNORED_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    matched_tags: _containers.RepeatedCompositeFieldContainer[TagFactor]
    core_tags: _containers.RepeatedScalarFieldContainer[str]
    beta: float
    base_beta: float
    logic_depth: float
    entropy: float
    resonance: float
    coverage: float
    novelty: float
    dominant_axis: str
    pyramid_levels: _containers.RepeatedScalarFieldContainer[float]
    dedup_dropped: int
    reason: str
    core_tags_ignored: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, applied: _Optional[bool] = ..., matched_tags: _Optional[_Iterable[_Union[TagFactor, _Mapping]]] = ..., core_tags: _Optional[_Iterable[str]] = ..., beta: _Optional[float] = ..., base_beta: _Optional[float] = ..., logic_depth: _Optional[float] = ..., entropy: _Optional[float] = ..., resonance: _Optional[float] = ..., coverage: _Optional[float] = ..., novelty: _Optional[float] = ..., dominant_axis: _Optional[str] = ..., pyramid_levels: _Optional[_Iterable[float]] = ..., dedup_dropped: _Optional[int] = ..., reason: _Optional[str] = ..., core_tags_ignored: _Optional[_Iterable[str]] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("hits", "vault", "mode_used", "vector_coverage", "took_ms", "channels", "tagmemo", "index_progress", "query_embedding_ms", "highlights", "empty_scope", "by_meaning_only")
    HITS_FIELD_NUMBER: _ClassVar[int]
    VAULT_FIELD_NUMBER: _ClassVar[int]
    MODE_USED_FIELD_NUMBER: _ClassVar[int]
    VECTOR_COVERAGE_FIELD_NUMBER: _ClassVar[int]
    TOOK_MS_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    TAGMEMO_FIELD_NUMBER: _ClassVar[int]
    INDEX_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    QUERY_EMBEDDING_MS_FIELD_NUMBER: _ClassVar[int]
    HIGHLIGHTS_FIELD_NUMBER: _ClassVar[int]
    EMPTY_SCOPE_FIELD_NUMBER: _ClassVar[int]
    BY_MEANING_ONLY_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[SearchHit]
    vault: str
    mode_used: SearchMode
    vector_coverage: float
    took_ms: float
    channels: _containers.RepeatedCompositeFieldContainer[ChannelReport]
    tagmemo: TagMemoExplanation
    index_progress: IndexProgress
    query_embedding_ms: float
    highlights: _containers.RepeatedCompositeFieldContainer[Highlight]
    empty_scope: _containers.RepeatedScalarFieldContainer[str]
    by_meaning_only: bool
    def __init__(self, hits: _Optional[_Iterable[_Union[SearchHit, _Mapping]]] = ..., vault: _Optional[str] = ..., mode_used: _Optional[_Union[SearchMode, str]] = ..., vector_coverage: _Optional[float] = ..., took_ms: _Optional[float] = ..., channels: _Optional[_Iterable[_Union[ChannelReport, _Mapping]]] = ..., tagmemo: _Optional[_Union[TagMemoExplanation, _Mapping]] = ..., index_progress: _Optional[_Union[IndexProgress, _Mapping]] = ..., query_embedding_ms: _Optional[float] = ..., highlights: _Optional[_Iterable[_Union[Highlight, _Mapping]]] = ..., empty_scope: _Optional[_Iterable[str]] = ..., by_meaning_only: _Optional[bool] = ...) -> None: ...

class Highlight(_message.Message):
    __slots__ = ("text", "word_start", "whole_word")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    WORD_START_FIELD_NUMBER: _ClassVar[int]
    WHOLE_WORD_FIELD_NUMBER: _ClassVar[int]
    text: str
    word_start: bool
    whole_word: bool
    def __init__(self, text: _Optional[str] = ..., word_start: _Optional[bool] = ..., whole_word: _Optional[bool] = ...) -> None: ...

class IndexProgress(_message.Message):
    __slots__ = ("notes_indexed", "notes_total")
    NOTES_INDEXED_FIELD_NUMBER: _ClassVar[int]
    NOTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    notes_indexed: int
    notes_total: int
    def __init__(self, notes_indexed: _Optional[int] = ..., notes_total: _Optional[int] = ...) -> None: ...

class GetNoteRequest(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class Note(_message.Message):
    __slots__ = ("document", "backlinks", "markdown", "outgoing", "links", "unreadable", "superseded_by")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    BACKLINKS_FIELD_NUMBER: _ClassVar[int]
    MARKDOWN_FIELD_NUMBER: _ClassVar[int]
    OUTGOING_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    UNREADABLE_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    document: _common_pb2.Document
    backlinks: _containers.RepeatedScalarFieldContainer[str]
    markdown: str
    outgoing: _containers.RepeatedScalarFieldContainer[str]
    links: _containers.RepeatedCompositeFieldContainer[LinkResolution]
    unreadable: str
    superseded_by: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, document: _Optional[_Union[_common_pb2.Document, _Mapping]] = ..., backlinks: _Optional[_Iterable[str]] = ..., markdown: _Optional[str] = ..., outgoing: _Optional[_Iterable[str]] = ..., links: _Optional[_Iterable[_Union[LinkResolution, _Mapping]]] = ..., unreadable: _Optional[str] = ..., superseded_by: _Optional[_Iterable[str]] = ...) -> None: ...

class SupersededRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SupersededResponse(_message.Message):
    __slots__ = ("notes",)
    NOTES_FIELD_NUMBER: _ClassVar[int]
    notes: _containers.RepeatedCompositeFieldContainer[_common_pb2.Supersession]
    def __init__(self, notes: _Optional[_Iterable[_Union[_common_pb2.Supersession, _Mapping]]] = ...) -> None: ...

class LinkResolution(_message.Message):
    __slots__ = ("target", "path")
    TARGET_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    target: str
    path: str
    def __init__(self, target: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class BacklinksRequest(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class BacklinksResponse(_message.Message):
    __slots__ = ("paths",)
    PATHS_FIELD_NUMBER: _ClassVar[int]
    paths: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, paths: _Optional[_Iterable[str]] = ...) -> None: ...

class IndexStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class IndexStatusResponse(_message.Message):
    __slots__ = ("vault", "last_applied_seq", "documents", "chunks", "chunks_with_vectors", "workers", "bm25_documents", "vector_points", "generation", "consistent", "problem", "embed_queue_pending", "embed_dead_letter", "tags", "tags_with_vectors", "epa_axes", "params_error", "embedding_model", "embedders", "instance", "vectors_indexed", "index_building", "build", "bm25_deleted", "bm25_compactions", "notes_with_problems", "problem_notes")
    VAULT_FIELD_NUMBER: _ClassVar[int]
    LAST_APPLIED_SEQ_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_WITH_VECTORS_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    BM25_DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    VECTOR_POINTS_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    CONSISTENT_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    EMBED_QUEUE_PENDING_FIELD_NUMBER: _ClassVar[int]
    EMBED_DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    TAGS_WITH_VECTORS_FIELD_NUMBER: _ClassVar[int]
    EPA_AXES_FIELD_NUMBER: _ClassVar[int]
    PARAMS_ERROR_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    EMBEDDERS_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    VECTORS_INDEXED_FIELD_NUMBER: _ClassVar[int]
    INDEX_BUILDING_FIELD_NUMBER: _ClassVar[int]
    BUILD_FIELD_NUMBER: _ClassVar[int]
    BM25_DELETED_FIELD_NUMBER: _ClassVar[int]
    BM25_COMPACTIONS_FIELD_NUMBER: _ClassVar[int]
    NOTES_WITH_PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_NOTES_FIELD_NUMBER: _ClassVar[int]
    vault: str
    last_applied_seq: int
    documents: int
    chunks: int
    chunks_with_vectors: int
    workers: _containers.RepeatedCompositeFieldContainer[_common_pb2.WorkerHealth]
    bm25_documents: int
    vector_points: int
    generation: str
    consistent: bool
    problem: str
    embed_queue_pending: int
    embed_dead_letter: int
    tags: int
    tags_with_vectors: int
    epa_axes: int
    params_error: str
    embedding_model: str
    embedders: _containers.RepeatedCompositeFieldContainer[EmbedderConsumer]
    instance: str
    vectors_indexed: int
    index_building: bool
    build: IndexProgress
    bm25_deleted: int
    bm25_compactions: int
    notes_with_problems: int
    problem_notes: _containers.RepeatedCompositeFieldContainer[NoteProblems]
    def __init__(self, vault: _Optional[str] = ..., last_applied_seq: _Optional[int] = ..., documents: _Optional[int] = ..., chunks: _Optional[int] = ..., chunks_with_vectors: _Optional[int] = ..., workers: _Optional[_Iterable[_Union[_common_pb2.WorkerHealth, _Mapping]]] = ..., bm25_documents: _Optional[int] = ..., vector_points: _Optional[int] = ..., generation: _Optional[str] = ..., consistent: _Optional[bool] = ..., problem: _Optional[str] = ..., embed_queue_pending: _Optional[int] = ..., embed_dead_letter: _Optional[int] = ..., tags: _Optional[int] = ..., tags_with_vectors: _Optional[int] = ..., epa_axes: _Optional[int] = ..., params_error: _Optional[str] = ..., embedding_model: _Optional[str] = ..., embedders: _Optional[_Iterable[_Union[EmbedderConsumer, _Mapping]]] = ..., instance: _Optional[str] = ..., vectors_indexed: _Optional[int] = ..., index_building: _Optional[bool] = ..., build: _Optional[_Union[IndexProgress, _Mapping]] = ..., bm25_deleted: _Optional[int] = ..., bm25_compactions: _Optional[int] = ..., notes_with_problems: _Optional[int] = ..., problem_notes: _Optional[_Iterable[_Union[NoteProblems, _Mapping]]] = ...) -> None: ...

class NoteProblems(_message.Message):
    __slots__ = ("path", "problems")
    PATH_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    path: str
    problems: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, path: _Optional[str] = ..., problems: _Optional[_Iterable[str]] = ...) -> None: ...

class EmbedderConsumer(_message.Message):
    __slots__ = ("name", "pending", "idle_ms", "gone")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    IDLE_MS_FIELD_NUMBER: _ClassVar[int]
    GONE_FIELD_NUMBER: _ClassVar[int]
    name: str
    pending: int
    idle_ms: int
    gone: bool
    def __init__(self, name: _Optional[str] = ..., pending: _Optional[int] = ..., idle_ms: _Optional[int] = ..., gone: _Optional[bool] = ...) -> None: ...

class ReindexRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReindexResponse(_message.Message):
    __slots__ = ("documents",)
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    documents: int
    def __init__(self, documents: _Optional[int] = ...) -> None: ...

class GraphRequest(_message.Message):
    __slots__ = ("path", "hops", "max_nodes")
    PATH_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    MAX_NODES_FIELD_NUMBER: _ClassVar[int]
    path: str
    hops: int
    max_nodes: int
    def __init__(self, path: _Optional[str] = ..., hops: _Optional[int] = ..., max_nodes: _Optional[int] = ...) -> None: ...

class GraphNode(_message.Message):
    __slots__ = ("path", "title", "diary", "degree", "hop")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DIARY_FIELD_NUMBER: _ClassVar[int]
    DEGREE_FIELD_NUMBER: _ClassVar[int]
    HOP_FIELD_NUMBER: _ClassVar[int]
    path: str
    title: str
    diary: str
    degree: int
    hop: int
    def __init__(self, path: _Optional[str] = ..., title: _Optional[str] = ..., diary: _Optional[str] = ..., degree: _Optional[int] = ..., hop: _Optional[int] = ...) -> None: ...

class GraphResponse(_message.Message):
    __slots__ = ("nodes", "edges", "truncated", "total_notes")
    NODES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_NOTES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[GraphNode]
    edges: _containers.RepeatedScalarFieldContainer[int]
    truncated: bool
    total_notes: int
    def __init__(self, nodes: _Optional[_Iterable[_Union[GraphNode, _Mapping]]] = ..., edges: _Optional[_Iterable[int]] = ..., truncated: _Optional[bool] = ..., total_notes: _Optional[int] = ...) -> None: ...
