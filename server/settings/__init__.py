"""The editor settings (section ``agentLsp``), declared once as typed classes and read
leniently (``settings``), and a session's modes: what ``read-only``, ``workspace-write`` and
``full-access`` do to them (``modes``).

Below the engine and beside ``mcp/`` and ``conversations/``, above what their defaults and
types come from (``agent/``, ``project/``, the sandbox's entry point): the faces read them
(the LSP face applies ``initializationOptions``, the ACP face offers the modes) and the
engine's parts use them.
"""
