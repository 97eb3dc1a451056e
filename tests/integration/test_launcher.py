"""The launcher: a Valkey crash is survived, one launcher per data dir, stale state files."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis

from k0maru.v1 import offload_pb2, retriever_pb2
from k0maru_cli import DataDirLost, Launcher, StackBusy, StackState, StartupError
from k0maru_cli._state import process_start_time
from k0maru_common import K0Error, StackClient
from tests.conftest import write_notes

pytestmark = pytest.mark.integration
LOG = "\n".join(f"line {i}: compiling crate_{i}" for i in range(200)) + "\nerror[E0502]: cannot borrow\n"


def bm25_paths(client: StackClient, query: str) -> list[str]:
    request = retriever_pb2.SearchRequest(query=query, mode=retriever_pb2.SEARCH_MODE_BM25)
    return [h.path for h in client.call(client.retriever.Search, request).hits]


def test_kill_9_of_valkey_is_survived_and_loses_no_ledger_entry(vault: Path, tmp_path: Path):
    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n"})
    launcher = Launcher(vault, tmp_path / "data", embedders=0, http_port=0)
    state = launcher.start()
    client = state.client()
    try:
        reply = client.call(client.offload.OffloadLog, offload_pb2.OffloadLogRequest(text=LOG, task_id="before"))
        assert reply.offloaded
        # WAITAOF: returns once the write is fsynced to the append-only file (no sleeping on a clock)
        r = redis.Redis.from_url(state.addresses["redis"])
        assert r.execute_command("WAITAOF", 1, 0, 10000)[0] == 1
        r.close()
        old = state.pids["valkey"]
        os.kill(old, signal.SIGKILL)
        deadline = time.monotonic() + 60
        restarted: list[str] = []
        while "valkey" not in restarted and time.monotonic() < deadline:
            restarted += launcher.supervise()
            time.sleep(0.1)
        assert restarted == ["valkey"] and launcher.state is not None and launcher.state.pids["valkey"] != old
        assert set(launcher.state.health().values()) == {"SERVING"}
        stats = client.call(client.offload.TokenStats, offload_pb2.TokenStatsRequest())
        assert stats.offloads >= 1, "the token ledger was lost with Valkey"
        assert bm25_paths(client, "lighthouses") == ["a.md"]
        # the stack's services answer only callers with its per-stack token (kept in stack.json, mode 0600)
        assert (tmp_path / "data" / "stack.json").stat().st_mode & 0o077 == 0
        with StackClient(state.vault, state.addresses, token="") as stranger, pytest.raises(K0Error) as refused:
            stranger.call(stranger.retriever.Reindex, retriever_pb2.ReindexRequest())
        assert "token" in str(refused.value)
    finally:
        client.close()
        launcher.stop()


def test_an_mcp_server_that_met_a_stopping_stack_starts_its_own_once_the_lock_is_let_go(vault: Path, tmp_path: Path):
    """`k0maru stop` removes the stack's state first and keeps the data dir's lock until its
    processes exit. An MCP server attached to that stack tried to start its own meanwhile, was
    refused (busy), and waited 120 s for a stack nobody was starting; then every call of that
    server failed for the rest of the agent's session, even once the stack was up again."""
    from k0maru_cli._mcp_stack import StackThread

    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n"})
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    stack = StackThread(lambda: StackState.load(data_dir), lambda: Launcher(vault, data_dir, embedders=0, http_port=0))
    with open(data_dir / "stack.lock", "w") as lock:  # a launcher stopping its stack: no state, the lock held
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        stack.start()
        with pytest.raises(K0Error, match="still starting"):
            stack.client(1.0)
    try:  # let go: this server starts a stack of its own
        client = stack.client(90.0)
        assert bm25_paths(client, "lighthouses") == ["a.md"]
    finally:
        stack.stop()
    assert not (data_dir / "stack.json").exists()


def test_second_launcher_on_a_data_dir_is_refused_before_starting_anything(vault: Path, tmp_path: Path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with open(data_dir / "stack.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        launcher = Launcher(vault, data_dir, embedders=0, http_port=0)
        with pytest.raises(StackBusy):
            launcher.start()
        assert launcher.procs == []


def test_a_state_file_naming_another_process_is_stale(vault: Path, tmp_path: Path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = process_start_time(other.pid)
        assert started is not None
        state = {
            "vault": str(vault),
            "data_dir": str(data_dir),
            "launcher_pid": other.pid,
            "addresses": {},
            "console_url": "",
            "pids": {},
            "launcher_started": started,
        }
        (data_dir / "stack.json").write_text(json.dumps(state))
        assert StackState.load(data_dir) is not None  # same pid, same start time: that launcher
        (data_dir / "stack.json").write_text(json.dumps({**state, "launcher_started": started - 1}))
        assert StackState.load(data_dir) is None  # the pid was reused by another process
    finally:
        other.kill()
        other.wait()


def _big_vault(vault: Path, notes: int = 6000) -> None:
    for i in range(notes):
        (vault / f"n{i:04d}.md").write_text(f"# Note {i}\n\nshared words and uniq{i:04d}\n")


def _start_in_thread(launcher: Launcher) -> tuple[list[BaseException], threading.Thread, threading.Event]:
    """`launcher.start()` in a thread (as `k0maru mcp` runs it); the event is set once the stack is
    reachable while the retriever still builds its index."""
    failures: list[BaseException] = []
    reachable = threading.Event()
    launcher.on_reachable = lambda _state: reachable.set()

    def run() -> None:
        try:
            launcher.start()
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return failures, thread, reachable


@pytest.mark.parametrize("how", ["abort", "sigterm"])
def test_a_start_stopped_during_the_first_build_gives_up_and_restarts_nothing(vault: Path, tmp_path: Path, how: str):
    """An agent quitting during a big vault's first build: the launcher, still waiting for the
    retriever, is aborted (`k0maru mcp`'s stop) or sees its children terminated from outside (the
    SDK ends the server's process group); either way it stops everything and starts nothing again."""
    _big_vault(vault)
    launcher = Launcher(
        vault,
        tmp_path / "data",
        embedders=0,
        http_port=0,
        extra_env={"K0_BUILD_COMMIT_S": "0"},
        reachable_after_s=0.05,  # told at once, while the build runs
    )
    failures, thread, reachable = _start_in_thread(launcher)
    told = launcher.on_reachable
    assert told is not None

    def freeze_the_build(state: StackState) -> None:  # so the build cannot finish before the stop below
        os.kill(state.pids["retriever"], signal.SIGSTOP)
        told(state)

    launcher.on_reachable = freeze_the_build
    try:
        assert reachable.wait(120), failures
        procs = dict(launcher.procs)
        spawn, spawned_after = launcher._spawn, []
        launcher._spawn = lambda name, *a, **k: spawned_after.append(name) or spawn(name, *a, **k)  # type: ignore[method-assign]
        if how == "abort":
            launcher.abort()
        else:
            os.kill(procs["scanner"].pid, signal.SIGTERM)
            procs["scanner"].wait(30)
        os.kill(procs["retriever"].pid, signal.SIGCONT)
        thread.join(60)
        assert not thread.is_alive()
        (failure,) = failures
        assert isinstance(failure, StartupError)
        assert ("stopped while starting" if how == "abort" else "scanner was stopped") in str(failure)
        assert spawned_after == []  # nothing started again
        assert all(proc.poll() is not None for proc in procs.values())  # and everything stopped
        assert not (tmp_path / "data" / "stack.json").exists()
    finally:  # whatever failed above, leave no processes behind for the next test
        launcher.abort()
        thread.join(60)
        launcher.stop()


def _stop_each(procs: list[tuple[str, subprocess.Popen[bytes]]], sig: int) -> dict[str, int | str]:
    """`sig` to each process in the launcher's stop order (reversed); each one's exit code, or
    "ignored" (then it is killed) when it has not exited 30 s later."""
    codes: dict[str, int | str] = {}
    for name, proc in reversed(procs):
        proc.send_signal(sig)
        try:
            codes[name] = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            codes[name] = "ignored"
            proc.kill()
    return codes


def test_a_stack_suspended_and_resumed_still_stops_gracefully(vault: Path, tmp_path: Path):
    """Ctrl+Z then `fg` in the terminal running `k0maru up` stops and continues every process
    (SIGSTOP, SIGCONT); afterwards each service must still stop by itself on SIGTERM, exit code 0.
    (The gateway used to die by the SIGTERM that uvicorn raises again after its own shutdown,
    with its gRPC server and clients never closed; the hang of a continued process is tested on
    an embedder in test_embedder.py.)"""
    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n"})
    launcher = Launcher(vault, tmp_path / "data", embedders=1, http_port=0)
    launcher.start()
    try:
        procs = list(launcher.procs)
        for _name, proc in procs:
            os.kill(proc.pid, signal.SIGSTOP)
        for _name, proc in procs:
            os.kill(proc.pid, signal.SIGCONT)
        assert _stop_each(procs, signal.SIGTERM) == {name: 0 for name, _proc in procs}
    finally:
        launcher.stop()


@pytest.mark.parametrize("nohup", [False, True])
def test_closing_the_terminal_stops_the_stack_gracefully_unless_nohup(vault: Path, tmp_path: Path, nohup: bool):
    """Closing the terminal that runs `k0maru up` sends SIGHUP to its process group: every process
    used to die where it stood (stack.json left behind). Now it is a graceful stop; under `nohup`
    (SIGHUP ignored) the stack keeps running."""
    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n"})
    data = tmp_path / "data"
    argv = [sys.executable, "-m", "k0maru_cli", "up", "--vault", str(vault), "--data-dir", str(data), "--port", "0"]
    out = open(tmp_path / "up.log", "wb")  # noqa: SIM115 - the child writes it until it exits
    up = subprocess.Popen(
        ["nohup", *argv] if nohup else argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while b"all healthy" not in (tmp_path / "up.log").read_bytes():
            assert up.poll() is None and time.monotonic() < deadline, (tmp_path / "up.log").read_text()
            time.sleep(0.2)
        state = StackState.load(data)
        assert state is not None
        os.killpg(up.pid, signal.SIGHUP)
        if nohup:
            time.sleep(2)
            assert up.poll() is None and set(state.health().values()) == {"SERVING"}
            up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=60) == 0
        assert not (data / "stack.json").exists()
        for name in state.pids:
            if name != "valkey":
                assert " stopped" in (data / "logs" / f"{name}.log").read_text(), name
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
        out.close()


def test_a_data_dir_that_cannot_be_used_is_said_in_one_line(vault: Path, tmp_path: Path):
    """A data dir that is a file (or read-only, or not permitted): `k0maru up` used to end in an
    OSError traceback; now one line says which folder and why, exit code 1."""
    write_notes(vault, {"a.md": "# Alpha\n"})
    taken = tmp_path / "data"
    taken.write_text("not a folder")
    done = subprocess.run(
        [sys.executable, "-m", "k0maru_cli", "up", "--vault", str(vault), "--data-dir", str(taken), "--port", "0"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"cannot use the data dir {taken}" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert taken.read_text() == "not a folder"


def test_a_second_vault_gets_the_next_console_port_and_an_asked_port_in_use_is_refused(vault: Path, tmp_path: Path):
    """Another vault's stack holds the console's default port 7878 (here: a socket of the test's,
    unless something else already does): `k0maru up` takes the next free port instead of failing
    to start its gateway; a port asked for with --port that is taken is refused in one line."""
    write_notes(vault, {"a.md": "# Alpha\n"})
    holder = socket.socket()
    with contextlib.suppress(OSError):  # already taken by something else: just as good
        holder.bind(("127.0.0.1", 7878))
        holder.listen()
    try:
        base = [sys.executable, "-m", "k0maru_cli", "up", "--vault", str(vault), "--data-dir", str(tmp_path / "data")]
        refused = subprocess.run([*base, "--port", "7878"], capture_output=True, text=True, timeout=120)
        assert refused.returncode == 1 and "the console port 7878 is in use" in refused.stderr, refused.stderr
        out = open(tmp_path / "up.log", "wb")  # noqa: SIM115 - the child writes it until it exits
        up = subprocess.Popen(base, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while b"all healthy" not in (log := (tmp_path / "up.log").read_bytes()):
                assert up.poll() is None and time.monotonic() < deadline, log.decode()
                time.sleep(0.2)
            state = StackState.load(tmp_path / "data")
            assert state is not None and ":7878/" not in state.console_url
            assert f"console {state.console_url}" in (tmp_path / "up.log").read_text()
            up.send_signal(signal.SIGTERM)
            assert up.wait(timeout=60) == 0
        finally:
            if up.poll() is None:
                up.kill()
            out.close()
    finally:
        holder.close()


def test_each_service_stops_gracefully_on_sighup_alone(vault: Path, tmp_path: Path):
    """SIGHUP to one service, not through the launcher (a service run by hand in a terminal that
    closes): it stops gracefully, exit code 0. The gateway used to go on serving: uvicorn takes
    SIGINT and SIGTERM only."""
    write_notes(vault, {"a.md": "# Alpha\n"})
    launcher = Launcher(vault, tmp_path / "data", embedders=0, http_port=0)
    launcher.start()
    try:
        services = [(name, proc) for name, proc in launcher.procs if name != "valkey"]  # Valkey ignores SIGHUP
        assert _stop_each(services, signal.SIGHUP) == {name: 0 for name, _proc in services}
    finally:
        launcher.stop()


def test_a_stop_leaves_every_store_closed_and_a_restart_rebuilds_nothing(vault: Path, tmp_path: Path):
    """The services leave without the interpreter's teardown once they closed what they own, and
    Valkey is told SHUTDOWN: what each wrote must still be there, whole, at the next start."""
    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n", "b.md": "# Beta\n\n[[a]]\n"})
    data = tmp_path / "data"
    for start in (1, 2):
        launcher = Launcher(vault, data, embedders=0, http_port=0)
        state = launcher.start()
        procs = list(launcher.procs)
        client = state.client()
        try:
            if start == 1:
                reply = client.call(client.offload.OffloadLog, offload_pb2.OffloadLogRequest(text=LOG, task_id="t"))
                assert reply.offloaded
            else:
                assert client.call(client.offload.TokenStats, offload_pb2.TokenStatsRequest()).offloads == 1
                assert bm25_paths(client, "lighthouses") == ["a.md"]
        finally:
            client.close()
            launcher.stop()
        assert {name: proc.returncode for name, proc in procs} == {name: 0 for name, _proc in procs}
        logs = {name: (data / "logs" / f"{name}.log").read_text() for name in state.pids}
        assert logs["valkey"].count("DB saved on disk") == start
        for name in ("scanner", "retriever", "offload", "gateway"):
            assert logs[name].count(" stopped") == start, name
    # the second start found the index as the first left it: nothing fetched again
    assert logs["retriever"].count("re-fetching every note") == 1


def test_the_gateway_stops_cleanly_with_a_console_page_open(vault: Path, tmp_path: Path):
    """A console page holds `/api/events` open (server-sent events): a stop takes uvicorn's own
    graceful close then (its wait is skipped only when nothing is open), and the gateway exits 0."""
    write_notes(vault, {"a.md": "# Alpha\n"})
    data = tmp_path / "data"
    launcher = Launcher(vault, data, embedders=0, http_port=0)
    state = launcher.start()
    procs = dict(launcher.procs)
    url = urlsplit(state.console_url)
    page = socket.create_connection((url.hostname, url.port), timeout=30)
    try:
        page.sendall(f"GET /api/events HTTP/1.1\r\nHost: {url.netloc}\r\nAccept: text/event-stream\r\n\r\n".encode())
        assert page.recv(4096).startswith(b"HTTP/1.1 200")  # the stream is open
        launcher.stop()
    finally:
        page.close()
        launcher.stop()
    assert procs["gateway"].returncode == 0
    assert " stopped" in (data / "logs" / "gateway.log").read_text()


def test_a_data_dir_deleted_under_a_running_stack_stops_it_and_valkey_is_not_left_refusing_to_exit(
    vault: Path, tmp_path: Path
):
    """`rm -rf` of the data dir (a user resetting the index) while the stack runs: the services
    would go on over deleted files, `k0maru stop` could no longer find the stack (stack.json went
    with the folder) and a second `up` would start a second stack beside it. The supervisor says
    so and the stack stops; Valkey, which can no longer save, is told SHUTDOWN NOSAVE (it refuses
    SHUTDOWN and SIGTERM when its save fails, and was SIGKILLed after the stop's grace)."""
    write_notes(vault, {"a.md": "# Alpha\n\nthe alpha note about lighthouses\n"})
    data = tmp_path / "data"
    launcher = Launcher(vault, data, embedders=0, http_port=0)
    launcher.start()
    procs = list(launcher.procs)
    try:
        assert launcher.supervise() == [] and launcher.data_dir_lost() == ""
        shutil.rmtree(data)
        with pytest.raises(DataDirLost, match="was deleted while the stack ran"):
            launcher.supervise()
    finally:
        launcher.stop()
    codes = {name: proc.returncode for name, proc in procs}
    assert codes == {name: 0 for name, _proc in procs}, codes  # Valkey too: not SIGKILLed (-9)
    assert not (data / "stack.json").exists()


def test_a_data_dir_replaced_by_another_is_lost_too(vault: Path, tmp_path: Path):
    """A folder moved aside and a new one put in its place: the lock this launcher holds is not
    the one at the path any more."""
    write_notes(vault, {"a.md": "# Alpha\n"})
    data = tmp_path / "data"
    launcher = Launcher(vault, data, embedders=0, http_port=0)
    launcher.start()
    try:
        data.rename(tmp_path / "aside")
        (data / "logs").mkdir(parents=True)
        (data / "stack.lock").write_text("")
        assert "was deleted while the stack ran" in launcher.data_dir_lost()
    finally:
        launcher.stop()
