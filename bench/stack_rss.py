"""Resident memory of a running stack: `k0maru up` on a vault, all healthy, idle; per process.

VmRSS counts every page a process has mapped, so pages shared between the stack's processes
(the same libpython, grpcio and onnxruntime files, Qdrant Edge's memory-mapped segment files)
count once per process; PSS (`/proc/PID/smaps_rollup`) splits each shared page between its
users, so its sum is what the stack costs the machine. Anonymous = private heap, no files.

Run: .venv/bin/python bench/stack_rss.py VAULT --data-dir DIR [--embedders 2] [--settle 20]
(an eval workdir's `vault` and `data` reuse its index and vectors: W/scifact/vault, W/scifact/data).
Prints two JSON lines: each process of the launcher's tree with its RSS, then its PSS, in MB, and the totals.
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


def memory_mb(pid: int) -> dict[str, float]:
    """Rss, Pss and Anonymous of a process, in MB."""
    wanted = {"Rss:": "rss", "Pss:": "pss", "Anonymous:": "anon"}
    out = dict.fromkeys(wanted.values(), 0.0)
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key = line.split(maxsplit=1)[0] if line else ""
        if key in wanted:
            out[wanted[key]] = round(int(line.split()[1]) / 1024, 1)
    return out


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
        procs = [(name_of(p), memory_mb(p)) for p in tree(up.pid) if p != os.getpid()]
        totals = {f"total_{k}_mb": round(sum(m[k] for _n, m in procs)) for k in ("rss", "pss", "anon")}
        emit("stack_rss", embedders=args.embedders, processes=[(n, m["rss"]) for n, m in procs], **totals)
        emit("stack_pss", processes=[(n, m["pss"]) for n, m in procs])
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(60)


if __name__ == "__main__":
    main()
