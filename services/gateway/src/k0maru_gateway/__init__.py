"""k0maru gateway: the MCP server (stdio) and the HTTP console, both over the services' gRPC APIs.

Public API: `build_mcp(client)` / `serve_mcp_stdio(client)` (run by `k0maru mcp`),
`build_server(settings)` (the console service, `python -m k0maru_gateway`), `search_answer(client,
params)` (the console's search answer, which `k0maru search` computes itself against a team
deployment). Imported on first use,
so the console process does not load the MCP SDK (1.3 s of start-up) and MCP does not load the
console's web stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from k0maru_common import lazy_exports

if TYPE_CHECKING:
    from ._console import search_answer
    from ._mcp import build_mcp, serve_mcp_stdio
    from .config import GatewaySettings
    from .server import build_server

_WHERE = {
    "GatewaySettings": ".config",
    "build_mcp": "._mcp",
    "build_server": ".server",
    "search_answer": "._console",
    "serve_mcp_stdio": "._mcp",
}


__getattr__ = lazy_exports(__name__, _WHERE, globals())


__all__ = ["GatewaySettings", "build_mcp", "build_server", "search_answer", "serve_mcp_stdio"]
