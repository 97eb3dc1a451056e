"""The stack behind `k0maru mcp`: MCP answers at once while the stack starts in the background.

Agent hosts time out MCP servers that are slow to initialise, and starting a stack takes
seconds (tens on a busy machine). So `k0maru mcp` serves `initialize` and `tools/list`
immediately; a `StackThread` attaches to the vault's running stack or starts one — or, when
another launcher holds the data dir's lock, waits for that stack — and then supervises it. A
stack whose retriever is still building its index is attached to already (searches answer
from the notes indexed so far, and say so). A
tool called before the stack is up waits a bounded time and then answers which service is still
starting (a NotReady error the MCP layer turns into a tool error).

The thread that starts the children must live as long as they do: PR_SET_PDEATHSIG fires
when the *thread* that forked them exits. So one thread starts, supervises and stops.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from k0maru_common import DependencyFailed, NotReady, StackClient

from ._stack import DataDirLost, Launcher, StackBusy, StartupError, data_dir_held
from ._state import StackState

log = logging.getLogger(__name__)
T = TypeVar("T")
WATCH_S = 0.25  # how often an attached MCP server looks whether the other launcher's stack still runs


class StackThread:
    """Attach to or start the vault's stack in the background, then keep it alive until `stop`."""

    def __init__(self, load_state: Callable[[], StackState | None], make_launcher: Callable[[], Launcher]) -> None:
        self._load_state = load_state
        self._make_launcher = make_launcher
        self._launcher: Launcher | None = None
        self._client: StackClient | None = None
        self._attached: StackState | None = None  # the stack the client is for
        self._swap = threading.Lock()  # the client, `_attached` and `_ready` change together
        self._error: str = ""
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stack", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _attach(self, state: StackState) -> None:
        """Once: when the stack is reachable (during a first index build), or when it is up."""
        with self._swap:
            if self._client is None:
                self._attached = state
                self._client = state.client()
            self._ready.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                state = self._load_state()
                if state is None:
                    launcher = self._make_launcher()
                    launcher.on_reachable = self._attach  # tools answer while a big vault is being indexed
                    self._launcher = launcher
                    try:
                        state = launcher.start()
                    except StackBusy:  # another launcher is starting this stack: use it when it is up
                        self._launcher = None
                        state = self._wait_for_other(launcher.data_dir)
                        if state is None:  # it let go of the data dir with no stack up (it stopped): start one
                            continue
                self._attach(state)
            except StartupError as exc:
                self._error = str(exc)
                if self._client is not None:  # attached during the build of a stack that then failed
                    self._client.close()
                    self._client = None
                self._ready.set()
                return
            if self._launcher is not None:
                self._supervise()
                return
            if not self._watch_other(state):
                return
            # Another MCP server's stack, which it stopped as its agent host closed: a second agent on
            # the vault lost every flush for the rest of its session. Start one (or attach to the
            # one another server starts); calls wait meanwhile, as at the first start.
            log.warning("the stack of another launcher stopped; starting or attaching to one again")
            with self._swap:
                self._ready.clear()
                client, self._client, self._attached = self._client, None, None
            if client is not None:
                client.close()

    def _watch_other(self, state: StackState) -> bool:
        """Wait while the stack another launcher owns runs: True once it has stopped or another
        took its place, False when this thread is asked to stop."""
        while not self._stop.wait(WATCH_S):
            if self._gone(state):
                return True
        return False

    def _gone(self, state: StackState) -> bool:
        """Whether another launcher's stack has stopped, or another stack took its place."""
        now = self._load_state()
        return now is None or now.launcher_pid != state.launcher_pid

    def _wait_for_other(self, data_dir: Path) -> StackState | None:
        """The stack of the launcher that holds `data_dir`, once it is up; None once that launcher
        lets go of it without one (it was stopping: `k0maru stop` removes the stack's state first,
        then waits for its processes, lock held). Only a stack that came up was waited for, 120 s,
        after which every call of this MCP server failed, for the rest of the agent's session."""
        while not self._stop.is_set():
            state = self._load_state()
            if state is not None:
                return state
            if not data_dir_held(data_dir):
                return self._load_state()  # up just before it let go, or gone: None starts one
            self._stop.wait(0.2)
        return None

    def _supervise(self) -> None:
        launcher = self._launcher
        try:
            while launcher is not None and not self._stop.wait(0.5):
                try:  # a child that cannot come back is logged there, retried later, and named by failing()
                    for name in launcher.supervise():
                        log.warning("%s exited and was restarted", name)
                except DataDirLost as exc:  # the stack is stopped (below); tools say why from now on
                    log.error("%s; stopping the stack", exc)
                    self._error = f"{exc}; restart the MCP server to index the vault again"
                    client, self._client = self._client, None
                    if client is not None:
                        client.close()
                    return
                except Exception:  # the supervisor must outlive any one failure
                    log.exception("supervision failed once; continuing")
        finally:
            if launcher is not None:
                launcher.stop()

    def failing(self) -> dict[str, str]:
        """Children of this thread's launcher that are down, waiting for their next try, and why."""
        launcher = self._launcher
        return dict(launcher.failing) if launcher is not None else {}

    def starting(self) -> str:
        launcher = self._launcher
        return launcher.starting if launcher is not None else "another launcher's stack"

    def client(self, wait_s: float) -> StackClient:
        """The running stack's client; NotReady after `wait_s` if it is still starting. Attached to
        another launcher's stack that has stopped: the one this thread starts (or attaches to) in
        its place, so that a call right after the stop does not fail on the old addresses."""
        attached = self._attached
        if self._launcher is None and attached is not None and self._ready.is_set() and self._gone(attached):
            with self._swap:
                if self._attached is attached:  # not replaced meanwhile
                    self._ready.clear()  # `_run` starts or attaches again within WATCH_S and sets it
        if not self._ready.wait(wait_s):
            raise NotReady(f"the k0maru stack is still starting (waiting for {self.starting()}); try again shortly")
        if self._client is None:
            raise DependencyFailed(f"the k0maru stack is not running: {self._error}")
        return self._client

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        launcher = self._launcher
        if launcher is not None:  # still starting (a long first build): give up, stop what started
            launcher.abort()
        self._thread.join(timeout_s)
        if self._client is not None:
            self._client.close()


class DeferredStackClient(StackClient):
    """A StackClient whose stubs exist once the stack is up; until then calls wait (bounded)."""

    def __init__(self, vault: str, stack: StackThread, wait_s: float = 30.0) -> None:  # no channels yet
        self.vault = vault
        self.addresses = {}
        self._stack = stack
        self._wait_s = wait_s

    def __getattr__(self, name: str) -> Any:  # scanner, retriever, offload, embedder stubs
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._stack.client(self._wait_s), name)

    def call(self, method: Callable[..., T], request: Any, timeout: float = 30.0) -> T:
        try:
            return self._stack.client(self._wait_s).call(method, request, timeout)
        except DependencyFailed as exc:  # a service that is down: the agent learns why, not just "unavailable"
            down = "; ".join(f"{name} is down: {why}" for name, why in self._stack.failing().items())
            if not down:
                raise
            raise DependencyFailed(f"{exc} ({down})") from exc

    def close(self) -> None:
        """The StackThread owns the real client."""
