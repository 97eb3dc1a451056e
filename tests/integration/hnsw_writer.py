"""A process that writes into an Edge store with background HNSW builds until it is killed.

Run: python hnsw_writer.py SHARD_DIR LOG. Each write is logged as `begin <op> <id> <version>`
before the call and `end` after it returns; `built <n>` when the n-th index was swapped in.
`vector_of(id, version)` gives the vector a write stored, so the log says what the store must hold.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from k0maru_retriever._vectors import EdgeVectorStore, VectorPoint

DIM = 16
MIN_POINTS = int(os.environ.get("HNSW_WRITER_MIN_POINTS", "120"))


def vector_of(pid: int, version: int) -> np.ndarray:
    return np.random.default_rng(pid * 1000 + version).standard_normal(DIM).astype(np.float32)


def point(pid: int, version: int) -> VectorPoint:
    return VectorPoint(f"n{pid}.md#0", f"h{version}", f"n{pid}.md", "Root", [], vector_of(pid, version))


def main(shard_dir: str, log_path: str) -> None:
    store = EdgeVectorStore(Path(shard_dir), DIM, hnsw_min_points=MIN_POINTS)
    rng = np.random.default_rng()
    versions: dict[int, int] = {}
    built, building = 0, False
    with open(log_path, "a", encoding="utf-8", buffering=1) as log:
        log.write("start\n")
        lines = Path(log_path).read_text().splitlines()
        next_id = max((int(line.split()[2]) for line in lines if line.startswith("begin")), default=-1) + 1
        while True:
            roll = rng.random()
            if roll < 0.6 or not versions:  # new points
                batch = list(range(next_id, next_id + 20))
                next_id += 20
                for pid in batch:
                    versions[pid] = 0
                log.write("".join(f"begin u {pid} 0\n" for pid in batch))
                store.upsert([point(pid, 0) for pid in batch])
            elif roll < 0.85:  # a stored point gets a new vector
                pid = int(rng.choice(list(versions)))
                versions[pid] += 1
                log.write(f"begin u {pid} {versions[pid]}\n")
                store.upsert([point(pid, versions[pid])])
            else:
                pid = int(rng.choice(list(versions)))
                del versions[pid]
                log.write(f"begin d {pid} 0\n")
                store.delete([f"n{pid}.md#0"])
            log.write("end\n")
            time.sleep(0.01)
            if store.hnsw_building != building:
                building = store.hnsw_building
                log.write(f"building {building}\n")
            if store.hnsw_builds > built:
                built = store.hnsw_builds
                log.write(f"built {built}\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
