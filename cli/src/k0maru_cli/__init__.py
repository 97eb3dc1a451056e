"""k0maru-cli: the `k0maru` command, the launcher of a local stack, and `k0maru eval`.

Public API for tests and benchmarks: `Launcher` (start/stop/restart a stack as child processes),
`StackState` (find a running stack), `StartupError`, `StackBusy`, `DataDirLost`, `free_port`, `valkey_argv`,
`wait_for_redis`, `resolve_data_dir`. Imported on first use: `k0maru search` must not load the
launcher's dependencies.
"""

from __future__ import annotations

from k0maru_common import lazy_exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a whole-process CLI path); mypy knows the name
if TYPE_CHECKING:
    from ._stack import DataDirLost, Launcher, StackBusy, StartupError, free_port, valkey_argv, wait_for_redis
    from ._state import StackState, resolve_data_dir

_WHERE = {
    "DataDirLost": "._stack",
    "Launcher": "._stack",
    "StackBusy": "._stack",
    "StartupError": "._stack",
    "free_port": "._stack",
    "valkey_argv": "._stack",
    "wait_for_redis": "._stack",
    "StackState": "._state",
    "resolve_data_dir": "._state",
}


__getattr__ = lazy_exports(__name__, _WHERE, globals())


__all__ = [
    "DataDirLost",
    "Launcher",
    "StackBusy",
    "StackState",
    "StartupError",
    "free_port",
    "resolve_data_dir",
    "valkey_argv",
    "wait_for_redis",
]
