"""Offload gRPC service: OffloadLog, ListLogs, InspectLogNode, FlushSession, DistillSkill, loadout, ledger
(offloads and recall answers)."""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

import grpc
import redis

from k0maru.v1 import offload_pb2, offload_pb2_grpc
from k0maru_common import (
    HEALTH_NAMES,
    TOKEN_LEDGER,
    CommitDays,
    GrpcService,
    InvalidInput,
    confine,
    decode_text,
    estimate_tokens,
    read_at_most,
    vault_relative,
)

from . import _catalog as catalog
from ._conventions import Conventions, sniff
from ._distill import distill, export_hermes
from ._engine import OffloadEngine
from ._files import VaultFolder
from ._flush import FlushEngine, FlushNote, slugify
from ._loadout import DEFAULT_TOKENS, build_loadout
from .config import OffloadSettings

log = logging.getLogger(__name__)
MAX_RECALL_PATHS = 100
MAX_NOTE_BYTES = 2_000_000
OUTCOMES = {
    "created": offload_pb2.FLUSH_OUTCOME_CREATED,
    "up_to_date": offload_pb2.FLUSH_OUTCOME_UP_TO_DATE,
    "versioned": offload_pb2.FLUSH_OUTCOME_VERSIONED,
}


_RECORD_ONCE = """
if redis.call('SADD', KEYS[2], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'offloads', 1)
  redis.call('HINCRBY', KEYS[1], 'original_tokens', ARGV[2])
  redis.call('HINCRBY', KEYS[1], 'summary_tokens', ARGV[3])
  redis.call('HINCRBY', KEYS[1], 'streamed_tokens', ARGV[4])
  return 1
end
redis.call('HINCRBY', KEYS[1], 'repeats', 1)
return 0
"""


def _supersessions(notes: Any) -> dict[str, list[str]]:
    """`LoadoutRequest.superseded` as note → successors; a path that is no vault-relative path
    (`../x`, `/etc`) is refused: the loadout would list it and say whether it exists."""
    for note in notes:
        for path in (note.path, *note.superseded_by):
            vault_relative(path)  # OutsideVault: INVALID_ARGUMENT with the path
    return {note.path: list(note.superseded_by) for note in notes}


class TokenLedger:
    """Tokens before and after offloading, in a Redis hash the console reads.

    Each distinct log counts once, keyed by its content hash (the node id): offloading the same
    log again adds to `repeats` only. Lines the caller streamed before capturing went into the
    agent's context, so their tokens count on the "after" side too (`streamed_tokens`).
    """

    def __init__(self, client: redis.Redis) -> None:
        self._redis: Any = client  # bytes replies; redis-py's unions do not narrow

    def record(self, node_id: str, original: int, summary: int, streamed: int = 0) -> bool:
        """Count one offloaded log; False if this content was counted before (or Redis is down)."""
        try:
            added = self._redis.eval(
                _RECORD_ONCE, 2, TOKEN_LEDGER, f"{TOKEN_LEDGER}:logs", node_id, original, summary + streamed, streamed
            )
            return bool(added)
        except redis.RedisError as exc:  # the offload itself already succeeded
            log.warning("token ledger not updated: %s", exc)
            return False

    def record_recall(self, note_tokens: int, answer_tokens: int) -> None:
        self._add({"recalls": 1, "recall_note_tokens": note_tokens, "recall_answer_tokens": answer_tokens})

    def record_read(self, answer_tokens: int) -> None:
        """A note read after a recall (read_note): spent against what recalls saved."""
        self._add({"reads": 1, "recall_answer_tokens": answer_tokens})

    def _add(self, counts: dict[str, int]) -> None:
        try:
            pipe = self._redis.pipeline(transaction=True)
            for key, n in counts.items():
                pipe.hincrby(TOKEN_LEDGER, key, n)
            pipe.execute()
        except redis.RedisError as exc:  # the answer has already gone out
            log.warning("token ledger not updated: %s", exc)

    def totals(self) -> dict[str, int]:
        raw = self._redis.hgetall(TOKEN_LEDGER)
        return {k.decode(): int(v) for k, v in raw.items()}


class OffloadServicer(offload_pb2_grpc.OffloadServicer):  # type: ignore[misc]
    def __init__(self, settings: OffloadSettings, ledger: TokenLedger, commit_days: CommitDays | None) -> None:
        self._settings = settings
        folder = VaultFolder(settings.vault)  # what is written goes only into a vault that is there
        self._engine = OffloadEngine(settings.vault, settings.threshold_lines, settings.max_log_bytes, folder)
        self._flush = FlushEngine(settings.vault, folder)
        self._ledger = ledger
        self._commit_days = commit_days  # a vault in git: the loadout's newest decisions by their commits

    def OffloadLog(
        self, request: offload_pb2.OffloadLogRequest, context: grpc.ServicerContext
    ) -> offload_pb2.OffloadResult:
        exit_code = request.exit_code if request.HasField("exit_code") else None
        result = self._engine.offload(request.text, request.task_id, request.threshold, request.command, exit_code)
        counted = False
        if result.offloaded:
            # the catalog (a JSON sidecar per log) feeds the console's offload browser
            catalog.record(self._engine.vault, result, request.task_id, request.command, exit_code)
            streamed = self._engine.streamed_tokens(request.text, request.streamed_lines)
            counted = self._ledger.record(result.node_id, result.original_tokens, result.summary_tokens, streamed)
        f = result.findings
        return offload_pb2.OffloadResult(
            offloaded=result.offloaded,
            node_id=result.node_id,
            summary=result.summary,
            mermaid=result.mermaid,
            original_tokens=result.original_tokens,
            summary_tokens=result.summary_tokens,
            ref_path=result.ref_path,
            line_count=result.line_count,
            first_error=f.first_error,
            first_location=f.location,
            errors=f.errors,
            warnings=f.warnings,
            failed_tests=f.failed_tests,
            counted=counted,
        )

    def ListLogs(
        self, request: offload_pb2.ListLogsRequest, context: grpc.ServicerContext
    ) -> offload_pb2.ListLogsResponse:
        return catalog.list_logs(self._engine.vault, request.limit)

    def InspectLogNode(
        self, request: offload_pb2.InspectRequest, context: grpc.ServicerContext
    ) -> offload_pb2.InspectResponse:
        lines, total = self._engine.inspect(
            request.node_id,
            request.start_line,
            request.end_line,
            request.grep,
            request.context,
            request.around_first_error,
        )
        return offload_pb2.InspectResponse(
            node_id=request.node_id.strip().removesuffix(".log"),
            total_lines=total,
            lines=[offload_pb2.LogLine(number=n, text=t) for n, t in lines],
        )

    def FlushSession(
        self, request: offload_pb2.FlushRequest, context: grpc.ServicerContext
    ) -> offload_pb2.FlushResponse:
        note = FlushNote(
            request.title,
            request.content,
            request.category,
            tuple(request.tags),
            tuple(request.related_notes),
            request.source or "k0maru flush_session",
            supersedes=tuple(request.supersedes),
        )
        path, outcome = self._flush.flush(note)
        return offload_pb2.FlushResponse(path=path, outcome=OUTCOMES[outcome])

    def DistillSkill(
        self, request: offload_pb2.DistillRequest, context: grpc.ServicerContext
    ) -> offload_pb2.DistillResponse:
        trace = request.trace
        if request.node_id and not trace:
            trace = self._engine.read_log(request.node_id)
        if not trace.strip():
            raise InvalidInput("give a trace or the node_id of an offloaded log")
        card = distill(trace, request.title)
        path, outcome = self._flush.flush(
            FlushNote(card.title, card.markdown, "skill", card.tags, (), "k0maru distill")
        )
        exported = ""
        if request.export:
            exported = str(export_hermes(card, self._settings.skills_export_dir, slugify(card.title)))
        return offload_pb2.DistillResponse(
            path=path, outcome=OUTCOMES[outcome], skill_markdown=card.markdown, exported_path=exported
        )

    def GetProjectLoadout(
        self, request: offload_pb2.LoadoutRequest, context: grpc.ServicerContext
    ) -> offload_pb2.Loadout:
        if request.max_tokens > 100_000:
            raise InvalidInput("max_tokens is at most 100000")
        loadout = build_loadout(
            self._settings.vault,
            request.max_tokens or DEFAULT_TOKENS,
            request.project[:200],
            request.max_chars,
            self._commit_days,
            _supersessions(request.superseded),
        )
        return offload_pb2.Loadout(
            vault=str(self._settings.vault),
            rules=[offload_pb2.RuleFile(path=p, text=t) for p, t in loadout.rules],
            conventions=_report(loadout.conventions),
            hub_notes=loadout.hubs,
            recent_decisions=loadout.decisions,
            skills=loadout.skills,
            markdown=loadout.markdown,
            project=loadout.project,
            tokens=loadout.tokens,
        )

    def Conventions(
        self, request: offload_pb2.ConventionsRequest, context: grpc.ServicerContext
    ) -> offload_pb2.ConventionReport:
        return _report(sniff(self._settings.vault.resolve()))

    def TokenStats(
        self, request: offload_pb2.TokenStatsRequest, context: grpc.ServicerContext
    ) -> offload_pb2.TokenStatsResponse:
        totals = self._ledger.totals()
        original, summary = totals.get("original_tokens", 0), totals.get("summary_tokens", 0)
        return offload_pb2.TokenStatsResponse(
            offloads=totals.get("offloads", 0),
            original_tokens=original,
            summary_tokens=summary,
            saved_ratio=(1 - summary / original) if original else 0.0,
            streamed_tokens=totals.get("streamed_tokens", 0),
            repeats=totals.get("repeats", 0),
            recalls=totals.get("recalls", 0),
            recall_note_tokens=totals.get("recall_note_tokens", 0),
            recall_answer_tokens=totals.get("recall_answer_tokens", 0),
            reads=totals.get("reads", 0),
        )

    def RecordRecall(
        self, request: offload_pb2.RecallRecord, context: grpc.ServicerContext
    ) -> offload_pb2.TokenStatsResponse:
        """Tokens of the whole notes a recall answer drew on vs the answer: what recall saved. A
        follow-up read (read_note) only spends: its answer's tokens count against the savings."""
        if request.follow_up:
            self._ledger.record_read(estimate_tokens(request.answer))
            return self.TokenStats(offload_pb2.TokenStatsRequest(), context)
        if len(request.paths) > MAX_RECALL_PATHS:
            raise InvalidInput(f"at most {MAX_RECALL_PATHS} paths per recall")
        vault = self._settings.vault.resolve()
        note_tokens = 0
        for path in dict.fromkeys(request.paths):
            try:
                note_tokens += estimate_tokens(
                    decode_text(read_at_most(confine(vault, path), MAX_NOTE_BYTES), "replace")
                )
            except OSError:
                continue  # deleted since: it costs nothing now
        self._ledger.record_recall(note_tokens, estimate_tokens(request.answer))
        return self.TokenStats(offload_pb2.TokenStatsRequest(), context)


def _report(conv: Conventions) -> offload_pb2.ConventionReport:
    return offload_pb2.ConventionReport(
        folder_scheme=conv.folder_scheme,
        naming_style=conv.naming_style,
        notes_folder=conv.folders.get("log", ""),
        decisions_folder=conv.folders.get("decision", ""),
        skills_folder=conv.folders.get("skill", ""),
        evidence=conv.evidence,
        rule_files=conv.rule_files,
        folder_rules=conv.describe(),
    )


@dataclass
class OffloadApp:
    """The service and the resources it owns (the ledger's Redis connection)."""

    settings: OffloadSettings
    service: GrpcService
    redis: redis.Redis
    commit_days: CommitDays | None

    def wait_for_ledger(self) -> None:
        """The ledger must be reachable before the service says SERVING."""
        while not self.service.stopping:
            try:
                self.redis.ping()
                return
            except (redis.ConnectionError, redis.TimeoutError):
                log.warning("Redis at %s not reachable yet", self.settings.redis_url)
                time.sleep(0.5)

    def close(self) -> None:
        if self.commit_days is not None:
            self.commit_days.close()
        self.redis.close()


def build_server(settings: OffloadSettings) -> OffloadApp:
    """Bind gRPC (health NOT_SERVING) and register the servicer; nothing is served until `run`."""
    if not settings.vault.is_dir():
        raise SystemExit(f"offload: vault {settings.vault} is not a folder")
    client = redis.Redis.from_url(settings.redis_url)
    service = GrpcService(HEALTH_NAMES["offload"], settings.grpc_addr, token=settings.grpc_token)
    # a loadout waits for the history's read at most 2 s (a big repository's takes longer): until
    # it ends, decisions are ordered by their files' days
    commit_days = CommitDays(settings.vault.resolve(), wait_s=2.0) if settings.commit_days else None
    servicer = OffloadServicer(settings, TokenLedger(client), commit_days)
    offload_pb2_grpc.add_OffloadServicer_to_server(servicer, service.server)
    return OffloadApp(settings, service, client, commit_days)


def run(settings: OffloadSettings) -> None:
    app = build_server(settings)
    try:
        with app.service:
            app.wait_for_ledger()
            app.service.set_serving(True)
            with contextlib.suppress(KeyboardInterrupt):
                app.service.wait_for_termination()
    finally:
        app.close()
