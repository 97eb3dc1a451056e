"""OffloadEngine: logs over the threshold go to <vault>/.k0maru/refs; the caller gets a summary.

At or under the threshold the text passes through unchanged. Over it, the raw log is
written atomically to `<refs>/<task_id>_<node_id>.log` (node id = "node_" + xxh3-64 hex of
the content, so the same log offloaded twice is one file), and the caller gets the first
error, its location, counts, how to look closer, and a Mermaid diagram of the run.
`inspect` reads slices back; node ids are validated, so no other file can be read.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import regex
import xxhash

from k0maru_common import (
    MAX_LOG_BYTES,
    OFFLOAD_THRESHOLD_LINES,
    InvalidInput,
    NotFound,
    TooLarge,
    confine,
    estimate_tokens,
)

from ._files import VaultFolder, replace_atomically, sweep_stale_temps
from ._logscan import LogFindings, scan_log

NODE_ID = re.compile(r"^node_[0-9a-f]{16}$")
MAX_INSPECT_LINES = 400
MAX_LINE_CHARS = 2000
MAX_GREP_PATTERN = 1000
GREP_BUDGET_S = 2.0  # one grep may spend this long matching; then INVALID_ARGUMENT
MAX_LINE_NUMBER = 2**32 - 1


@dataclass
class Offloaded:
    offloaded: bool
    summary: str
    line_count: int
    original_tokens: int
    summary_tokens: int
    node_id: str = ""
    ref_path: str = ""
    mermaid: str = ""
    findings: LogFindings = field(default_factory=LogFindings)


def sanitize_task_id(task_id: str) -> str:
    """Task ids name files: letters and digits of any script (`支付构建`: ASCII alone refused the
    log with it), `_` and `-` only, at most 64, composed (NFC); others refused."""
    if not task_id:
        return ""
    task_id = unicodedata.normalize("NFC", task_id)
    if not re.fullmatch(r"[\w-]{1,64}", task_id):
        raise InvalidInput("task_id may contain only letters, digits, '_' and '-' (at most 64)")
    return task_id


def _mermaid_label(text: str, limit: int = 60) -> str:
    text = text.replace('"', "'").replace("\n", " ")
    text = re.sub(r"[<>{}\[\]|`]", " ", text).strip()
    return (text[: limit - 1] + "…") if len(text) > limit else (text or "-")


def mermaid(command: str, exit_code: int | None, lines: int, f: LogFindings) -> str:
    """A short flowchart of the run: command → exit → captured lines → first error → user location."""
    exit_text = "exit ?" if exit_code is None else f"exit {exit_code}"
    chain = f'  run["{_mermaid_label(command or "log", 40)}"] --> ex{{"{exit_text}"}} --> log[("{lines} lines")]'
    if f.first_error:
        chain += f' --> err["{_mermaid_label(f.error_code or f.first_error, 30)}"]'
        if f.location:
            chain += f' --> loc["{_mermaid_label(f.location.rsplit("/", 1)[-1], 40)}"]'
    return "flowchart LR\n" + chain


def next_step(node_id: str, tool: bool = True) -> str:
    """What to call to read more of an offloaded log: the MCP tool, or the CLI command."""
    if tool:
        return f'next: inspect_log_node(node_id="{node_id}", around_first_error=true) (or start_line/end_line, grep)'
    return f"next: k0maru inspect {node_id} --around-error (or --lines A:B, --grep RE)"


def summarize(lines: int, rel_path: str, exit_code: int | None, f: LogFindings) -> str:
    """The few lines an agent reads instead of the log: where it went, the first error, the user's line."""
    status = "" if exit_code is None else f", exit {exit_code}"
    body = [f"[offloaded] {lines} lines{status} -> {rel_path}"]
    if f.first_error:
        error = f.first_error if len(f.first_error) <= 160 else f.first_error[:159] + "…"
        body.append(f"first error (log line {f.error_line}): {error}")
        body.append(f"at: {f.location or 'no location in your sources'}")
    else:
        body.append("first error: none recognised")
    body.append(f"{f.errors} errors, {f.warnings} warnings, {f.failed_tests} failed tests")
    return "\n".join(body)


# the raw logs stay out of a vault kept in git (`.k0maru/rules.md`, beside them, is the team's)
REFS_GITIGNORE = "# k0maru's offloaded raw logs, which may hold secrets: not for commits\n*\n"


class OffloadEngine:
    def __init__(
        self,
        vault: Path,
        threshold: int = OFFLOAD_THRESHOLD_LINES,
        max_bytes: int = MAX_LOG_BYTES,
        folder: VaultFolder | None = None,
    ) -> None:
        self.vault = vault.resolve()
        self.folder = folder or VaultFolder(vault)  # logs are written only into a vault that is there
        self.refs = self.vault / ".k0maru" / "refs"
        self._swept = False  # a killed process's temp files are removed at this engine's first log
        self.threshold = threshold
        self.max_bytes = max_bytes

    def offload(
        self, text: str, task_id: str = "", threshold: int = 0, command: str = "", exit_code: int | None = None
    ) -> Offloaded:
        if len(text.encode("utf-8", "replace")) > self.max_bytes:
            raise TooLarge(f"log is larger than {self.max_bytes} bytes")
        task = sanitize_task_id(task_id)
        limit = threshold or self.threshold
        lines = text.splitlines()
        tokens = estimate_tokens(text)
        if len(lines) <= limit:
            return Offloaded(False, text, len(lines), tokens, tokens)
        raw = "\n".join(lines) + "\n"
        node_id = "node_" + xxhash.xxh3_64_hexdigest(raw.encode("utf-8", "replace"))
        path = self.refs / (f"{task}_{node_id}.log" if task else f"{node_id}.log")
        if not path.exists():
            what = f"the log {path.relative_to(self.vault).as_posix()}"
            self.folder.check(what, self.refs)
            # a `.k0maru` or `refs` symlinked out of the vault (a cloned repo's) took the logs with it
            confine(self.vault, self.refs.relative_to(self.vault).as_posix())
            # the .gitignore first: raw logs (tokens, hosts), or a killed write's temp file, are one
            # `git add -A` from a commit
            if not (self.refs / ".gitignore").exists():  # failing (a full disk), the log could not be written either
                replace_atomically(self.refs / ".gitignore", REFS_GITIGNORE, what)
            if not self._swept:  # once: the refs folder holds every log, and only a crash leaves them
                with contextlib.suppress(OSError):
                    sweep_stale_temps(self.refs, ".tmp-", os.listdir(self.refs))
                self._swept = True
            replace_atomically(path, raw, what)
        f = scan_log(lines)
        rel = path.relative_to(self.vault).as_posix()
        summary = summarize(len(lines), rel, exit_code, f)
        diagram = mermaid(command, exit_code, len(lines), f)
        return Offloaded(
            True,
            summary,
            len(lines),
            tokens,
            estimate_tokens(f"{summary}\n{next_step(node_id)}\n{diagram}"),
            node_id,
            rel,
            diagram,
            f,
        )

    def _find(self, node_id: str) -> Path:
        node_id = node_id.strip().removesuffix(".log")
        if not NODE_ID.match(node_id):
            raise InvalidInput(f"invalid node id {node_id!r}: expected node_ followed by 16 hex digits")
        if self.refs.is_dir():
            with os.scandir(self.refs) as entries:
                for entry in entries:
                    wanted = entry.name == f"{node_id}.log" or entry.name.endswith(f"_{node_id}.log")
                    if wanted and entry.is_file(follow_symlinks=False):
                        return Path(entry.path)
        raise NotFound(f"no offloaded log {node_id} in {self.refs.relative_to(self.vault)}")

    @staticmethod
    def streamed_tokens(text: str, streamed_lines: int) -> int:
        """Tokens of the first `streamed_lines` lines, which the caller showed before capturing."""
        if streamed_lines <= 0:
            return 0
        return estimate_tokens("\n".join(text.splitlines()[:streamed_lines]))

    def read_log(self, node_id: str) -> str:
        """The whole offloaded log (for distillation; agents use `inspect` slices)."""
        return self._find(node_id).read_text(encoding="utf-8", errors="replace")

    def inspect(
        self,
        node_id: str,
        start: int = 0,
        end: int = 0,
        grep: str = "",
        context: int = 0,
        around_first_error: bool = False,
    ) -> tuple[list[tuple[int, str]], int]:
        """Numbered lines (1-based) of an offloaded log, bounded to MAX_INSPECT_LINES."""
        for name, value in (("start_line", start), ("end_line", end), ("context", context)):
            if not 0 <= value <= MAX_LINE_NUMBER:
                raise InvalidInput(f"{name} must be between 0 and {MAX_LINE_NUMBER}, got {value}")
        lines = self._find(node_id).read_text(encoding="utf-8", errors="replace").splitlines()
        total = len(lines)
        if grep:
            wanted: set[int] = set()
            for i in grep_lines(lines, grep):
                wanted.update(range(max(0, i - context), min(total, i + context + 1)))
            picked = sorted(wanted)
        elif around_first_error:
            at = scan_log(lines).error_line or 1
            span = context or 15
            picked = list(range(max(0, at - 1 - span), min(total, at + span)))
        else:
            if end and start and end < start:
                raise InvalidInput("end_line is before start_line")
            lo = max(1, start or 1) - 1
            hi = min(total, end or total)
            picked = list(range(lo, hi))
        return [(i + 1, lines[i][:MAX_LINE_CHARS]) for i in picked[:MAX_INSPECT_LINES]], total


def grep_lines(lines: list[str], pattern: str, budget_s: float = GREP_BUDGET_S) -> list[int]:
    """0-based indexes of the lines matching `pattern`, within a time budget.

    Matching runs in the `regex` engine with a timeout and without the GIL, so a pattern
    with catastrophic backtracking (`(a+)+$`) stops after `budget_s` with INVALID_ARGUMENT
    instead of running on, and other calls keep being served meanwhile.
    """
    if len(pattern) > MAX_GREP_PATTERN:
        raise InvalidInput(f"grep pattern is longer than {MAX_GREP_PATTERN} characters")
    try:
        compiled = regex.compile(pattern)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise InvalidInput(f"invalid grep pattern: {exc}") from exc
    deadline = time.monotonic() + budget_s
    found: list[int] = []
    for i, line in enumerate(lines):
        remaining = deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError
            if compiled.search(line, timeout=remaining, concurrent=True):
                found.append(i)
        except TimeoutError:
            raise InvalidInput(
                f"grep pattern {pattern[:80]!r} took more than {budget_s:g} s over this log "
                "(nested quantifiers backtrack); use a simpler pattern or a line range"
            ) from None
    return found
