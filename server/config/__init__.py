"""The user's configuration: its file, where each value comes from, agent-lsp's own secrets,
and the folders agent-lsp keeps state in. The lowest layer: imports nothing else of the server."""
