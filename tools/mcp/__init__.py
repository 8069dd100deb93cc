"""MCP servers as tool sources (issue 22): specs, connections, their tools as ToolDefinitions."""
