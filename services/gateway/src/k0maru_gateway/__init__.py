"""k0maru gateway: the MCP server (stdio) and the HTTP console, both over the services' gRPC APIs.

Public API: `build_mcp(client)` / `serve_mcp_stdio(client)` (run by `k0maru mcp`),
`build_server(settings)` (the console service, `python -m k0maru_gateway`), `hit_json` (the JSON
form of a search hit, shared by the console and `k0maru search --json`).
"""

from ._console import hit_json
from ._mcp import build_mcp, serve_mcp_stdio
from .config import GatewaySettings
from .server import build_server

__all__ = ["GatewaySettings", "build_mcp", "build_server", "hit_json", "serve_mcp_stdio"]
