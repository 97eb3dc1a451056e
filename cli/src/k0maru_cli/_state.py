"""The state file that finds a vault's running stack (`<data dir>/stack.json`), kept light:
every CLI command reads it, and `k0maru search` is a whole process per call (nothing here loads
grpcio or protobuf until a gRPC client is asked for)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from k0maru_common import default_data_dir

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a whole-process CLI path); mypy knows the name
if TYPE_CHECKING:
    from k0maru_common import StackClient

STATE_FILE = "stack.json"
LOCK_FILE = "stack.lock"
# in a vault's default data dir: the data dir its running stack was started with instead (`up
# --data-dir D`), so that `status`, `stop` and `search` without it find that stack (`stop` said
# "no stack is running", exited 0, and left it running)
ELSEWHERE_FILE = "stack-elsewhere"


def point_to(vault: Path, data_dir: Path) -> None:
    """Leave in `vault`'s default data dir where its stack runs, when that is elsewhere."""
    default = default_data_dir(vault)
    if default.resolve() == data_dir.resolve():
        return
    try:
        default.mkdir(parents=True, exist_ok=True)
        (default / ELSEWHERE_FILE).write_text(str(data_dir.resolve()))
    except OSError:  # a read-only home: `--data-dir` is needed to find it, as before
        return


def unpoint(vault: Path, data_dir: Path) -> None:
    """Take back `point_to`'s note, if it is still this data dir's."""
    note = default_data_dir(vault) / ELSEWHERE_FILE
    try:
        if note.read_text() == str(data_dir.resolve()):
            note.unlink()
            note.parent.rmdir()  # made only for the note (a data dir in use is not empty)
    except OSError:
        return


def pointed_to(vault: Path, *, resolve: bool = True) -> Path | None:
    """The data dir `point_to` left for `vault`, if any."""
    try:
        return Path((default_data_dir(vault, resolve=resolve) / ELSEWHERE_FILE).read_text())
    except (OSError, ValueError):
        return None


def process_start_time(pid: int) -> int | None:
    """When the process started (clock ticks since boot, /proc/<pid>/stat field 22), or None.

    A pid alone does not identify a process: after a crash and a reboot or a long uptime the
    launcher's pid may belong to another program."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def pid_alive(pid: int) -> bool:
    """The process runs: it exists and has not exited (a zombie, an exited process its parent has
    not reaped yet, as under a supervisor or a test's Popen, does not run)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc: kill's answer stands


class StackState:
    """What `stack.json` holds (its keys are these attributes). A plain class, not a dataclass:
    importing dataclasses (with inspect and ast) was a tenth of `k0maru search`."""

    def __init__(
        self,
        vault: str,
        data_dir: str,
        launcher_pid: int,
        addresses: dict[str, str],
        console_url: str,
        pids: dict[str, int] | None = None,
        launcher_started: int = 0,
        grpc_token: str = "",
        console_token: str = "",
    ) -> None:
        self.vault = vault
        self.data_dir = data_dir
        self.launcher_pid = launcher_pid
        self.addresses = addresses
        self.console_url = console_url
        self.pids = pids if pids is not None else {}
        self.launcher_started = launcher_started  # process_start_time(launcher_pid) when the file was written
        self.grpc_token = grpc_token  # the stack's shared gRPC token (the file is readable by its owner only)
        self.console_token = console_token  # K0_CONSOLE_TOKEN the console was started with ("" = none)

    def __repr__(self) -> str:
        return f"StackState(vault={self.vault!r}, launcher_pid={self.launcher_pid}, console_url={self.console_url!r})"

    @classmethod
    def load(cls, data_dir: Path) -> StackState | None:
        """The running stack for this data dir, or None. A stale file (its launcher gone, or its
        pid now another process: a different start time) is ignored."""
        try:
            raw = json.loads((data_dir / STATE_FILE).read_text())
            state = cls(**raw)
        except (OSError, ValueError, TypeError):
            return None
        if not pid_alive(state.launcher_pid):
            return None
        if state.launcher_started and process_start_time(state.launcher_pid) != state.launcher_started:
            return None
        return state

    def write(self) -> None:
        path = Path(self.data_dir) / STATE_FILE
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds the gRPC token
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps(self.__dict__, indent=2))
        os.replace(tmp, path)

    def client(self) -> StackClient:
        """gRPC stubs for this stack, carrying its token."""
        from k0maru_common import StackClient

        return StackClient(self.vault, self.addresses, self.grpc_token)

    def health(self) -> dict[str, str]:
        """Each service's health state, given as long as a container probe gives it."""
        from k0maru_common import PROBE_TIMEOUT_S, health_name, health_state

        return {
            name: health_state(addr, health_name(name), timeout_s=PROBE_TIMEOUT_S)
            for name, addr in self.addresses.items()
            if name != "redis"
        }


def resolve_data_dir(vault: Path, data_dir: Path | None, *, resolve_vault: bool = True) -> Path:
    """--data-dir, else $K0_DATA_DIR, else $XDG_DATA_HOME/k0maru/<vault-id>/ (`resolve_vault=False`:
    the vault's path is taken as resolved, and its file system is not asked)."""
    if data_dir is not None:
        return data_dir.resolve()
    env = os.environ.get("K0_DATA_DIR")
    return Path(env).resolve() if env else default_data_dir(vault, resolve=resolve_vault)
