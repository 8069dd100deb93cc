"""Issue 24 in the terminal client: the instruction files an ask is given, the user's
commands expanded by the server, and the built-in commands pointed at their subcommands."""

from __future__ import annotations

from pathlib import Path

from tests.support.lsp_client import run_cli, server_env
from tests.support.model_server import ScriptedModel


def test_an_ask_names_its_instructions_and_expands_a_prompt_file(
    model: ScriptedModel, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".agents" / "commands").mkdir(parents=True)
    (workspace / ".agents" / "skills" / "deploy").mkdir(parents=True)
    (workspace / "AGENTS.md").write_text("Use pnpm, never npm.\n")
    (workspace / ".agents" / "skills" / "deploy" / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Ship the app\n---\nSteps.\n"
    )
    (workspace / ".agents" / "commands" / "review.md").write_text(
        "---\ndescription: Review a file\n---\nReview $1 for bugs.\n"
    )
    model.reply("Reviewed.")
    asked = run_cli(
        "ask", "/review app.py", "--workspace", str(workspace), env=server_env(model.base_url)
    )
    assert asked.returncode == 0, asked.stderr
    assert "instructions: AGENTS.md; skills: deploy" in asked.stderr.splitlines()
    messages = model.requests[0]["body"]["messages"]
    assert messages[-1]["content"] == "Review app.py for bugs."
    assert "Use pnpm, never npm." in messages[0]["content"]


def test_a_built_in_command_points_at_its_subcommand(tmp_path: Path) -> None:
    asked = run_cli("ask", "/undo", "--workspace", str(tmp_path), env=server_env(None))
    assert asked.returncode == 2
    assert "from the terminal: agent-lsp rewind --session ID CHECKPOINT" in asked.stderr
