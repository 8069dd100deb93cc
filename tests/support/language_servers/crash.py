"""A language server that dies at once, saying why on stderr (tests: a server that crashes)."""

import sys

sys.stderr.write("boom: this server crashes on purpose\n")
sys.exit(3)
