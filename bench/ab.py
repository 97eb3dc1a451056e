"""Whole commands side by side: A/B interleaved (the order alternates per round), medians.

    python bench/ab.py 11 before "<main>/.venv/bin/k0maru search QUERY …" after ".venv/bin/k0maru search QUERY …"

Prints, per label, the median and minimum wall seconds and the median CPU seconds (user + system
of the command and the shell that runs it, from RUSAGE_CHILDREN). A failing command stops the run.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time


def main() -> None:
    rounds = int(sys.argv[1])
    commands = list(zip(sys.argv[2::2], sys.argv[3::2], strict=True))
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in commands}
    for i in range(rounds):
        for label, command in commands if i % 2 == 0 else commands[::-1]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(command, shell=True, capture_output=True)
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                raise SystemExit(f"{command} failed ({done.returncode}): {done.stderr[-500:]!r}")
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            samples[label].append((wall, cpu))
    for label, got in samples.items():
        walls, cpus = [w for w, _ in got], [c for _, c in got]
        print(
            f"{label:<12} wall median {statistics.median(walls):.3f} s  min {min(walls):.3f} s  "
            f"cpu median {statistics.median(cpus):.3f} s  (n={len(got)})"
        )


if __name__ == "__main__":
    main()
