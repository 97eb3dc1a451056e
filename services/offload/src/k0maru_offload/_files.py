"""Reading vault files that may be anything: a FIFO, a device or a symlink loop must never block
or fail a call (opening a FIFO for reading waits for a writer, forever). Writing one whole or
not at all."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from k0maru_common import CannotWrite, decode_text, mount_table


def read_text_file(path: Path, limit: int = 200_000) -> str:
    """Up to `limit` bytes of a regular file as text (`decode_text`, what it cannot decode
    replaced); "" for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return decode_text(os.read(fd, limit), "replace") if limit <= 1 << 20 else _read_all(fd, limit)
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
    return decode_text(b"".join(chunks), "replace")


class VaultFolder:
    """The vault folder as the place notes and logs are written into; it is never made.

    `check` before a write: CannotWrite when the vault folder is not there (a drive unmounted with
    its mount point, a renamed folder), or when the folder written into, or one above it in the
    vault, was a mount point when this process looked and is not mounted now (a drive or share
    unmounted from it). A note written into the empty folder left behind would be hidden by the
    drive when it comes back, and would make every note on the drive look deleted to the scanner."""

    def __init__(self, path: Path) -> None:
        self.path = path.resolve()
        self._mounted = self._mounts_inside()  # mount points at the vault or in it, as last seen

    def _mounts_inside(self) -> set[str]:
        root = str(self.path)
        return {m for m, _fs in mount_table() if m == root or m.startswith(root.rstrip("/") + "/")}

    def check(self, what: str, directory: Path | None = None) -> None:
        """`directory`: the folder written into (the vault's own by default)."""
        if not self.path.is_dir():
            raise CannotWrite(
                what, FileNotFoundError(errno.ENOENT, "the vault folder is not there (an unmounted drive?)")
            )
        now = self._mounts_inside()
        target = str(directory.resolve() if directory is not None else self.path)
        for gone in sorted(self._mounted - now):
            if not os.path.isdir(gone):
                self._mounted.discard(gone)  # unmounted for good, its folder removed
            elif target == gone or target.startswith(gone.rstrip("/") + "/"):
                shown = (
                    "the vault folder" if gone == str(self.path) else f"the folder {os.path.relpath(gone, self.path)}"
                )
                unmounted = OSError(
                    errno.ENODEV, f"{shown} was a mount point and is not mounted now (an unmounted drive?)"
                )
                raise CannotWrite(what, unmounted)
        self._mounted |= now


def make_folder(directory: Path) -> None:
    """`directory` and its parents, or CannotWrite (a full disk, a read-only vault)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CannotWrite(f"the folder {directory.name}", exc) from exc


STALE_TEMP_S = 600.0  # a temp file this old is one a killed write left behind (writes take seconds)


def sweep_stale_temps(directory: Path, prefix: str, names: Iterable[str]) -> None:
    """Remove the temp files (`prefix`…) of writes a killed process left in `directory`: nothing
    else removed them, and in a vault kept in git they showed in `git status` (one a 2 MB partial
    log). `names`: the folder's names, as the caller listed them."""
    now = time.time()
    for name in names:
        if name.startswith(prefix):
            path = directory / name
            try:
                if stat.S_ISREG((st := path.lstat()).st_mode) and now - st.st_mtime > STALE_TEMP_S:
                    path.unlink()
            except OSError:
                continue


def replace_atomically(path: Path, text: str, what: str) -> None:
    """`path` holds `text` (written beside it, then renamed over it) or is left as it was, with no
    temp file behind: CannotWrite (`what` names the file for the user) on a full disk or a
    folder that refuses writes."""
    make_folder(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    except OSError as exc:
        raise CannotWrite(what, exc) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())  # renamed whole: never an empty log after a power cut
        os.replace(tmp, path)
    except OSError as exc:
        os.unlink(tmp)
        raise CannotWrite(what, exc) from exc
