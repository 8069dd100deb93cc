"""Generic tool mechanism: contract, registry, runtime, workspace boundary.

Importing this package loads no concrete tool and builds no registry; the
application chooses its tools explicitly (see ``server.engine.bootstrap``).
"""
