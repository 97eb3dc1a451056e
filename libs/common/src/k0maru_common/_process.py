"""Child processes that die with their parent (Linux `PR_SET_PDEATHSIG`), started without fork hooks.

`subprocess.Popen(preexec_fn=...)` forces a plain fork(), which runs every at-fork handler of
the parent; gRPC's handler can block for good when the parent has live channels (seen: a
launcher hung in `_fork_exec`). So instead of preexec_fn, a child is started through a tiny
trampoline (`python -S -c`) that sets the parent-death signal, checks that its parent is
still the one that started it, optionally lowers its priority, and execs the real program.
The signal survives execve, so the real program dies with the launcher too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from typing import NoReturn

_TRAMPOLINE = (
    "import ctypes,os,sys\n"
    "parent,sig,nice=int(sys.argv[1]),int(sys.argv[2]),int(sys.argv[3])\n"
    "if sys.platform.startswith('linux') and ctypes.CDLL(None).prctl(1,sig,0,0,0)!=0: sys.exit('prctl failed')\n"
    "if os.getppid()!=parent: os._exit(1)\n"
    "if nice: os.nice(nice)\n"
    "os.execv(sys.argv[4],sys.argv[4:])\n"
)


def orphan_guard(argv: list[str], nice: int = 0, sig: int = signal.SIGTERM) -> list[str]:
    """`argv` wrapped so that the program receives `sig` when this process dies.

    `argv[0]` must be a path to an executable (as `sys.executable` or a binary path is).
    """
    return [sys.executable, "-S", "-c", _TRAMPOLINE, str(os.getpid()), str(int(sig)), str(nice), *argv]


def release_free_heap() -> None:
    """Hand the C heap's free pages back to the system (glibc `malloc_trim`; nothing elsewhere).

    Loading a model or opening an index frees large temporaries (an onnxruntime session's
    constant folding: 64 of its 167 MB) that glibc otherwise keeps mapped for the process's life.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # musl or another libc without malloc_trim
        return


def stop_signals() -> list[signal.Signals]:
    """The signals that stop a k0maru process gracefully: SIGTERM, SIGINT, and SIGHUP unless it
    was started ignoring SIGHUP (`nohup`), which then stays ignored."""
    hangup = [] if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN else [signal.SIGHUP]
    return [signal.SIGTERM, signal.SIGINT, *hangup]


def exit_without_teardown() -> NoReturn:
    """Exit with status 0 now, skipping the interpreter's teardown, after a service closed
    everything it owns (indexes committed, stores and sockets closed): logs and stdio are flushed,
    then `os._exit`. Freeing a retriever's heap object by object took 60 ms after its last close,
    and the launcher stops the scanner and Valkey only once the retriever is gone; an embedder's
    onnxruntime sessions took about 0.1 s."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed, or its reader gone
            stream.flush()
    os._exit(0)
