"""A language server that tries to write into the folder it serves and to reach the
network, says on stderr what happened, then exits (tests: servers run read-only, offline)."""

import os
import socket
import sys

try:
    with open(os.path.join(os.getcwd(), "written-by-server.txt"), "w") as f:
        f.write("a language server wrote this")
    sys.stderr.write("write: allowed\n")
except OSError as exc:
    sys.stderr.write(f"write: refused ({exc.strerror})\n")
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2).close()
    sys.stderr.write("network: allowed\n")
except OSError as exc:
    sys.stderr.write(f"network: refused ({exc.strerror or exc})\n")
sys.exit(3)
