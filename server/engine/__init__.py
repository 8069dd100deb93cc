"""The engine: ``AgentEngine``, the one facade the faces call (folders, sessions, asks), with
its parts and the assembly of the tools."""
