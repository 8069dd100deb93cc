"""MCP servers written with the SDK for the MCP client tests."""
