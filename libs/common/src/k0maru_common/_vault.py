"""Vault identity and path confinement, shared by everything that touches vault paths."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

import xxhash

from ._errors import OutsideVault


def default_data_root() -> Path:
    """`$XDG_DATA_HOME/k0maru`, falling back to `~/.local/share/k0maru`."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "k0maru"


def vault_id(vault: Path) -> str:
    """A stable id for a vault: its folder name plus a hash of its resolved path."""
    resolved = vault.resolve()
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", resolved.name).strip("-") or "vault"
    return f"{name[:32]}-{xxhash.xxh3_64_hexdigest(str(resolved).encode())[:10]}"


def default_data_dir(vault: Path) -> Path:
    """Where a vault's indexes live by default: outside the vault, per vault."""
    return default_data_root() / vault_id(vault)


def confine(vault: Path, relative: str) -> Path:
    """Resolve a vault-relative path and refuse anything that lands outside the vault.

    Absolute paths, `..` segments and symlinks that point out are all refused with
    OutsideVault, and so is a path through a symlink loop. The returned path is absolute and
    may not exist yet.

    `/` separates folders. A backslash is an ordinary character of a file name here (POSIX):
    `a\\b.md` is one file, as the scanner lists it. A path that would escape if its backslashes
    were read as separators (`..\\x`, `C:\\x`) is refused all the same.
    """
    if not relative or "\x00" in relative:
        raise OutsideVault(f"invalid vault path {relative!r}")
    pure = PurePosixPath(relative)
    as_windows = PurePosixPath(relative.replace("\\", "/"))
    if (
        any(p.is_absolute() or ".." in p.parts for p in (pure, as_windows))
        or re.match(r"^[A-Za-z]:", relative)
        or len(relative.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES
    ):
        raise OutsideVault(f"path {_shown(relative)} escapes the vault or is not a vault path")
    root = vault.resolve()
    try:
        target = (root / pure).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
        raise OutsideVault(f"path {_shown(relative)} cannot be resolved: {exc}") from exc
    if target != root and root not in target.parents:
        raise OutsideVault(f"path {_shown(relative)} escapes the vault")
    return target


MAX_PATH_BYTES = 4096  # PATH_MAX on Linux


def _shown(relative: str) -> str:
    """The path for an error message: quoted, and cut when long (a 1 MB path must not come back whole)."""
    return repr(relative) if len(relative) <= 200 else f"{relative[:200]!r}… ({len(relative)} characters)"


def relative_posix(vault: Path, path: Path) -> str:
    """`path` relative to the vault, `/`-separated."""
    return Path(os.path.relpath(path, vault)).as_posix()
