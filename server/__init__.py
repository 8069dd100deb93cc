"""agent-lsp: the language server, the shared agent loop and its assembly.

Kept import-free so ``python -m server --version`` stays fast: pygls and
openai are imported only by the modules that need them.
"""

__version__ = "0.1.0"
