"""Scenarios of the client's formatting: the same lines as the terminal client and the server.

Each hands the editor's formatting functions the shared cases (``data``) and compares what
they return with what the terminal client or the server's own code makes of them.
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
    STOP_REASONS,
    expected_escapes,
    expected_lines,
    expected_stop_notes,
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
    """records: lines, one trace line for each activity notification of FORMAT_CASES."""

    name = "trace_lines_match_the_terminal_client"
    data = FORMAT_CASES

    def check(self, run: Run, records: Records) -> None:
        assert [line[9:] for line in records["lines"]] == expected_lines()
        assert all(re.fullmatch(STAMP + " ", line[:9]) for line in records["lines"])


class StopNotes(Scenario):
    """records: notes, the note for each stop reason (null for none)."""

    name = "stop_notes_match_the_terminal_client"
    data = STOP_REASONS

    def check(self, run: Run, records: Records) -> None:
        assert records["notes"] == expected_stop_notes()


class SandboxViews(Scenario):
    """records: views, the client's view (kind, summary, lines) of each case's status."""

    name = "sandbox_status_lines_are_those_of_every_client"
    data = SANDBOX_CASES

    def check(self, run: Run, records: Records) -> None:
        expected = [{k: c[k] for k in ("kind", "summary", "lines")} for c in SANDBOX_CASES]
        assert records["views"] == expected
