"""Concrete tools. Declaring a tool does not enable it: ``server.engine.bootstrap``
chooses which tools a runtime gets."""
