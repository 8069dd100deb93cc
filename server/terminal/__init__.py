"""The terminal face: ``agent-lsp ask`` and the checkpoint commands, an LSP client of the
server it starts as a child process (it opens none of the server's conversation or checkpoint
files), and ``agent-lsp config``, which edits the user's configuration file."""
