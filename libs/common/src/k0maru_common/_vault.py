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
    OutsideVault. The returned path is absolute and may not exist yet.
    """
    if not relative or "\x00" in relative:
        raise OutsideVault(f"invalid vault path {relative!r}")
    pure = PurePosixPath(relative.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts or re.match(r"^[A-Za-z]:", relative):
        raise OutsideVault(f"path {relative!r} escapes the vault")
    root = vault.resolve()
    target = (root / pure).resolve()
    if target != root and root not in target.parents:
        raise OutsideVault(f"path {relative!r} escapes the vault")
    return target


def relative_posix(vault: Path, path: Path) -> str:
    """`path` relative to the vault, `/`-separated."""
    return Path(os.path.relpath(path, vault)).as_posix()
