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

class FlushOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FLUSH_OUTCOME_UNSPECIFIED: _ClassVar[FlushOutcome]
    FLUSH_OUTCOME_CREATED: _ClassVar[FlushOutcome]
    FLUSH_OUTCOME_UP_TO_DATE: _ClassVar[FlushOutcome]
    FLUSH_OUTCOME_VERSIONED: _ClassVar[FlushOutcome]
FLUSH_OUTCOME_UNSPECIFIED: FlushOutcome
FLUSH_OUTCOME_CREATED: FlushOutcome
FLUSH_OUTCOME_UP_TO_DATE: FlushOutcome
FLUSH_OUTCOME_VERSIONED: FlushOutcome

class OffloadLogRequest(_message.Message):
    __slots__ = ("text", "task_id", "threshold", "command", "exit_code", "streamed_lines")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    STREAMED_LINES_FIELD_NUMBER: _ClassVar[int]
    text: str
    task_id: str
    threshold: int
    command: str
    exit_code: int
    streamed_lines: int
    def __init__(self, text: _Optional[str] = ..., task_id: _Optional[str] = ..., threshold: _Optional[int] = ..., command: _Optional[str] = ..., exit_code: _Optional[int] = ..., streamed_lines: _Optional[int] = ...) -> None: ...

class OffloadResult(_message.Message):
    __slots__ = ("offloaded", "node_id", "summary", "mermaid", "original_tokens", "summary_tokens", "ref_path", "line_count", "first_error", "first_location", "errors", "warnings", "failed_tests", "counted")
    OFFLOADED_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    MERMAID_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_TOKENS_FIELD_NUMBER: _ClassVar[int]
    REF_PATH_FIELD_NUMBER: _ClassVar[int]
    LINE_COUNT_FIELD_NUMBER: _ClassVar[int]
    FIRST_ERROR_FIELD_NUMBER: _ClassVar[int]
    FIRST_LOCATION_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    FAILED_TESTS_FIELD_NUMBER: _ClassVar[int]
    COUNTED_FIELD_NUMBER: _ClassVar[int]
    offloaded: bool
    node_id: str
    summary: str
    mermaid: str
    original_tokens: int
    summary_tokens: int
    ref_path: str
    line_count: int
    first_error: str
    first_location: str
    errors: int
    warnings: int
    failed_tests: int
    counted: bool
    def __init__(self, offloaded: _Optional[bool] = ..., node_id: _Optional[str] = ..., summary: _Optional[str] = ..., mermaid: _Optional[str] = ..., original_tokens: _Optional[int] = ..., summary_tokens: _Optional[int] = ..., ref_path: _Optional[str] = ..., line_count: _Optional[int] = ..., first_error: _Optional[str] = ..., first_location: _Optional[str] = ..., errors: _Optional[int] = ..., warnings: _Optional[int] = ..., failed_tests: _Optional[int] = ..., counted: _Optional[bool] = ...) -> None: ...

class InspectRequest(_message.Message):
    __slots__ = ("node_id", "start_line", "end_line", "grep", "context", "around_first_error")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    START_LINE_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    GREP_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    AROUND_FIRST_ERROR_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    start_line: int
    end_line: int
    grep: str
    context: int
    around_first_error: bool
    def __init__(self, node_id: _Optional[str] = ..., start_line: _Optional[int] = ..., end_line: _Optional[int] = ..., grep: _Optional[str] = ..., context: _Optional[int] = ..., around_first_error: _Optional[bool] = ...) -> None: ...

class LogLine(_message.Message):
    __slots__ = ("number", "text")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    number: int
    text: str
    def __init__(self, number: _Optional[int] = ..., text: _Optional[str] = ...) -> None: ...

class InspectResponse(_message.Message):
    __slots__ = ("node_id", "lines", "total_lines")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_LINES_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    lines: _containers.RepeatedCompositeFieldContainer[LogLine]
    total_lines: int
    def __init__(self, node_id: _Optional[str] = ..., lines: _Optional[_Iterable[_Union[LogLine, _Mapping]]] = ..., total_lines: _Optional[int] = ...) -> None: ...

class FlushRequest(_message.Message):
    __slots__ = ("title", "content", "category", "tags", "related_notes", "source", "supersedes")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    RELATED_NOTES_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDES_FIELD_NUMBER: _ClassVar[int]
    title: str
    content: str
    category: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    related_notes: _containers.RepeatedScalarFieldContainer[str]
    source: str
    supersedes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, title: _Optional[str] = ..., content: _Optional[str] = ..., category: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., related_notes: _Optional[_Iterable[str]] = ..., source: _Optional[str] = ..., supersedes: _Optional[_Iterable[str]] = ...) -> None: ...

class FlushResponse(_message.Message):
    __slots__ = ("path", "outcome")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    path: str
    outcome: FlushOutcome
    def __init__(self, path: _Optional[str] = ..., outcome: _Optional[_Union[FlushOutcome, str]] = ...) -> None: ...

class DistillRequest(_message.Message):
    __slots__ = ("trace", "node_id", "title", "export")
    TRACE_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    EXPORT_FIELD_NUMBER: _ClassVar[int]
    trace: str
    node_id: str
    title: str
    export: bool
    def __init__(self, trace: _Optional[str] = ..., node_id: _Optional[str] = ..., title: _Optional[str] = ..., export: _Optional[bool] = ...) -> None: ...

class DistillResponse(_message.Message):
    __slots__ = ("path", "outcome", "skill_markdown", "exported_path")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    SKILL_MARKDOWN_FIELD_NUMBER: _ClassVar[int]
    EXPORTED_PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    outcome: FlushOutcome
    skill_markdown: str
    exported_path: str
    def __init__(self, path: _Optional[str] = ..., outcome: _Optional[_Union[FlushOutcome, str]] = ..., skill_markdown: _Optional[str] = ..., exported_path: _Optional[str] = ...) -> None: ...

class LoadoutRequest(_message.Message):
    __slots__ = ("max_chars", "max_tokens", "project", "superseded")
    MAX_CHARS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_FIELD_NUMBER: _ClassVar[int]
    max_chars: int
    max_tokens: int
    project: str
    superseded: _containers.RepeatedCompositeFieldContainer[_common_pb2.Supersession]
    def __init__(self, max_chars: _Optional[int] = ..., max_tokens: _Optional[int] = ..., project: _Optional[str] = ..., superseded: _Optional[_Iterable[_Union[_common_pb2.Supersession, _Mapping]]] = ...) -> None: ...

class RuleFile(_message.Message):
    __slots__ = ("path", "text")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    path: str
    text: str
    def __init__(self, path: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class ConventionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ConventionReport(_message.Message):
    __slots__ = ("folder_scheme", "naming_style", "notes_folder", "decisions_folder", "skills_folder", "evidence", "rule_files", "folder_rules")
    FOLDER_SCHEME_FIELD_NUMBER: _ClassVar[int]
    NAMING_STYLE_FIELD_NUMBER: _ClassVar[int]
    NOTES_FOLDER_FIELD_NUMBER: _ClassVar[int]
    DECISIONS_FOLDER_FIELD_NUMBER: _ClassVar[int]
    SKILLS_FOLDER_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    RULE_FILES_FIELD_NUMBER: _ClassVar[int]
    FOLDER_RULES_FIELD_NUMBER: _ClassVar[int]
    folder_scheme: str
    naming_style: str
    notes_folder: str
    decisions_folder: str
    skills_folder: str
    evidence: _containers.RepeatedScalarFieldContainer[str]
    rule_files: _containers.RepeatedScalarFieldContainer[str]
    folder_rules: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, folder_scheme: _Optional[str] = ..., naming_style: _Optional[str] = ..., notes_folder: _Optional[str] = ..., decisions_folder: _Optional[str] = ..., skills_folder: _Optional[str] = ..., evidence: _Optional[_Iterable[str]] = ..., rule_files: _Optional[_Iterable[str]] = ..., folder_rules: _Optional[_Iterable[str]] = ...) -> None: ...

class Loadout(_message.Message):
    __slots__ = ("vault", "rules", "conventions", "hub_notes", "recent_decisions", "skills", "markdown", "project", "tokens")
    VAULT_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    CONVENTIONS_FIELD_NUMBER: _ClassVar[int]
    HUB_NOTES_FIELD_NUMBER: _ClassVar[int]
    RECENT_DECISIONS_FIELD_NUMBER: _ClassVar[int]
    SKILLS_FIELD_NUMBER: _ClassVar[int]
    MARKDOWN_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    vault: str
    rules: _containers.RepeatedCompositeFieldContainer[RuleFile]
    conventions: ConventionReport
    hub_notes: _containers.RepeatedScalarFieldContainer[str]
    recent_decisions: _containers.RepeatedScalarFieldContainer[str]
    skills: _containers.RepeatedScalarFieldContainer[str]
    markdown: str
    project: str
    tokens: int
    def __init__(self, vault: _Optional[str] = ..., rules: _Optional[_Iterable[_Union[RuleFile, _Mapping]]] = ..., conventions: _Optional[_Union[ConventionReport, _Mapping]] = ..., hub_notes: _Optional[_Iterable[str]] = ..., recent_decisions: _Optional[_Iterable[str]] = ..., skills: _Optional[_Iterable[str]] = ..., markdown: _Optional[str] = ..., project: _Optional[str] = ..., tokens: _Optional[int] = ...) -> None: ...

class TokenStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TokenStatsResponse(_message.Message):
    __slots__ = ("offloads", "original_tokens", "summary_tokens", "saved_ratio", "streamed_tokens", "repeats", "recalls", "recall_note_tokens", "recall_answer_tokens", "reads")
    OFFLOADS_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SAVED_RATIO_FIELD_NUMBER: _ClassVar[int]
    STREAMED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    REPEATS_FIELD_NUMBER: _ClassVar[int]
    RECALLS_FIELD_NUMBER: _ClassVar[int]
    RECALL_NOTE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    RECALL_ANSWER_TOKENS_FIELD_NUMBER: _ClassVar[int]
    READS_FIELD_NUMBER: _ClassVar[int]
    offloads: int
    original_tokens: int
    summary_tokens: int
    saved_ratio: float
    streamed_tokens: int
    repeats: int
    recalls: int
    recall_note_tokens: int
    recall_answer_tokens: int
    reads: int
    def __init__(self, offloads: _Optional[int] = ..., original_tokens: _Optional[int] = ..., summary_tokens: _Optional[int] = ..., saved_ratio: _Optional[float] = ..., streamed_tokens: _Optional[int] = ..., repeats: _Optional[int] = ..., recalls: _Optional[int] = ..., recall_note_tokens: _Optional[int] = ..., recall_answer_tokens: _Optional[int] = ..., reads: _Optional[int] = ...) -> None: ...

class RecallRecord(_message.Message):
    __slots__ = ("paths", "answer", "follow_up")
    PATHS_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_UP_FIELD_NUMBER: _ClassVar[int]
    paths: _containers.RepeatedScalarFieldContainer[str]
    answer: str
    follow_up: bool
    def __init__(self, paths: _Optional[_Iterable[str]] = ..., answer: _Optional[str] = ..., follow_up: _Optional[bool] = ...) -> None: ...

class ListLogsRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class LogEntry(_message.Message):
    __slots__ = ("node_id", "task_id", "command", "exit_code", "first_error", "first_location", "original_tokens", "summary_tokens", "line_count", "ref_path", "mermaid", "at_unix_ms", "errors", "warnings", "failed_tests")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    FIRST_ERROR_FIELD_NUMBER: _ClassVar[int]
    FIRST_LOCATION_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_TOKENS_FIELD_NUMBER: _ClassVar[int]
    LINE_COUNT_FIELD_NUMBER: _ClassVar[int]
    REF_PATH_FIELD_NUMBER: _ClassVar[int]
    MERMAID_FIELD_NUMBER: _ClassVar[int]
    AT_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    FAILED_TESTS_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    task_id: str
    command: str
    exit_code: int
    first_error: str
    first_location: str
    original_tokens: int
    summary_tokens: int
    line_count: int
    ref_path: str
    mermaid: str
    at_unix_ms: int
    errors: int
    warnings: int
    failed_tests: int
    def __init__(self, node_id: _Optional[str] = ..., task_id: _Optional[str] = ..., command: _Optional[str] = ..., exit_code: _Optional[int] = ..., first_error: _Optional[str] = ..., first_location: _Optional[str] = ..., original_tokens: _Optional[int] = ..., summary_tokens: _Optional[int] = ..., line_count: _Optional[int] = ..., ref_path: _Optional[str] = ..., mermaid: _Optional[str] = ..., at_unix_ms: _Optional[int] = ..., errors: _Optional[int] = ..., warnings: _Optional[int] = ..., failed_tests: _Optional[int] = ...) -> None: ...

class ListLogsResponse(_message.Message):
    __slots__ = ("logs", "total")
    LOGS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    logs: _containers.RepeatedCompositeFieldContainer[LogEntry]
    total: int
    def __init__(self, logs: _Optional[_Iterable[_Union[LogEntry, _Mapping]]] = ..., total: _Optional[int] = ...) -> None: ...
