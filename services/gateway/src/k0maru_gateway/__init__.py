"""k0maru gateway: MCP over stdio, the HTTP console, the launcher and the CLI."""
