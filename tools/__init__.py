"""Concrete tools. Declaring a tool does not enable it: ``server.bootstrap``
chooses which tools a runtime gets."""
