"""`python -m k0maru_gateway`: run the HTTP console (MCP runs in `k0maru mcp`)."""

from k0maru_common import configure_logging, exit_without_teardown

from .config import GatewaySettings
from .server import run


def main() -> None:
    settings = GatewaySettings()
    configure_logging("gateway", settings.log_level)
    run(settings)  # returns once everything is closed
    exit_without_teardown()


if __name__ == "__main__":
    main()
