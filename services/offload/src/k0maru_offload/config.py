"""Offload settings (K0_ environment variables)."""

from __future__ import annotations

from pathlib import Path

from k0maru_common import MAX_LOG_BYTES, OFFLOAD_THRESHOLD_LINES, Field, K0Settings


class OffloadSettings(K0Settings):
    grpc_addr: str = Field(
        "127.0.0.1:50054",
        description="host:port this service's gRPC server binds: the port clients default to (K0_OFFLOAD_ADDR)",
    )
    vault: Path = Field(description="the vault: refs go to <vault>/.k0maru/refs, notes into the vault")
    redis_url: str = Field("redis://127.0.0.1:6379/0", description="Redis/Valkey for the token ledger")
    threshold_lines: int = Field(OFFLOAD_THRESHOLD_LINES, description="logs longer than this are offloaded")
    max_log_bytes: int = Field(MAX_LOG_BYTES, description="largest log accepted")
    skills_export_dir: Path = Field(Path.home() / ".hermes" / "skills", description="where exported skill cards go")
    commit_days: bool = Field(
        True,
        description="in a vault kept in git, the loadout orders decisions and logs that name no day by their last commit",
    )
