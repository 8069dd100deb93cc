"""A language server that answers ``initialize``, then dies on the first document it is
given, saying why on stderr (tests: a crash while a write waits for its problems)."""

import json
import sys


def read() -> dict:
    length = 0
    while (line := sys.stdin.buffer.readline().strip()) != b"":
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))


def send(message: dict) -> None:
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


while True:
    message = read()
    if message.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}})
    elif message.get("method") == "textDocument/didOpen":
        sys.stderr.write("crashed on didOpen\n")
        sys.exit(4)
