"""Request validation at the gRPC boundary, for every service, in one place.

`ErrorMappingInterceptor` runs `check_request` on every request before the servicer sees it,
so hostile input gets INVALID_ARGUMENT with a short reason instead of failing deep inside
SQLite, tantivy or the filesystem (INTERNAL), or breaking the stream with an oversized status:

- an enum field holding a number its enum does not define (proto3 keeps unknown values);
- a uint64 beyond 2^63 - 1 (SQLite's and the journal's integer range);
- a vault path or name field (`NAME_FIELDS`) longer than 4096 bytes (Linux PATH_MAX), or a
  repeated one with more than 1000 items.

Sub-messages are checked the same way. Service-specific limits (texts per Embed call, query
length) stay with the services; this is what holds for every message.
"""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from ._errors import InvalidInput

MAX_NAME_BYTES = 4096
MAX_NAME_ITEMS = 1000
MAX_UINT64 = 2**63 - 1
# Fields that carry a vault path, a folder, a tag or a stored name, in any k0maru message.
NAME_FIELDS = frozenset(
    {
        "path",
        "paths",
        "old_path",
        "path_prefixes",
        "diaries",
        "tags",
        "core_tags",
        "folder",
        "category",
        "related_notes",
        "node_id",
        "task_id",
    }
)


def check_request(message: Message, prefix: str = "") -> None:
    """Raise InvalidInput naming the first field that no k0maru service can accept."""
    for field, value in message.ListFields():
        name = f"{prefix}{field.name}"
        values = list(value) if field.is_repeated else [value]
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.message_type is None or field.message_type.GetOptions().map_entry:
                continue
            for item in values:
                check_request(item, f"{name}.")
        elif field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
            enum = field.enum_type
            for item in values:
                if enum.values_by_number.get(item) is None:
                    known = ", ".join(v.name for v in enum.values)
                    raise InvalidInput(f"{name} = {item} is not a {enum.name} ({known})")
        elif field.type in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
            for item in values:
                if item > MAX_UINT64:
                    raise InvalidInput(f"{name} = {item} is out of range (at most {MAX_UINT64})")
        elif field.type == FieldDescriptor.TYPE_STRING and field.name in NAME_FIELDS:
            if len(values) > MAX_NAME_ITEMS:
                raise InvalidInput(f"{name} has {len(values)} items; at most {MAX_NAME_ITEMS}")
            for item in values:
                size = len(item.encode("utf-8", "surrogatepass"))
                if size > MAX_NAME_BYTES:
                    raise InvalidInput(f"{name} is {size} bytes long; at most {MAX_NAME_BYTES}")
