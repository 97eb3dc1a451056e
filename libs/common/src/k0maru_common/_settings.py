"""Settings base: every service reads `K0_*` environment variables once, at start."""

from __future__ import annotations

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ._auth import is_loopback_address


class K0Settings(BaseSettings):
    """Fields every service shares. Subclasses add their own; unknown K0_ names are ignored
    so that one environment can configure the whole stack."""

    model_config = SettingsConfigDict(env_prefix="K0_", extra="ignore", frozen=True)

    log_level: str = Field("INFO", description="Python logging level for this service")
    grpc_addr: str = Field("127.0.0.1:0", description="host:port this service's gRPC server binds")
    grpc_token: str = Field(
        "",
        description="shared secret every gRPC call carries (metadata authorization: Bearer …); "
        "servers require it when set, clients attach it; mandatory when grpc_addr is not loopback",
    )

    @model_validator(mode="after")
    def _token_off_loopback(self) -> K0Settings:
        if not self.grpc_token and not is_loopback_address(self.grpc_addr):
            raise ValueError(f"K0_GRPC_ADDR={self.grpc_addr} is not loopback: set K0_GRPC_TOKEN")
        return self
