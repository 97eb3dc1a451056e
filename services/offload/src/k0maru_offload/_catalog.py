"""The catalog of offloaded logs the console lists: one JSON sidecar per raw log.

Next to `<refs>/<name>.log` the service writes `<refs>/<name>.json` (task, command, exit code,
findings, token counts, the Mermaid diagram) when the log is first offloaded. Logs without a
sidecar (offloaded by an older version, or by `k0maru offload` with no stack) are listed from
the log itself, with no command or exit code.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from k0maru.v1 import offload_pb2
from k0maru_common import estimate_tokens

from ._engine import Offloaded, mermaid
from ._files import replace_atomically
from ._logscan import scan_log

_NAME = re.compile(r"^(?:(?P<task>[A-Za-z0-9_-]{1,64})_)?(?P<node>node_[0-9a-f]{16})\.log$")
DEFAULT_LIMIT = 200


def record(vault: Path, result: Offloaded, task_id: str, command: str, exit_code: int | None) -> bool:
    """Write the sidecar of a freshly offloaded log; False when this log (same node id) was seen before."""
    log_path = vault / result.ref_path
    sidecar = log_path.with_suffix(".json")
    if any(log_path.parent.glob(f"*{result.node_id}.json")):
        return False
    f = result.findings
    entry = {
        "node_id": result.node_id,
        "task_id": task_id,
        "command": command,
        "exit_code": exit_code,
        "first_error": f.first_error,
        "first_location": f.location,
        "original_tokens": result.original_tokens,
        "summary_tokens": result.summary_tokens,
        "line_count": result.line_count,
        "ref_path": result.ref_path,
        "mermaid": result.mermaid,
        "at_unix_ms": int(time.time() * 1000),
        "errors": f.errors,
        "warnings": f.warnings,
        "failed_tests": f.failed_tests,
    }
    replace_atomically(sidecar, json.dumps(entry, ensure_ascii=False), f"{result.ref_path}'s index entry")
    return True


def _from_log(vault: Path, path: Path, task: str, node: str) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    f = scan_log(lines)
    return {
        "node_id": node,
        "task_id": task,
        "first_error": f.first_error,
        "first_location": f.location,
        "original_tokens": estimate_tokens(text),
        "line_count": len(lines),
        "ref_path": path.relative_to(vault).as_posix(),
        "mermaid": mermaid("", None, len(lines), f),
        "at_unix_ms": path.stat().st_mtime_ns // 1_000_000,
        "errors": f.errors,
        "warnings": f.warnings,
        "failed_tests": f.failed_tests,
    }


def list_logs(vault: Path, limit: int = 0) -> offload_pb2.ListLogsResponse:
    """Offloaded logs, newest first, at most `limit` (0 = 200)."""
    refs = vault / ".k0maru" / "refs"
    found: list[tuple[int, Path, str, str]] = []
    if refs.is_dir():
        with os.scandir(refs) as entries:
            for entry in entries:
                m = _NAME.match(entry.name)
                if m and entry.is_file(follow_symlinks=False):
                    found.append((entry.stat().st_mtime_ns, Path(entry.path), m["task"] or "", m["node"]))
    found.sort(key=lambda item: (-item[0], item[1].name))
    reply = offload_pb2.ListLogsResponse(total=len(found))
    for _mtime, path, task, node in found[: limit or DEFAULT_LIMIT]:
        try:
            meta: dict[str, Any] = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = _from_log(vault, path, task, node)
        known = {k: v for k, v in meta.items() if k in offload_pb2.LogEntry.DESCRIPTOR.fields_by_name and v is not None}
        reply.logs.append(offload_pb2.LogEntry(**known))
    return reply
