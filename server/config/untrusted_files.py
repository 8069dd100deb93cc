"""Reading a file a repository provides (``.vscode/mcp.json``, ``.mcp.json``): untrusted input.

Regular files only (a FIFO or device could block or feed without end), at most ``limit``
bytes, UTF-8 (:func:`tooling.regular_files.read_regular`); and ``mcp.json``'s JSON-with-comments
turned into JSON for the standard parser.
"""

from __future__ import annotations

import re
from pathlib import Path

from tooling.regular_files import SkippedFile, read_regular

TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def read_untrusted(path: Path, limit: int) -> tuple[str | None, str | None]:
    """The text of a workspace file (None when absent) and a problem, without following a
    FIFO or device a repository may have put there, and without reading a huge file."""
    try:
        found = read_regular(path, limit)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except SkippedFile as exc:
        return None, exc.reason
    except OSError as exc:
        return None, exc.strerror or str(exc)
    if found.cut:
        return None, f"larger than {limit} bytes"
    try:
        return found.data.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        return None, "not UTF-8 text"


def strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (``.vscode/mcp.json`` allows both) as JSON."""
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
    out: list[str] = []
    plain: list[str] = []
    for is_string, piece in pieces:
        if is_string:
            out.append(TRAILING_COMMA.sub(r"\1", "".join(plain)))
            out.append(piece)
            plain = []
        else:
            plain.append(piece)
    out.append(TRAILING_COMMA.sub(r"\1", "".join(plain)))
    return "".join(out)
