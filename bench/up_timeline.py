"""When each service of a local stack turns SERVING, and the CPU each process used until then.

    nice -n 10 .venv/bin/python bench/up_timeline.py examples/vault /tmp/k0-up [EMBEDDERS] [--search QUERY] [--stop-after S]

Starts the stack in-process with the launcher (console on a free port), polls every service's
health every 20 ms meanwhile, prints seconds to SERVING per service, the launcher's wall time to
all-healthy and each child's CPU seconds (/proc) at that moment, then stops the stack and prints
when each process was gone (SIGTERM in the launcher's order).
`--search QUERY`: also asks the retriever a BM25 search every 50 ms and prints when the first
answer came and how far the index build was at each answer (`index_progress`).
`--stop-after S`: stop S seconds after all healthy (the stop of a stack at rest, its first
embedding done) rather than at once.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import grpc

from k0maru.v1 import retriever_pb2, retriever_pb2_grpc
from k0maru_cli import Launcher
from k0maru_common import health_name, health_state, open_channel

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def main() -> None:
    args = sys.argv[1:]
    query = args.pop(args.index("--search") + 1) if "--search" in args else ""
    idle_s = float(args.pop(args.index("--stop-after") + 1)) if "--stop-after" in args else 0.0
    args = [a for a in args if a not in ("--search", "--stop-after")]
    vault, data = Path(args[0]), Path(args[1])
    launcher = Launcher(vault, data, embedders=int(args[2]) if len(args) > 2 else 1, http_port=0)
    serving: dict[str, float] = {}
    answers: list[tuple[float, int, int]] = []  # seconds, notes indexed, notes in the vault (0, 0: whole)
    done = threading.Event()
    started = time.perf_counter()

    def ask() -> None:
        """BM25 searches against the retriever while it starts: when the first one is answered."""
        while not done.is_set() and "retriever" not in launcher._commands:
            time.sleep(0.01)
        env = launcher._commands["retriever"][1]
        stub = retriever_pb2_grpc.RetrieverStub(open_channel(env["K0_GRPC_ADDR"], env["K0_GRPC_TOKEN"]))
        request = retriever_pb2.SearchRequest(query=query, mode=retriever_pb2.SEARCH_MODE_BM25)
        while not done.is_set():
            try:
                reply = stub.Search(request, timeout=5)
                p = reply.index_progress
                answers.append((round(time.perf_counter() - started, 2), p.notes_indexed, p.notes_total))
            except grpc.RpcError:
                pass
            time.sleep(0.05)

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
    if query:
        threading.Thread(target=ask, daemon=True).start()
    launcher.start()
    wall = time.perf_counter() - started
    done.set()
    cpu = {name: round(cpu_s(proc.pid), 2) for name, proc in launcher.procs}
    print(f"all healthy in {wall:.2f} s; SERVING at {serving}; CPU s {cpu}, total {sum(cpu.values()):.2f}")
    if query:
        building = [a for a in answers if a[2]]
        first = answers[0][0] if answers else None
        steps = sorted({(a[1], a[2]) for a in building})
        print(f"first search answered at {first} s; answers during the build: {len(building)}; progress seen {steps}")
    time.sleep(idle_s)
    procs = list(launcher.procs)
    exited: dict[str, float] = {}
    stopping = time.perf_counter()

    def watch_exits() -> None:
        while len(exited) < len(procs):
            for name, proc in procs:
                if name not in exited and proc.poll() is not None:
                    exited[name] = round(time.perf_counter() - stopping, 3)
            time.sleep(0.002)

    watcher = threading.Thread(target=watch_exits, daemon=True)
    watcher.start()
    launcher.stop()
    watcher.join(5)
    print(f"stopped in {time.perf_counter() - stopping:.2f} s; each process gone after (s) {exited}")


if __name__ == "__main__":
    main()
