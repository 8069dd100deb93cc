"""The Agent Client Protocol face, ``agent-lsp acp``: Zed, JetBrains, CodeCompanion, agent-shell."""
