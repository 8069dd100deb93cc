"""MCP servers as tool sources: specs, connections, their tools as ToolDefinitions."""
