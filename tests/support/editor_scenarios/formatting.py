"""Scenarios of the client's formatting: the same lines as the terminal client and the server.

Each hands the editor's formatting functions the shared cases (``data``: notifications with
the server's words, tests/support/trace_cases.py) and compares what they return with what the
terminal client or the server's own code makes of them.
"""

from __future__ import annotations

import json
import re
from typing import ClassVar

from tests.support.lsp_client import REPO
from tests.support.trace_cases import (
    CONSENT_SAMPLE,
    ESCAPE_SAMPLE,
    FORMAT_CASES,
    STAMP,
    expected_escapes,
    expected_lines,
)

from .base import Records, Run, Scenario

SANDBOX_CASES = json.loads(
    (REPO / "tests" / "support" / "sandbox_cases.json").read_text(encoding="utf-8")
)["cases"]


class EscapeControl(Scenario):
    """records: escaped, kept (newlines kept), again (escaped twice), and consent,
    consent_kept, consent_again: the consent escaping of CONSENT_SAMPLE."""

    name = "escape_control_follows_the_rules_of_the_server"
    data: ClassVar[dict[str, str]] = {"sample": ESCAPE_SAMPLE, "consent": CONSENT_SAMPLE}

    def check(self, run: Run, records: Records) -> None:
        expected = expected_escapes()
        assert records["escaped"] == records["again"] == expected["escaped"]
        assert records["kept"] == expected["kept"]
        assert records["consent"] == records["consent_again"] == expected["consent"]
        assert records["consent_kept"] == expected["consent_kept"]


class TraceLines(Scenario):
    """records: lines, one trace line for each activity notification of FORMAT_CASES: the
    server's title, durationText and outputHead in the terminal client's layout."""

    name = "trace_lines_match_the_terminal_client"
    data = FORMAT_CASES

    def check(self, run: Run, records: Records) -> None:
        assert [line[9:] for line in records["lines"]] == expected_lines()
        assert all(re.fullmatch(STAMP + " ", line[:9]) for line in records["lines"])


class SandboxViews(Scenario):
    """records: views, the client's view (kind, summary, lines) of each case's status."""

    name = "sandbox_status_lines_are_those_of_every_client"
    data = SANDBOX_CASES

    def check(self, run: Run, records: Records) -> None:
        expected = [{k: c[k] for k in ("kind", "summary", "lines")} for c in SANDBOX_CASES]
        assert records["views"] == expected


def _call(name: str, **arguments: object) -> dict[str, str]:
    return {"name": name, "arguments": json.dumps(arguments)}


# An edit or a write as every client shows it (issue 34: Neovim and Emacs showed its JSON):
# the replacement as unified diff lines (the lines both texts start and end with as
# context), at most 20; a write as its size and first 8 lines. Anything else: no lines.
EDIT_CASES = [
    (
        _call("edit_file", path="app.py", old_text="x = 1\ny = 2\n", new_text="x = 1\ny = 3\n"),
        ["edit app.py: +1 -1", " x = 1", "-y = 2", "+y = 3"],
    ),
    (
        _call("edit_file", path="a.txt", old_text="old", new_text="new", replace_all=True),
        ["edit a.txt: +1 -1 (every occurrence)", "-old", "+new"],
    ),
    (
        _call("edit_file", path="b.txt", old_text="gone\n", new_text=""),
        ["edit b.txt: +0 -1", "-gone"],
    ),
    (
        _call(
            "edit_file",
            path="long.txt",
            old_text="a",
            new_text="\n".join(map("l{}".format, range(25))),
        ),
        ["edit long.txt: +25 -1", "-a", *[f"+l{i}" for i in range(19)], "… 6 more lines"],
    ),
    (
        _call("write_file", path="new.txt", content="".join(f"line {i}\n" for i in range(10))),
        ["write new.txt: 10 lines, 70 bytes", *[f"+line {i}" for i in range(8)], "… 2 more lines"],
    ),
    (_call("write_file", path="empty.txt", content=""), ["write empty.txt: 0 lines, 0 bytes"]),
    (
        _call("edit_file", path="e\x1b[8m.txt", old_text="a", new_text="b\x1b[8mc"),
        ["edit e\\e[8m.txt: +1 -1", "-a", "+b\\e[8mc"],
    ),
    (_call("bash", command="ls"), []),
    ({"name": "edit_file", "arguments": "{not json"}, []),
]


EDIT_CALLS = [call for call, _ in EDIT_CASES]


class EditDiffs(Scenario):
    """records: views, the client's lines for each call of EDIT_CASES."""

    name = "an_edit_shows_as_a_diff_in_every_client"
    data = EDIT_CALLS

    def check(self, run: Run, records: Records) -> None:
        # An empty Lua table is encoded as {}: no lines either way.
        views = [view or [] for view in records["views"]]
        assert views == [lines for _, lines in EDIT_CASES]
