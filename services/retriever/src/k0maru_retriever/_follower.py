"""EventFollower: keeps the NoteIndex equal to the scanner's view of the vault.

Start: catch up through the journal from last_applied_seq (when there is one), then
reconcile (the scanner's manifest against the indexed hashes: missing, stale and extra
documents all fixed), then follow the scanner's changes. A ZeroMQ event only says that
there are changes: what changed is read from the journal through Scanner.Changes, which takes
the stack's token. ZeroMQ carries no token, so anyone who reached the events port could send a
"deleted" event, and an event's own path and `seq` emptied the index of that note or, with a
high `seq`, stopped it following the vault; now a forged event costs one Changes call. A quiet
period or a restart also triggers a catch-up; a journal that no longer reaches back far enough,
or another journal than the one the applied seq counts in (OUT_OF_RANGE), triggers a reconcile.
Every step is idempotent.

A reconcile that fetches many notes (a first build, a restart after many edits, a reindex)
commits along the way, one second after it starts and then at doubling intervals (at most
30 s): BM25 answers from the notes indexed so far (`searchable`, `progress`) long before the
whole vault is in, and a retriever killed mid-build resumes after its last commit.

Before each batch of notes is indexed, the disk holding the data folder must have room for it
(three times its text, plus the reserve of `_disk`): a full disk made the writes fail half-way
(SQLite "database or disk is full", tantivy's writer killed) and, five failures later, the
retriever exit, search with it. Now the changes wait (the journal keeps them; `problem` says
why), searches answer from the index as it is, and the follower catches up every ROOM_RETRY_S
until there is room. A restart on a full disk serves the index it has the same way.

The loop runs in a BackgroundWorker: a scanner that cannot be reached is waited for; any
other failure restarts the loop with backoff (catch-up first), and a loop that keeps failing
makes the retriever NOT_SERVING and exit (`on_give_up`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

import grpc
import zmq
from grpc_health.v1 import health_pb2, health_pb2_grpc

from k0maru.v1 import common_pb2, scanner_pb2, scanner_pb2_grpc
from k0maru_common import HEALTH_NAMES, BackgroundWorker, CannotWrite, ChangeSubscriber, WorkerHealth, open_channel

from ._disk import check_room
from ._index import EmbedJob, NoteIndex

log = logging.getLogger(__name__)
FETCH_BATCH = 200
CHANGES_PAGE = 5000
SERVING_POLL_S = 0.05  # how often a starting retriever asks whether the scanner's first scan is done
# the longest interval between a build's commits: a launcher waiting for a long build sees it move
BUILD_COMMIT_MAX_S = 30.0
ROOM_RETRY_S = 5.0  # changes waiting for room on the disk are tried again this often
TEXT_ON_DISK = 3  # a note's text takes up to ~3x its size in the index (BM25 postings, the stored document)


class EventFollower:
    def __init__(
        self,
        index: NoteIndex,
        scanner_addr: str,
        events_addr: str,
        enqueue: Callable[[list[EmbedJob]], None] | None,
        catchup_interval_s: float,
        on_give_up: Callable[[str], None] | None = None,
        token: str = "",
        first_commit_s: float = 1.0,
    ) -> None:
        self._index = index
        self._channel = open_channel(scanner_addr, token)
        self._scanner = scanner_pb2_grpc.ScannerStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self._context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self._subscriber = ChangeSubscriber(self._context, events_addr)
        self._enqueue = enqueue  # None: no embedders, so no embedding jobs are worked out at all
        self._interval = catchup_interval_s
        self.ready = threading.Event()  # the index holds the whole vault as the scanner saw it
        self.searchable = threading.Event()  # BM25 holds notes: set before `ready` during a build
        self.problem = ""  # why changes wait (no room on the disk); "" while they are applied
        self._progress: tuple[int, int] | None = None
        self._first_commit_s = first_commit_s
        # a stop ends the loop's wait for an event at once
        self._worker = BackgroundWorker("follower", self._run, on_give_up, wake=self._subscriber.interrupt)
        self._stop = self._worker.stop_event

    @property
    def progress(self) -> tuple[int, int] | None:
        """(notes BM25 holds in their current version, notes in the vault) while a reconcile is
        under way; None otherwise."""
        return self._progress

    @property
    def last_applied_seq(self) -> int:
        return self._index.state.last_applied_seq

    def start(self) -> None:
        self._worker.start()

    def health(self) -> WorkerHealth:
        return self._worker.health()

    def stop(self) -> None:
        self._worker.stop(timeout_s=10)
        self._subscriber.close()
        self._context.term()
        self._channel.close()

    def _scanner_serving(self) -> bool:
        """The scanner lists the whole vault only once its first scan is done (health SERVING):
        a reconcile against a half-scanned manifest would say "ready" too early."""
        try:
            reply = self._health.Check(health_pb2.HealthCheckRequest(service=HEALTH_NAMES["scanner"]), timeout=2.0)
        except grpc.RpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    def _run(self, stop: threading.Event) -> None:
        behind = False  # changes wait for room on the disk: catch up once there is
        while not stop.is_set():
            if not self._scanner_serving():
                stop.wait(SERVING_POLL_S)
                continue
            try:
                if self.last_applied_seq:
                    self.catch_up()  # exact and cheap while the journal still reaches back
                self.reconcile(enqueue_missing=False)  # then fix anything a crash left behind
                self.problem = ""  # a first build that waited for room is done
                break
            except grpc.RpcError as exc:
                log.warning("scanner not reachable yet (%s); retrying", exc.code())
                self._stop.wait(0.5)
            except CannotWrite as exc:
                self._no_room(exc)
                if self._index.state.docs:  # serve the index it has; catch up once there is room
                    behind = True
                    break
                self._stop.wait(ROOM_RETRY_S)
        self.ready.set()  # BM25 holds every note; the embedding jobs go out after
        self.searchable.set()
        if self._enqueue is not None and not self._stop.is_set():
            self._enqueue(self._index.missing_vectors())
        last_poll = time.monotonic()
        while not self._stop.is_set():
            try:
                if behind:
                    self._stop.wait(ROOM_RETRY_S)
                    self.catch_up()
                    self.reconcile()  # a restart that could not reconcile does it now
                    behind = False
                    self.problem = ""
                    log.info("there is room again: the index caught up")
                event = self._subscriber.receive(200)
                if event is not None:  # a wake-up: the journal says what changed
                    newest, drained = event.seq, 1
                    while drained < CHANGES_PAGE and (more := self._subscriber.receive(0)) is not None:
                        newest, drained = max(newest, more.seq), drained + 1
                    if newest > self.last_applied_seq:
                        self.catch_up()
                        last_poll = time.monotonic()
                elif time.monotonic() - last_poll >= self._interval:
                    self.catch_up()
                    last_poll = time.monotonic()
            except grpc.RpcError as exc:
                log.warning("scanner call failed (%s); will catch up", exc.code())
                self._stop.wait(0.5)
            except CannotWrite as exc:
                self._no_room(exc)
                behind = True

    def _no_room(self, exc: CannotWrite) -> None:
        if not self.problem:
            log.error("%s; changes wait until there is room (searches answer from the index as it is)", exc)
        self.problem = f"{exc}; changes wait until there is room (searches answer from the index as it is)"

    def catch_up(self) -> None:
        """Apply every journal entry after last_applied_seq; reconcile if the journal is too short."""
        while not self._stop.is_set():
            try:
                page = list(
                    self._scanner.Changes(
                        scanner_pb2.ChangesRequest(
                            since_seq=self.last_applied_seq, limit=CHANGES_PAGE, journal_id=self._index.state.journal_id
                        ),
                        timeout=30,
                    )
                )
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.OUT_OF_RANGE:
                    log.info(
                        "the journal no longer holds seq %d (%s); reconciling", self.last_applied_seq, exc.details()
                    )
                    self.reconcile()
                    continue
                raise
            for start in range(0, len(page), FETCH_BATCH * 5):
                self.apply(page[start : start + FETCH_BATCH * 5])
            if len(page) < CHANGES_PAGE:
                return

    def apply(self, events: list[common_pb2.ChangeEvent]) -> None:
        """Apply a contiguous run of events: last state per path wins; documents fetched in batches."""
        final: dict[str, bool] = {}  # path → present after these events
        for event in events:
            if event.kind == common_pb2.CHANGE_KIND_RENAMED:
                final[event.old_path] = False
            final[event.path] = event.kind != common_pb2.CHANGE_KIND_DELETED
        self._sync_paths(
            [p for p, present in final.items() if present], [p for p, present in final.items() if not present]
        )
        self._index.commit(events[-1].seq)

    def reconcile(self, enqueue_missing: bool = True) -> None:
        """Make the index equal to the scanner's manifest. `enqueue_missing=False`: leave the
        chunks without vectors for the caller to enqueue (start-up does it once serving)."""
        status = self._scanner.Status(scanner_pb2.ScannerStatusRequest(), timeout=10)
        manifest = self._manifest()
        indexed = {p: d.hash for p, d in self._index.state.docs.items()}
        if self._index.state.parser_version != status.parser_version:
            log.info(
                "scanner parses with %r (index: %r): re-fetching every note",
                status.parser_version,
                self._index.state.parser_version,
            )
            indexed = {}
        extra = [p for p in self._index.state.docs if p not in manifest]
        stale = [p for p, h in manifest.items() if indexed.get(p) != h]
        total, current = len(manifest), len(manifest) - len(stale)
        if self._index.state.docs:  # what the last run indexed answers meanwhile
            self.searchable.set()
        else:  # a first build: no note was parsed by another parser, so the commits along the
            self._index.state.parser_version = status.parser_version  # way record this one (resumable)
        self._progress = (current, total)
        try:
            checkpoint = self._checkpoint(current, total)
            self._sync_paths(stale, extra, enqueue=False, checkpoint=checkpoint)  # missing_vectors() enqueues
            self._index.state.parser_version = status.parser_version
            # the index now holds the manifest as of this seq of this journal (one made anew since
            # the last run numbers other changes by the seqs the old one had)
            self._index.commit(status.last_seq, status.journal_id)
        finally:
            self._progress = None
        # the stores themselves, not only the bookkeeping, must agree; a BM25 rebuild holds the
        # index's lock for its whole run, so searches fail fast meanwhile instead of waiting on it
        self._index.repair(on_rebuild=self.searchable.clear)
        if self._index.state.docs:
            self.searchable.set()
        if enqueue_missing and self._enqueue is not None:
            self._enqueue(self._index.missing_vectors())
        log.info("reconciled: %d fetched, %d removed, %d documents in the index", len(stale), len(extra), len(manifest))

    def _manifest(self) -> dict[str, str]:
        """path → hash of every indexed note, in pages (one message per note before; a scanner
        without ListDocumentPages still answers ListDocuments)."""
        request = scanner_pb2.ListDocumentsRequest()
        try:
            return {
                e.path: e.hash for page in self._scanner.ListDocumentPages(request, timeout=120) for e in page.entries
            }
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise
        return {e.path: e.hash for e in self._scanner.ListDocuments(request, timeout=120)}

    def _checkpoint(self, current: int, total: int) -> Callable[[int], None]:
        """What a reconcile calls after each fetched batch (with the notes fetched so far): a
        commit when the interval is up (BM25 and the bookkeeping; last_applied_seq moves only at
        the end), after which those notes are searchable and a restart does not fetch them again."""
        last, interval = time.monotonic(), self._first_commit_s

        def after_batch(fetched: int) -> None:
            nonlocal last, interval
            if time.monotonic() - last < interval:
                return
            self._index.commit()
            self._progress = (current + fetched, total)
            self.searchable.set()
            last, interval = time.monotonic(), min(interval * 2, BUILD_COMMIT_MAX_S)

        return after_batch

    def _sync_paths(
        self,
        refresh: Iterable[str],
        remove: Iterable[str],
        enqueue: bool = True,
        checkpoint: Callable[[int], None] | None = None,
    ) -> None:
        """Remove, then fetch and index in batches; the next batch is fetched (and parsed by the
        scanner) while this process indexes the current one. `checkpoint(fetched)` runs after
        each batch."""
        check_room(self._index.state.folder, "changes into the index", 0)
        for path in remove:
            self._index.remove(path)
        paths = list(refresh)
        batches = [paths[s : s + FETCH_BATCH] for s in range(0, len(paths), FETCH_BATCH)]
        jobs: list[EmbedJob] = []
        send = self._enqueue if enqueue else None
        fetched = 0

        def fetch(batch: list[str]) -> scanner_pb2.GetDocumentsResponse:
            reply: scanner_pb2.GetDocumentsResponse = self._scanner.GetDocuments(
                scanner_pb2.GetDocumentsRequest(paths=batch), timeout=60
            )
            return reply

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefetch") as pool:
            upcoming = pool.submit(fetch, batches[0]) if batches else None
            for i in range(len(batches)):
                assert upcoming is not None
                reply = upcoming.result()
                upcoming = pool.submit(fetch, batches[i + 1]) if i + 1 < len(batches) else None
                text = sum(doc.size for doc in reply.documents)
                check_room(self._index.state.folder, "notes into the index", TEXT_ON_DISK * text)
                for doc in reply.documents:  # links filed at the commit that follows, all at once
                    jobs.extend(self._index.apply(doc, want_jobs=send is not None, link_later=True))
                for path in reply.missing:
                    self._index.remove(path)
                fetched += len(batches[i])
                if checkpoint is not None:
                    checkpoint(fetched)
        if jobs and send is not None:  # empty when nothing is sent
            send(jobs)
