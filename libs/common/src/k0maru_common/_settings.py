"""Settings base: every service reads `K0_*` environment variables once, at start."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class K0Settings(BaseSettings):
    """Fields every service shares. Subclasses add their own; unknown K0_ names are ignored
    so that one environment can configure the whole stack."""

    model_config = SettingsConfigDict(env_prefix="K0_", extra="ignore", frozen=True)

    log_level: str = Field("INFO", description="Python logging level for this service")
    grpc_addr: str = Field("127.0.0.1:0", description="host:port this service's gRPC server binds")
