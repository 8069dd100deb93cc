"""MCP on the server, in one home: a server's definitions (the user file, the editor setting,
a folder's own untrusted files: ``config``), editing the user file's table (``edit``), the
approvals of a folder's own servers (``approvals``), a folder's definitions read off the loop
(``definitions``) and its servers' lifecycle, states and tools, with an ask's bounded wait
for those still starting (``servers``). The MCP SDK's side, an MCP server as a tool source
(its spec, the connection, its tools as ``ToolDefinition``s), is ``tools/mcp/``; the
``agent-lsp mcp`` commands are the terminal face's (``server/terminal/mcp_*``).

Below the engine, above the loop (``agent/``): the terminal face reads and edits the
definitions here without importing the engine.
"""
