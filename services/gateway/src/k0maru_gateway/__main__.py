"""`python -m k0maru_gateway`: run the HTTP console (MCP runs in `k0maru mcp`)."""

from k0maru_common import configure_logging

from .config import GatewaySettings
from .server import run


def main() -> None:
    settings = GatewaySettings()
    configure_logging("gateway", settings.log_level)
    run(settings)


if __name__ == "__main__":
    main()
