"""Reading vault files that may be anything: a FIFO, a device or a symlink loop must never block
or fail a call (opening a FIFO for reading waits for a writer, forever)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def read_text_file(path: Path, limit: int = 200_000) -> str:
    """Up to `limit` bytes of a regular file as text (invalid UTF-8 replaced); "" for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return os.read(fd, limit).decode("utf-8", "replace") if limit <= 1 << 20 else _read_all(fd, limit)
    except OSError:
        return ""
    finally:
        os.close(fd)


def _read_all(fd: int, limit: int) -> str:
    chunks: list[bytes] = []
    left = limit
    while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks).decode("utf-8", "replace")
