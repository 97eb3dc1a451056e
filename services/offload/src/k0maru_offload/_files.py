"""Reading vault files that may be anything: a FIFO, a device or a symlink loop must never block
or fail a call (opening a FIFO for reading waits for a writer, forever). Writing one whole or
not at all."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

from k0maru_common import CannotWrite, decode_text


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

    `check` before a write: CannotWrite when the folder is not there (a drive unmounted with its
    mount point, a renamed folder), or when it is empty now and on another filesystem than the
    one it held files on when last looked at (a drive unmounted from it). A note written into
    the folder left behind would be hidden by the drive when it comes back, and would make every
    note on the drive look deleted to the scanner. An empty folder this process never saw files
    in is a new vault, and written into."""

    def __init__(self, path: Path) -> None:
        self.path = path.resolve()
        self._device: int | None = None  # of the filesystem the folder last held files on
        with contextlib.suppress(OSError):
            self._look()

    def _look(self) -> os.stat_result:
        st = os.stat(self.path)
        with os.scandir(self.path) as entries:
            if next(entries, None) is not None:
                self._device = st.st_dev
        return st

    def check(self, what: str) -> None:
        try:
            st = self._look()
        except FileNotFoundError as exc:
            gone = FileNotFoundError(errno.ENOENT, "the vault folder is not there (an unmounted drive?)")
            raise CannotWrite(what, gone) from exc
        except OSError as exc:
            raise CannotWrite(what, exc) from exc
        if self._device is not None and st.st_dev != self._device:
            empty = OSError(
                errno.ENODEV, "the vault folder is empty, on another filesystem than it was (an unmounted drive?)"
            )
            raise CannotWrite(what, empty)


def make_folder(directory: Path) -> None:
    """`directory` and its parents, or CannotWrite (a full disk, a read-only vault)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CannotWrite(f"the folder {directory.name}", exc) from exc


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
        os.replace(tmp, path)
    except OSError as exc:
        os.unlink(tmp)
        raise CannotWrite(what, exc) from exc
