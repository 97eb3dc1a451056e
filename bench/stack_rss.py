"""Resident memory of a running stack: `k0maru up` on a vault, all healthy, idle; VmRSS per process.

Run: .venv/bin/python bench/stack_rss.py VAULT --data-dir DIR [--embedders 2] [--settle 20]
(an eval workdir's `vault` and `data` reuse its index and vectors: W/scifact/vault, W/scifact/data).
Prints one JSON line: each process of the launcher's tree with its RSS in MB, and the total.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from _common import emit


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def tree(pid: int) -> list[int]:
    """pid and all its descendants (from /proc/*/stat parent ids)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def name_of(pid: int) -> str:
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    module = next((a.decode() for a in argv if a.startswith(b"k0maru_")), None)
    if module is None and b"up" in argv:
        return "launcher"
    return module or Path(argv[0].decode()).name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--embedders", type=int, default=2)
    parser.add_argument("--settle", type=float, default=20.0, help="seconds to wait after all healthy")
    args = parser.parse_args()
    k0maru = str(Path(sys.executable).parent / "k0maru")
    argv = [k0maru, "up", "--vault", str(args.vault), "--data-dir", str(args.data_dir), "--port", "0"]
    up = subprocess.Popen([*argv, "--embedders", str(args.embedders)], stdout=subprocess.PIPE, text=True)
    try:
        assert up.stdout is not None
        for line in up.stdout:
            if "all healthy" in line:
                break
        else:
            raise SystemExit("the stack did not start")
        time.sleep(args.settle)
        procs = [(name_of(p), round(rss_mb(p), 1)) for p in tree(up.pid) if p != os.getpid()]
        emit("stack_rss", embedders=args.embedders, processes=procs, total_mb=round(sum(r for _n, r in procs)))
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(60)


if __name__ == "__main__":
    main()
