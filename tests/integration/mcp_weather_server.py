"""A small MCP server for the integration tests: `python mcp_weather_server.py [stdio|http PORT]`."""

from __future__ import annotations

import sys

from mcp.server import MCPServer

server = MCPServer(name="weather")


@server.tool()
def get_forecast(city: str, days: int = 1) -> dict[str, object]:
    """Forecast for a city."""
    return {"city": city, "days": days, "forecast": ["sunny"] * days}


@server.tool()
def fail_always(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"failed on purpose: {reason}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", port=int(sys.argv[2]))
    else:
        server.run("stdio")
