"""Gateway settings (K0_ environment variables)."""

from __future__ import annotations

from pathlib import Path

from k0maru_common import Field, K0Settings, SettingsError, is_loopback_host


class GatewaySettings(K0Settings):
    grpc_addr: str = Field(
        "127.0.0.1:50055", description="host:port this service's gRPC server binds: the port compose gives it"
    )
    vault: Path = Field(description="the vault this gateway answers for")
    scanner_addr: str = Field("127.0.0.1:50051", description="scanner gRPC address")
    retriever_addr: str = Field(
        "127.0.0.1:50053",
        description="retriever gRPC target; several are balanced round robin: dns:///retriever:50053 (a name with several addresses) or a comma list of IP:port",
    )
    offload_addr: str = Field("127.0.0.1:50054", description="offload gRPC address")
    embedder_target: str = Field("", description="embedders' gRPC target (for status)")
    events_addr: str = Field("", description="scanner ZeroMQ PUB address, for live console updates")
    http_host: str = Field("127.0.0.1", description="console bind address")
    http_port: int = Field(7878, description="console port")
    console_token: str = Field("", description="bearer token required by the console (mandatory off loopback)")
    http_allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header names the console answers besides its bind address (JSON list; DNS rebinding)",
    )
    price_per_mtok: float = Field(3.0, ge=0, description="price of one million input tokens, for the scoreboard")
    price_currency: str = Field("USD", min_length=1, max_length=8, description="currency of price_per_mtok")

    def validate(self) -> None:
        super().validate()
        object.__setattr__(self, "console_token", self.console_token.strip())  # a secret file's newline
        if not is_loopback_host(self.http_host) and not self.console_token:
            raise SettingsError(f"K0_HTTP_HOST={self.http_host} is not loopback: set K0_CONSOLE_TOKEN")
