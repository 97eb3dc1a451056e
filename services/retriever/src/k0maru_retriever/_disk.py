"""Room on the data dir's disk, checked before the vector store writes.

Qdrant Edge writes its files through memory maps: on a full disk a write is a SIGBUS that kills
the retriever, not an error. So a write goes ahead only with room to spare: a point takes
~3.7 KB (384 floats, payload, payload indexes, WAL; measured on a tmpfs), counted 4x here, plus
a reserve for files that grow by more than one point at a time.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from k0maru_common import CannotWrite

DISK_RESERVE_BYTES = 16 << 20
BYTES_PER_POINT = 16 << 10


def check_room(directory: Path, what: str, need_bytes: int) -> None:
    """CannotWrite (RESOURCE_EXHAUSTED) unless `directory`'s disk has `need_bytes` and the reserve
    free. Pass a folder that always exists: the vector store's own is renamed away for a moment
    at each HNSW swap (checked outside its lock, that was a FileNotFoundError)."""
    free = shutil.disk_usage(directory).free
    if free < DISK_RESERVE_BYTES + need_bytes:
        raise CannotWrite(f"{what} ({free >> 20} MB free)", OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))


def copy_tree_sparse(src: Path, dst: Path) -> None:
    """shutil.copytree, keeping each file's holes: Qdrant Edge preallocates its memory-mapped
    files (32 MB pages, WAL segments) and writes a little of each, and a plain copy writes every
    hole out as zeros (a store of 300 points: 11 MB on disk, 159 MB copied). So the copy takes
    what `size_of` counts, no more."""
    shutil.copytree(src, dst, copy_function=_copy_sparse)


def _copy_sparse(src: str, dst: str) -> None:
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        size = os.fstat(fin.fileno()).st_size
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fin.fileno(), pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:
                    break  # a hole up to the end
                raise
            end = os.lseek(fin.fileno(), start, os.SEEK_HOLE)
            while start < end:
                block = os.pread(fin.fileno(), min(end - start, 1 << 20), start)
                if not block:
                    break  # shrunk meanwhile
                os.pwrite(fout.fileno(), block, start)
                start += len(block)
            pos = end
        fout.truncate(size)
    shutil.copystat(src, dst)


def size_of(folder: Path) -> int:
    """Bytes the files under `folder` take on disk (allocated blocks: sparse files count what they hold)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue  # gone meanwhile
    return total
