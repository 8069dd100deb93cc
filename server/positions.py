"""Where things are in a document as the LSP wire says it: file URIs, line/character positions.

Shared by the LSP face (``server.lsp.documents``) and the editor context note
(``server.conversations.editor_context``, which reads the editor's selection): plain text
arithmetic, no pygls.
"""

from __future__ import annotations

import bisect
import os
import re
from urllib.parse import unquote, urlparse

_LINE_END = re.compile(r"\r\n|\r|\n")
_DRIVE_LETTER = re.compile(r"^/[a-zA-Z]:")


def fs_path(uri: str) -> str | None:
    """The file system path a ``file:`` URI names, None for another scheme.

    By the rules of pygls's ``to_fs_path`` (vscode-uri's), which the LSP face uses for the
    workspace folders: percent-decoded, a host kept as a UNC ``//host/path``, a Windows
    drive letter lower-cased.
    """
    scheme, netloc, path = (unquote(part) for part in urlparse(uri)[:3])
    if scheme != "file":
        return None
    if netloc and path:
        value = f"//{netloc}{path}"
    elif _DRIVE_LETTER.match(path):
        value = path[1].lower() + path[2:]
    else:
        value = path
    return value.replace("/", "\\") if os.name == "nt" else value


class LineIndex:
    """Offsets in a text to LSP positions (line, character in the chosen encoding).

    LSP lines end at ``\\n``, ``\\r\\n`` or ``\\r``; characters are counted in UTF-16
    code units unless the client negotiated another position encoding.
    """

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self._text = text
        self._encoding = encoding
        # A regex scan, not a loop over characters: buffers can be megabytes.
        self._starts = [0, *(m.end() for m in _LINE_END.finditer(text))]

    @property
    def lines(self) -> int:
        return len(self._starts)

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, offset) - 1
        prefix = self._text[self._starts[line] : offset]
        return line, units(prefix, self._encoding)

    def offset(self, line: int, character: int) -> int:
        """The text offset of an LSP position (clamped to the text, as LSP asks)."""
        if line < 0:
            return 0
        if line >= len(self._starts):
            return len(self._text)
        start = self._starts[line]
        end = self._starts[line + 1] if line + 1 < len(self._starts) else len(self._text)
        body = self._text[start:end].rstrip("\r\n")
        if self._encoding == "utf-32":
            return start + min(max(character, 0), len(body))
        counted = 0
        for index, ch in enumerate(body):
            if counted >= character:
                return start + index
            counted += units(ch, self._encoding)
        return start + len(body)


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2
