"""Scenarios of what the agent knows of the project (issue 24) in the editors: the instruction
files and skills it is given (each editor's instructions listing), and the /commands a prompt
may start with (completing them; the built-ins run the client's own actions; a prompt file
is expanded by the server). The listing's lines are the same in both
(``InstructionLines``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.model_server import ScriptedModel, make_reply, tool_call
from tests.support.trace_cases import user_texts

from .base import Records, Run, Scenario

ROOT = "/home/me/project"
CUT = (
    "AGENTS.md is 40,000 bytes: only its first 31,564 are given to the model (instructionsMaxBytes)"
)
# agent/instructions results with every field shown, and text that would hide something on
# screen (a repository writes its skills, so their names and descriptions too).
LINE_CASES: list[dict[str, Any]] = [
    {
        "root": ROOT,
        "result": {
            "instructions": [
                {
                    "path": "/home/me/.config/agent-lsp/AGENTS.md",
                    "uri": "file:///home/me/.config/agent-lsp/AGENTS.md",
                    "name": "~/.config/agent-lsp/AGENTS.md",
                    "source": "user",
                    "bytes": 1204,
                    "cut": False,
                },
                {
                    "path": f"{ROOT}/AGENTS.md",
                    "uri": f"file://{ROOT}/AGENTS.md",
                    "name": "AGENTS.md",
                    "source": "workspace",
                    "bytes": 40000,
                    "cut": True,
                },
                {
                    "path": f"{ROOT}/sub/AGENTS.md",
                    "uri": f"file://{ROOT}/sub/AGENTS.md",
                    "name": "sub/AGENTS.md",
                    "source": "nested",
                    "bytes": 12,
                    "cut": False,
                },
            ],
            "skills": [
                {
                    "name": "deploy",
                    "description": "Deploy the app to staging",
                    "path": f"{ROOT}/.agents/skills/deploy/SKILL.md",
                    "source": "workspace",
                },
                {
                    "name": "lint\x1b[8m",
                    "description": "Lint it\u202e first\nthen more",
                    "path": "/opt/skills/lint/SKILL.md",
                    "source": "user",
                },
            ],
            "warnings": [CUT],
        },
    },
    {"root": ROOT, "result": {"instructions": [], "skills": [], "warnings": []}},
]
LINES = [
    [
        "Instruction files, in the order the model reads them:",
        "- ~/.config/agent-lsp/AGENTS.md (user, 1,204 bytes)",
        "- AGENTS.md (workspace, 40,000 bytes, cut)",
        "- sub/AGENTS.md (nested, 12 bytes)",
        "",
        "Skills, each read by the model when it applies:",
        "- deploy: Deploy the app to staging (.agents/skills/deploy/SKILL.md)",
        "- lint\\e[8m: Lint it\\u202e first⏎then more (/opt/skills/lint/SKILL.md)",
        "",
        "Warnings:",
        f"- {CUT}",
    ],
    [
        "Instruction files: none (an AGENTS.md at the folder's root,"
        " or a file the instructionFiles setting names)",
        "",
        "Skills: none (a folder with a SKILL.md in .agents/skills/ or .claude/skills/)",
    ],
]
# The lines each case's files are on (1-based), and the file.
TARGETS = [
    {
        2: "/home/me/.config/agent-lsp/AGENTS.md",
        3: f"{ROOT}/AGENTS.md",
        4: f"{ROOT}/sub/AGENTS.md",
        7: f"{ROOT}/.agents/skills/deploy/SKILL.md",
        8: "/opt/skills/lint/SKILL.md",
    },
    {},
]


class InstructionLines(Scenario):
    """records: views, the client's lines for each case; targets, the file of each line that
    names one ({line: path}, lines from 1)."""

    name = "instruction_lines_are_those_of_every_client"
    data = LINE_CASES

    def check(self, run: Run, records: Records) -> None:
        assert records["views"] == LINES
        targets = [{int(k): v for k, v in t.items()} for t in records["targets"]]
        assert targets == TARGETS


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


USER_AGENTS = "Always answer briefly.\n"
AGENTS = "Use pnpm; run `make test`.\n"
SUB_AGENTS = "Files here are generated.\n"
SKILL = "---\nname: deploy\ndescription: Deploy the app to staging\n---\nRun ./deploy.sh.\n"


class InstructionsListing(Scenario):
    """The user's AGENTS.md, the folder's, sub/AGENTS.md and a skill (.agents/skills/deploy);
    asks "read the sub notes" (read_file sub/notes.txt), then the instructions listing, then
    Enter on the line of the folder's AGENTS.md. records: lines (the listing's), opened (the
    file the current buffer then visits)."""

    name = "the_instructions_listing_shows_the_files_in_force_and_the_skills"

    def arrange(self, run: Run) -> None:
        write(run.config_home / "agent-lsp" / "AGENTS.md", USER_AGENTS)
        write(run.workspace / "AGENTS.md", AGENTS)
        write(run.workspace / "sub" / "AGENTS.md", SUB_AGENTS)
        write(run.workspace / "sub" / "notes.txt", "sub notes\n")
        write(run.workspace / ".agents" / "skills" / "deploy" / "SKILL.md", SKILL)
        run.model.reply(tool_calls=[tool_call("read_file", {"path": "sub/notes.txt"})])
        run.model.reply("Read.")

    def check(self, run: Run, records: Records) -> None:
        system = run.model.bodies[0]["messages"][0]["content"]
        assert "# Instructions from AGENTS.md" in system and AGENTS.strip() in system
        lines = records["lines"]
        files = lines.index("Instruction files, in the order the model reads them:")
        user, folder, nested = lines[files + 1 : files + 4]
        assert user.startswith("- ") and user.endswith(f" (user, {len(USER_AGENTS)} bytes)")
        assert folder == f"- AGENTS.md (workspace, {len(AGENTS)} bytes)"
        # Given to this conversation when it read a file under sub/: the listing asked
        # with its session.
        assert nested == f"- sub/AGENTS.md (nested, {len(SUB_AGENTS)} bytes)"
        assert "- deploy: Deploy the app to staging (.agents/skills/deploy/SKILL.md)" in lines
        assert Path(records["opened"]) == (run.workspace / "AGENTS.md").resolve()


REVIEW = (
    "---\ndescription: Review a file with care\nargument-hint: FILE\n---\n"
    "Review $ARGUMENTS with care; start with $1.\n"
)


class PromptFiles(Scenario):
    """The folder's .agents/commands/review.md. The completion of "/" and of "/re", then at
    sync point "added" .agents/commands/added.md appears and (the client's list made stale)
    "/" is completed again; then asks "/review x". records: offered, review, again (the
    completions' /names), conversation."""

    name = "a_prompt_file_is_completed_and_the_server_expands_it"

    def arrange(self, run: Run) -> None:
        commands = run.workspace / ".agents" / "commands"
        write(commands / "review.md", REVIEW)
        run.on_sync["added"] = lambda: write(commands / "added.md", "Add $1.\n")
        run.model.reply("Reviewed.")

    def check(self, run: Run, records: Records) -> None:
        offered = records["offered"]
        for name in ("/compact", "/new", "/checkpoints", "/undo", "/review"):
            assert name in offered, offered
        assert records["review"] == ["/review"]
        assert "/added" in records["again"] and "/added" not in offered
        # Sent as typed; the server expanded it before the model saw it.
        assert user_texts(run.model.bodies[0]) == ["Review x with care; start with x."]
        assert "## You\n\n/review x\n\n## Agent\n\nReviewed." in records["conversation"]


def builtin_model() -> ScriptedModel:
    """Reads then edits notes.txt for "change the notes", summarizes a summary request (no
    tools offered), answers anything else."""

    def respond(body: dict[str, Any]) -> Any:
        if not body.get("tools"):
            return make_reply("Summary of the talk.")
        messages = body.get("messages", [])
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        results = sum(1 for m in messages[last_user:] if m["role"] == "tool")
        if messages[last_user].get("content") == "change the notes" and results < 2:
            if results == 0:
                return make_reply(tool_calls=[tool_call("read_file", {"path": "notes.txt"})])
            edit = {"path": "notes.txt", "old_text": "hello", "new_text": "bye"}
            return make_reply(tool_calls=[tool_call("edit_file", edit)])
        return make_reply("Answered.")

    return ScriptedModel(respond)


class BuiltinCommands(Scenario):
    """Asks "change the notes" (read_file, edit_file); then the prompts "/checkpoints",
    "/undo 1" (the user confirms), "hello", "and more", "/compact", "/new" and
    "/frobnicate now", each as an ask is typed. records: checkpoints (the list's lines),
    first_session, second_session (after /new), conversation."""

    name = "built_in_commands_typed_as_a_prompt_run_the_client_s_actions"

    def make_model(self) -> ScriptedModel:
        return builtin_model()

    def check(self, run: Run, records: Records) -> None:
        sent = [text for body in run.model.bodies for text in user_texts(body)]
        for builtin in ("/checkpoints", "/undo 1", "/compact", "/new"):
            assert builtin not in sent, sent
        checkpoints = records["checkpoints"]
        assert checkpoints[0].endswith("  change the notes"), checkpoints
        assert "       M notes.txt (+1 -1)" in checkpoints, checkpoints
        # /undo 1 put the notes back.
        notes = run.workspace / "notes.txt"
        assert notes.read_text(encoding="utf-8") == "hello from the notes\n"
        conversation = records["conversation"]
        assert "_Undone: ask 1 and later (the agent forgot them)._" in conversation
        # /compact ran agent/compact: its summary request offered no tools, and its result
        # is the conversation's line.
        assert any(not body.get("tools") for body in run.model.bodies)
        assert "\n_(compacted: " in conversation, conversation
        # /new started a new conversation: the unknown /word was its first ask, as typed.
        assert records["first_session"] and records["second_session"]
        assert records["first_session"] != records["second_session"]
        assert user_texts(run.model.bodies[-1]) == ["/frobnicate now"]
