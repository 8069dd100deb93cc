"""The language-server face: the pygls application over the engine, the editor's documents,
ask reporting, permission requests over LSP, stdout kept for the protocol."""
