"""Scanner settings (K0_ environment variables)."""

from __future__ import annotations

from pathlib import Path

from k0maru_common import IGNORED_FOLDERS, Field, K0Settings


class ScannerSettings(K0Settings):
    grpc_addr: str = Field(
        "127.0.0.1:50051",
        description="host:port this service's gRPC server binds: the port clients default to (K0_SCANNER_ADDR)",
    )
    vault: Path = Field(description="the vault folder to read")
    data_dir: Path = Field(description="where the scanner keeps its manifest")
    events_addr: str = Field("tcp://127.0.0.1:5561", description="ZeroMQ PUB bind address")
    max_file_bytes: int = Field(
        2 * 1024 * 1024,
        description="notes with more text are skipped (pasted images, not indexed, may make a file 16x larger)",
    )
    ignore_folders: list[str] = Field(
        default_factory=lambda: list(IGNORED_FOLDERS),
        description="folders not indexed, by name anywhere or by vault-relative path (with a /)",
    )
    tool_excludes: bool = Field(
        True,
        description="leave out what the vault's tool excludes from its own search: Obsidian's Excluded files, Logseq's :hidden",
    )
    commit_days: bool = Field(
        True,
        description="in a vault kept in git, date a note that names no date by the last commit that changed it, not by its file (a clone stamps every file alike)",
    )
    gitignore: bool = Field(
        True,
        description="in a vault inside a git repository, leave out the folders its .gitignore files ignore that hold no notes (build outputs, vendored packages); gitignored notes and tracked files stay",
    )
    ignore_prefixes: list[str] = Field(default_factory=list)
    ignore_suffixes: list[str] = Field(default_factory=list)
    watch: bool = Field(True, description="watch the vault for changes")
    window_s: float = Field(1.0, description="fixed collection window for file events")
    window_max_files: int = Field(50, description="flush the window early at this many files")
    rescan_interval_s: float = Field(30.0, description="periodic safety rescan")
    journal_keep: int = Field(500_000, description="journal entries kept for catch-up")
