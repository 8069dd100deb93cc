"""A language server that answers garbage: a frame whose body is not JSON (tests)."""

import sys

sys.stdout.buffer.write(b"Content-Length: 9\r\n\r\nnot json!")
sys.stdout.buffer.flush()
while sys.stdin.buffer.read(4096):
    pass
