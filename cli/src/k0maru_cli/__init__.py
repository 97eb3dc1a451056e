"""k0maru-cli: the `k0maru` command, the launcher of a local stack, and `k0maru eval`.

Public API for tests and benchmarks: `Launcher` (start/stop/restart a stack as child processes),
`StackState` (find a running stack), `free_port`, `valkey_argv`, `wait_for_redis`.
"""

from ._stack import Launcher, StackState, StartupError, free_port, resolve_data_dir, valkey_argv, wait_for_redis

__all__ = ["Launcher", "StackState", "StartupError", "free_port", "resolve_data_dir", "valkey_argv", "wait_for_redis"]
