"""When each service of a local stack turns SERVING, and the CPU each process used until then.

    nice -n 10 .venv/bin/python bench/up_timeline.py examples/vault /tmp/k0-up [EMBEDDERS]

Starts the stack in-process with the launcher (console on a free port), polls every service's
health every 20 ms meanwhile, prints seconds to SERVING per service, the launcher's wall time to
all-healthy and each child's CPU seconds (/proc) at that moment, then stops the stack.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from k0maru_cli import Launcher
from k0maru_common import health_name, health_state

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def main() -> None:
    vault, data = Path(sys.argv[1]), Path(sys.argv[2])
    launcher = Launcher(vault, data, embedders=int(sys.argv[3]) if len(sys.argv) > 3 else 1, http_port=0)
    serving: dict[str, float] = {}
    done = threading.Event()
    started = time.perf_counter()

    def poll() -> None:
        while not done.is_set():
            for name, (_argv, env, _nice) in list(launcher._commands.items()):
                address = env.get("K0_GRPC_ADDR")
                if name in serving or not address:
                    continue
                if health_state(address, health_name(name), 0.2) == "SERVING":
                    serving[name] = round(time.perf_counter() - started, 2)
            time.sleep(0.02)

    threading.Thread(target=poll, daemon=True).start()
    launcher.start()
    wall = time.perf_counter() - started
    done.set()
    cpu = {name: round(cpu_s(proc.pid), 2) for name, proc in launcher.procs}
    print(f"all healthy in {wall:.2f} s; SERVING at {serving}; CPU s {cpu}, total {sum(cpu.values()):.2f}")
    launcher.stop()


if __name__ == "__main__":
    main()
