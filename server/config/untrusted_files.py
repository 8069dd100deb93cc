"""Reading a file a repository provides (``.vscode/mcp.json``, ``.mcp.json``): untrusted input.

Regular files only (a FIFO or device could block or feed without end), at most ``limit``
bytes, UTF-8; and VS Code's JSON-with-comments turned into JSON for the standard parser.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def read_untrusted(path: Path, limit: int) -> tuple[str | None, str | None]:
    """The text of a workspace file (None when absent) and a problem, without following a
    FIFO or device a repository may have put there, and without reading a huge file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as exc:
        return None, exc.strerror or str(exc)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None, "not a regular file"
        if info.st_size > limit:
            return None, f"larger than {limit} bytes"
        data = handle.read(limit + 1)
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        return None, "not UTF-8 text"


def strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (VS Code's ``mcp.json`` allows both) as JSON."""
    pieces: list[tuple[bool, str]] = []  # (is a string literal, text)
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            end = index + 1
            while end < length and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            pieces.append((True, text[index : end + 1]))
            index = end + 1
        elif text.startswith("//", index):
            newline = text.find("\n", index)
            index = length if newline < 0 else newline
        elif text.startswith("/*", index):
            close = text.find("*/", index + 2)
            index = length if close < 0 else close + 2
            pieces.append((False, " "))
        else:
            pieces.append((False, char))
            index += 1
    out, plain = [], []
    for is_string, piece in pieces:
        if is_string:
            out.append(TRAILING_COMMA.sub(r"\1", "".join(plain)))
            out.append(piece)
            plain = []
        else:
            plain.append(piece)
    out.append(TRAILING_COMMA.sub(r"\1", "".join(plain)))
    return "".join(out)
