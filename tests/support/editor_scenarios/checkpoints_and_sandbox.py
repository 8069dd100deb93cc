"""Scenarios of what an ask changed and its undo, and of the sandbox's status."""

from __future__ import annotations

import re
import shutil
from typing import Any, ClassVar

from tests.support.model_server import tool_call

from .base import Records, Run, Scenario


class Checkpoints(Scenario):
    """With notes.txt open, "change the notes": edit_file on it and a file made by bash; then
    the checkpoints list, the diff of ask 1, and the rewind of ask 1, which asks first (the
    user says yes). records: edited and restored (notes.txt's buffer after the ask and after
    the rewind), checkpoints (the list's lines), diff (its text), asked (the question's
    text), conversation."""

    name = "checkpoints_diff_and_undoing_an_ask"

    def arrange(self, run: Run) -> None:
        run.model.reply(tool_calls=[tool_call("read_file", {"path": "notes.txt"})])
        run.model.reply(
            tool_calls=[
                tool_call(
                    "edit_file", {"path": "notes.txt", "old_text": "hello", "new_text": "bye"}
                ),
                tool_call("bash", {"command": "echo made by bash > made.txt"}),
            ]
        )
        run.model.reply("Changed.")

    def check(self, run: Run, records: Records) -> None:
        assert records["edited"] == "bye from the notes\n"
        checkpoints = records["checkpoints"]
        assert re.fullmatch(r"  1  \d{4}-\d\d-\d\d \d\d:\d\d  change the notes", checkpoints[0])
        assert checkpoints[1:] == ["       A made.txt (+1)", "       M notes.txt (+1 -1)"]
        assert "-hello from the notes\n+bye from the notes\n" in records["diff"]
        assert "would restore: notes.txt (in the editor, unsaved)" in records["asked"]
        assert "would restore: made.txt" in records["asked"]
        # The buffer edit was undone in the buffer (through workspace/applyEdit), unsaved;
        # bash's file is gone from the disk.
        assert records["restored"] == "hello from the notes\n"
        notes = run.workspace / "notes.txt"
        assert notes.read_text(encoding="utf-8") == "hello from the notes\n"
        assert not (run.workspace / "made.txt").exists()
        assert "- restored: notes.txt (in the editor, unsaved)" in records["conversation"]


class SandboxInForce(Scenario):
    """The sandbox command with every layer in force and the settings' limits. records:
    lines (the sandbox buffer's), and how the editor told the user (its driver checks)."""

    name = "the_sandbox_command_shows_the_layers_network_and_limits_in_force"
    settings: ClassVar[dict[str, Any]] = {
        "allowedDomains": ["pypi.org"],
        "maxProcesses": 256,
        "maxFileSizeMB": 64,
    }

    def check(self, run: Run, records: Records) -> None:
        bwrap = shutil.which("bwrap")
        lines = records["lines"]
        # The heading names the folder as each editor does (Emacs with a final slash).
        assert lines[0].startswith(f"# agent-lsp sandbox: {run.workspace}")
        assert lines[1:5] == [
            "",
            "sandbox: workspace-write, every layer in force",
            "",
            "mode: workspace-write",
        ]
        assert lines[5].startswith(
            f"layers: ✓ namespaces ({bwrap}) · ✓ network namespace · ✓ Landlock ABI "
        ), lines[5]
        assert " · ✓ seccomp · ✓ process limit (" in lines[5]
        # The settings reached the server, which sandboxes with them.
        assert lines[6:9] == [
            "network: only pypi.org, through the proxy",
            f"writable: {run.workspace} and each call's private $TMPDIR",
            "limits: 256 processes · files up to 64 MB · 8,192 MB of memory per process",
        ]
        assert lines[9].startswith("hidden from commands: ")
        assert not any(line.startswith("weaker") for line in lines)


class SandboxFallback(Scenario):
    """The sandbox command where bubblewrap is not used (AGENT_LSP_BWRAP=none). records:
    lines, and how the editor warned the user (its driver checks)."""

    name = "the_sandbox_command_warns_what_a_fallback_weakens"
    settings: ClassVar[dict[str, Any]] = {"allowedDomains": ["pypi.org"]}
    env_changes: ClassVar[dict[str, Any]] = {"AGENT_LSP_BWRAP": "none"}

    def check(self, run: Run, records: Records) -> None:
        lines = records["lines"]
        summary = lines[2]
        assert summary.startswith("sandbox: workspace-write, weaker here: ")
        assert "AGENT_LSP_BWRAP=none" in summary  # the server's own words for why
        fallback = summary.removeprefix("sandbox: workspace-write, weaker here: ")
        assert lines[5].startswith("layers: ✗ namespaces · ✗ network namespace · ✓ Landlock ABI ")
        assert lines[6] == "network: none; allowedDomains (pypi.org) need a network namespace"
        weaker = lines.index(f"weaker than the full sandbox: {fallback}")
        promises = lines[weaker + 1 :]
        assert len(promises) >= 4 and all(line.startswith("- ") for line in promises), promises
        assert any(
            line.startswith("- metadata of files outside the workspace") for line in promises
        )
        assert any("/tmp" in line for line in promises)
