"""Conversations: a chat's messages in memory and their store (``conversations``), saved as
files that outlive the process (``session_files``), and a user message's editor context
note, told apart from the prompt again for titles and history (``editor_context``).

Below the engine, above the loop (``agent/``) and what an ask is told (``project/``): the
engine's parts (sessions, asks, undo) hold conversations; no face imports them.
"""
