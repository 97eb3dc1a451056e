"""Scanner gRPC service: Scan, Changes, GetDocuments, ListDocuments (and its paged form), Status."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import grpc
import xxhash
import zmq

from k0maru.v1 import common_pb2, scanner_pb2, scanner_pb2_grpc
from k0maru_common import (
    HEALTH_NAMES,
    CannotWrite,
    ChangePublisher,
    GrpcService,
    InvalidInput,
    JournalTruncated,
    OutsideVault,
    confine,
    read_text,
    vault_id,
)

from ._canvas import parse_canvas
from ._chunker import chunk_sections
from ._conflicts import conflict_original, conflict_problem, twin_problem
from ._manifest import FileRecord, JournalEntry, mtime_ns_of, open_manifest
from ._markdown import PARSER_VERSION, parse_note
from ._scanner import ContentError, IgnoreRules, IncrementalScanner, ScanResult, VaultUnavailable, read_note_text
from ._watcher import ChangeWatcher
from .config import ScannerSettings

log = logging.getLogger(__name__)
MAX_PATHS_PER_CALL = 1000
MANIFEST_PAGE = 1000  # entries per ListDocumentPages message
SKIPPED_LISTED = 50  # skipped files Status names (with why); `skipped` counts them all


def to_event(entry: JournalEntry, vid: str) -> common_pb2.ChangeEvent:
    return common_pb2.ChangeEvent(
        seq=entry.seq,
        kind=common_pb2.ChangeKind.Name(entry.kind),
        path=entry.path,
        hash=entry.hash,
        old_path=entry.old_path,
        at_unix_ms=entry.at_ms,
        vault_id=vid,
    )


def to_stats(result: ScanResult, last_seq: int) -> scanner_pb2.ScanStats:
    return scanner_pb2.ScanStats(
        added=result.added,
        modified=result.modified,
        deleted=result.deleted,
        renamed=result.renamed,
        unchanged=result.unchanged,
        skipped=result.skipped,
        ms=result.ms,
        last_seq=last_seq,
    )


def parser_version(scanner: IncrementalScanner) -> str:
    """How notes are parsed now: the parser's version, Logseq's journal formats when the vault
    sets its own, and whether notes say the day they were committed (a retriever that indexed
    with another re-fetches every note)."""
    parts = [PARSER_VERSION, scanner.journals.fingerprint, "" if scanner.commit_days is not None else "no commit days"]
    return "; ".join(p for p in parts if p)


def parse_document(
    scanner: IncrementalScanner, rel: str, new_document: Callable[..., common_pb2.Document] = common_pb2.Document
) -> common_pb2.Document | None:
    """The note as it is on disk now, or None when it is gone or not indexable. `new_document`
    makes the message once the note is read: a reply's `documents.add` builds it in place (an
    appended message is copied: 0.07 s per 2,000 long notes)."""
    record = scanner.manifest.files.get(rel)
    if record is None or not record.indexed:
        return None
    path = confine(scanner.vault, rel, vault_resolved=True)
    try:
        st = path.stat()
        data = scanner.take_fresh(rel, st)
        if data is not None:  # read by the last scan, checked there (size, NUL bytes, encoding)
            text, how = read_text(data)
        else:
            data, text, how = read_note_text(path, scanner.max_file_bytes)
    except (ContentError, OSError):
        return None
    note = parse_canvas(rel, text) if rel.lower().endswith(".canvas") else parse_note(rel, text, scanner.journals)
    doc = new_document(
        path=rel,
        title=note.title,
        diary=note.diary,
        frontmatter_json=note.frontmatter_json,
        tags=note.tags,
        aliases=note.aliases,
        hash=xxhash.xxh3_64_hexdigest(data),
        size=len(data),
        mtime_ns=mtime_ns_of(st),
        problems=[p for p in (how, conflict_problem(rel, text), twin_problem(rel, scanner.manifest.files)) if p]
        + note.problems,
        block_ids=note.block_ids,
        date=note.date,
        description=note.description,
        conflict_of=conflict_original(rel),
        committed=scanner.commit_days.day(rel, data) if scanner.commit_days is not None else "",
    )
    add_link = doc.links.add  # built in place: a list of messages would be copied into the field
    for lk in note.links:
        add_link(
            target=lk.target,
            alias=lk.alias,
            heading=lk.heading,
            block=lk.block,
            embed=lk.embed,
            markdown=lk.markdown,
            line=lk.line,
            property=lk.property,
        )
    add_chunk = doc.chunks.add
    for c in chunk_sections(note.sections):
        add_chunk(
            index=c.index,
            text=c.text,
            heading_path=c.heading_path,
            start_line=c.start_line,
            end_line=c.end_line,
            hash=c.hash,
        )
    return doc


def _fill_entry(entry: scanner_pb2.ManifestEntry, record: FileRecord) -> None:
    entry.path = record.path
    entry.size = record.size
    entry.mtime_ns = record.mtime_ns
    entry.hash = record.hash
    entry.parsed_at_unix_ms = record.parsed_at_ms
    entry.skipped_reason = record.skipped_reason


class ScannerServicer(scanner_pb2_grpc.ScannerServicer):  # type: ignore[misc]
    def __init__(self, scanner: IncrementalScanner, vid: str, watcher: ChangeWatcher | None) -> None:
        self._scanner = scanner
        self._vid = vid
        self._watcher = watcher

    def Scan(self, request: scanner_pb2.ScanRequest, context: grpc.ServicerContext) -> scanner_pb2.ScanStats:
        result = self._scanner.scan(force_full=request.force_full)
        return to_stats(result, self._scanner.manifest.last_seq())

    def Changes(
        self, request: scanner_pb2.ChangesRequest, context: grpc.ServicerContext
    ) -> Iterator[common_pb2.ChangeEvent]:
        manifest = self._scanner.manifest
        if request.journal_id and request.journal_id != manifest.journal_id:
            raise JournalTruncated(
                f"since_seq {request.since_seq} counts in journal {request.journal_id}, and this is journal "
                f"{manifest.journal_id} (made anew since): reconcile from ListDocuments"
            )
        oldest = manifest.oldest_seq()
        if request.since_seq + 1 < oldest:
            raise JournalTruncated(
                f"journal starts at seq {oldest}; since_seq {request.since_seq} is older: reconcile from ListDocuments"
            )
        last = manifest.last_seq()
        if request.since_seq > last:  # another journal's seq: this one was made anew since
            raise JournalTruncated(
                f"journal ends at seq {last}; since_seq {request.since_seq} is past it (the journal was made anew): "
                "reconcile from ListDocuments"
            )
        for entry in manifest.changes(request.since_seq, request.limit):
            yield to_event(entry, self._vid)

    def GetDocuments(
        self, request: scanner_pb2.GetDocumentsRequest, context: grpc.ServicerContext
    ) -> scanner_pb2.GetDocumentsResponse:
        if len(request.paths) > MAX_PATHS_PER_CALL:
            raise InvalidInput(f"at most {MAX_PATHS_PER_CALL} paths per call")
        reply = scanner_pb2.GetDocumentsResponse()
        for rel in request.paths:
            built = len(reply.documents)
            try:
                doc = parse_document(self._scanner, rel, reply.documents.add)
            except OutsideVault:
                doc = None
            except Exception:  # a parser fault on one note must not cost the notes fetched beside it
                log.exception("cannot parse %s: it is left out of the index until it changes", rel)
                del reply.documents[built:]  # what was built of it in the reply
                doc = None
            if doc is None:
                reply.missing.append(rel)
        return reply

    def _listed(self, request: scanner_pb2.ListDocumentsRequest) -> Iterator[FileRecord]:
        for record in sorted(self._scanner.manifest.files.values(), key=lambda r: r.path):
            if record.indexed or request.include_skipped:
                yield record

    def ListDocuments(
        self, request: scanner_pb2.ListDocumentsRequest, context: grpc.ServicerContext
    ) -> Iterator[scanner_pb2.ManifestEntry]:
        for record in self._listed(request):
            entry = scanner_pb2.ManifestEntry()
            _fill_entry(entry, record)
            yield entry

    def ListDocumentPages(
        self, request: scanner_pb2.ListDocumentsRequest, context: grpc.ServicerContext
    ) -> Iterator[scanner_pb2.ManifestPage]:
        page = scanner_pb2.ManifestPage()
        for record in self._listed(request):
            _fill_entry(page.entries.add(), record)
            if len(page.entries) >= MANIFEST_PAGE:
                yield page
                page = scanner_pb2.ManifestPage()
        if page.entries:
            yield page

    def Status(
        self, request: scanner_pb2.ScannerStatusRequest, context: grpc.ServicerContext
    ) -> scanner_pb2.ScannerStatus:
        skipped_files = sorted(
            (r for r in self._scanner.manifest.files.values() if not r.indexed), key=lambda r: r.path
        )
        skipped = len(skipped_files)
        return scanner_pb2.ScannerStatus(
            vault=str(self._scanner.vault),
            vault_id=self._vid,
            last_seq=self._scanner.manifest.last_seq(),
            journal_id=self._scanner.manifest.journal_id,
            oldest_seq=self._scanner.manifest.oldest_seq(),
            documents=len(self._scanner.manifest.files) - skipped,
            skipped=skipped,
            watching=bool(self._watcher and self._watcher.running),
            parser_version=parser_version(self._scanner),
            workers=[self._watcher.health().to_proto()] if self._watcher else [],
            watch_note=self._watcher.note if self._watcher else "",
            problem=self._scanner.problem or self._scanner.stuck(),
            excluded=[*self._scanner.excluded.described, *self._scanner.git_ignores.describe()],
            out_of_sight=[f"{folder}: {why}" for folder, why in sorted(self._scanner.out_of_sight.items())],
            skipped_files=[
                scanner_pb2.SkippedFile(path=r.path, reason=r.skipped_reason) for r in skipped_files[:SKIPPED_LISTED]
            ],
            commit_days=self._scanner.commit_days.describe() if self._scanner.commit_days is not None else "",
        )


@dataclass
class ScannerApp:
    service: GrpcService
    scanner: IncrementalScanner
    watcher: ChangeWatcher | None
    publisher: ChangePublisher
    context: zmq.Context[zmq.Socket[bytes]]

    def close(self) -> None:
        if self.watcher:
            self.watcher.stop()
        if self.scanner.commit_days is not None:
            self.scanner.commit_days.close()
        self.publisher.close()
        self.context.term()
        self.scanner.manifest.close()


def open_scanner(
    settings: ScannerSettings, on_events: Callable[[list[JournalEntry]], None] | None = None
) -> IncrementalScanner:
    if not settings.vault.is_dir():
        raise SystemExit(f"scanner: vault {settings.vault} is not a folder")
    manifest = open_manifest(settings.data_dir / "scanner" / "manifest.sqlite", settings.journal_keep)
    rules = IgnoreRules(
        frozenset(settings.ignore_folders), tuple(settings.ignore_prefixes), tuple(settings.ignore_suffixes)
    )
    return IncrementalScanner(
        settings.vault,
        manifest,
        rules,
        settings.max_file_bytes,
        on_events,
        settings.tool_excludes,
        settings.commit_days,
        settings.gitignore,
        settings.data_dir / "scanner" / "commit-days.json",
    )


def scan_once(settings: ScannerSettings, force_full: bool = False) -> scanner_pb2.ScanStats:
    """One scan against the manifest with no service running (`k0maru scan` without a stack)."""
    scanner = open_scanner(settings)
    try:
        return to_stats(scanner.scan(force_full=force_full), scanner.manifest.last_seq())
    finally:
        scanner.manifest.close()


def build_server(settings: ScannerSettings) -> ScannerApp:
    """Open the manifest, bind gRPC and ZeroMQ, run the first scan, then go SERVING."""
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    publisher = ChangePublisher(context, settings.events_addr)
    vid = vault_id(settings.vault)

    def publish(entries: list[JournalEntry]) -> None:
        for entry in entries:
            publisher.publish(to_event(entry, vid))

    scanner = open_scanner(settings, publish)
    if scanner.commit_days is not None and (not scanner.manifest.files or scanner.days_owed):
        scanner.commit_days.warm()  # a first start, or days owed: the history is read while the first scan runs
    service = GrpcService(HEALTH_NAMES["scanner"], settings.grpc_addr, token=settings.grpc_token)
    watcher = (
        ChangeWatcher(
            scanner, settings.window_s, settings.window_max_files, settings.rescan_interval_s, on_give_up=service.fail
        )
        if settings.watch
        else None
    )
    scanner_pb2_grpc.add_ScannerServicer_to_server(ScannerServicer(scanner, vid, watcher), service.server)
    return ScannerApp(service, scanner, watcher, publisher, context)


def run(settings: ScannerSettings) -> None:
    app = build_server(settings)
    try:
        with app.service:
            try:
                result = app.scanner.scan()
                log.info(
                    "initial scan: %d added, %d modified, %d deleted, %d unchanged, %d skipped in %.1f ms",
                    result.added,
                    result.modified,
                    result.deleted,
                    result.unchanged,
                    result.skipped,
                    result.ms,
                )
            except CannotWrite as exc:  # serve the manifest as it is; the watcher (or a Scan) records later
                log.error("initial scan: %s; changes are recorded once there is room", exc)
            except VaultUnavailable as exc:  # the same, until the vault's notes are back
                log.error("initial scan: %s", exc)
            if app.watcher:
                app.watcher.start()
            app.service.set_serving(True)
            with contextlib.suppress(KeyboardInterrupt):
                app.service.wait_for_termination()
    finally:
        app.close()
    app.service.exit_if_failed()
