"""A language server that reads its input and never answers (tests: a server that hangs)."""

import sys

while sys.stdin.buffer.read(4096):
    pass
