"""Language servers agent-lsp starts itself: the headless source of language features
(``tooling.language``), for the faces without an editor's own servers."""
