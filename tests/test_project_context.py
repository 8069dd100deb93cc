"""Issue 24: what an ask is told of the project (instructions, skills, the environment, the
user's commands), through the real server over stdio against the scripted model, plus unit
tests of ``server.project`` where a direct call says it more clearly."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from server.project import commands as cmds
from server.project.frontmatter import FrontMatterError, split
from tests.support.editor import EDITOR_CAPABILITIES, make_editor_client
from tests.support.lsp_client import AgentTestClient, agent_session, ask, server_env
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.procs import until

BASE_PROMPT = "You are a coding agent working inside the user's editor."


# -- helpers ---------------------------------------------------------------------------


class Home:
    """A user's home for one test: ``$HOME`` and ``$XDG_CONFIG_HOME`` (``~/.config``), so
    the user's own files live in ``~/.config/agent-lsp/``."""

    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.config = self.home / ".config"
        self.agent = self.config / "agent-lsp"
        self.agent.mkdir(parents=True)

    def env(self, model: ScriptedModel, **extra: str | None) -> dict[str, str]:
        return server_env(
            model.base_url, HOME=str(self.home), XDG_CONFIG_HOME=str(self.config), **extra
        )


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def skill(folder: Path, name: str, description: str, body: str = "") -> Path:
    return write(
        folder / name / "SKILL.md",
        f"---\nname: {name}\ndescription: {description}\n---\n{body}\n",
    )


def system_of(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    assert first["role"] == "system"
    return first["content"]


def user_texts(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def tool_result(body: dict[str, Any], call_id: str) -> str:
    found = [m["content"] for m in body["messages"] if m.get("tool_call_id") == call_id]
    assert len(found) == 1, body["messages"]
    return found[0]


def environment_of(system: str) -> str:
    assert system.startswith("<environment>\n"), system[:200]
    return system[: system.index("</environment>")]


def folder_line(system: str, root: Path) -> str:
    prefix = f"Workspace folder: {root.resolve()} ("
    lines = [line for line in environment_of(system).splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, environment_of(system)
    return lines[0]


async def request(client: AgentTestClient, method: str, params: dict[str, Any]) -> Any:
    return await client.protocol.send_request_async(method, params)


def shown(client: AgentTestClient, text: str) -> list[str]:
    return [m.message for m in client.messages if text in m.message]


async def warned(client: AgentTestClient, text: str) -> str:
    """The one window/showMessage warning that contains ``text`` (waited for)."""
    await until(lambda: shown(client, text))
    found = shown(client, text)
    assert len(found) == 1, found
    warning = next(m for m in client.messages if text in m.message)
    assert warning.type == types.MessageType.Warning
    return found[0]


def git(root: Path, *args: str) -> str:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "LC_ALL": "C",
    }
    done = subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout


def git_repo(root: Path, branch: str) -> None:
    write(root / "app.py", "print(1)\n")
    git(root, "init", "-q", "-b", branch)
    git(root, "add", "app.py")
    git(root, "commit", "-q", "-m", "first")


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


# -- the system prompt: its parts and their order -------------------------------------


async def test_system_prompt_parts_in_order(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    write(home.agent / "AGENTS.md", "USER-RULE: answer in English.\n")
    write(workspace / "AGENTS.md", "WORKSPACE-AGENTS-RULE: use pnpm.\n")
    write(workspace / "CLAUDE.md", "WORKSPACE-CLAUDE-RULE\n")
    write(workspace / ".github/copilot-instructions.md", "COPILOT-RULE\n")
    skill(home.agent / "skills", "review", "Review a change carefully.", "USER-SKILL-BODY")
    model.reply("ok")
    async with agent_session(home.env(model), [workspace]) as client:
        await ask(client, prompt="hi")
    system = system_of(model.bodies[0])

    environment = environment_of(system)
    for label in ("OS: ", "Shell: ", "Date: ", "Workspace folder: ", "Sandbox: ", "Approval: "):
        assert f"\n{label}" in environment, environment
    order = [
        system.index("</environment>"),
        system.index(BASE_PROMPT),
        system.index("# Skills"),
        system.index("# Instructions from ~/.config/agent-lsp/AGENTS.md\n\nUSER-RULE"),
        system.index("# Instructions from AGENTS.md\n\nWORKSPACE-AGENTS-RULE"),
    ]
    assert order == sorted(order), order
    # The first of instructionFiles only; a skill's body is never in the prompt.
    assert "WORKSPACE-CLAUDE-RULE" not in system
    assert "COPILOT-RULE" not in system
    assert "USER-SKILL-BODY" not in system
    assert system.count("# Instructions from") == 2


async def test_the_next_file_of_the_list_when_the_first_is_missing(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    write(workspace / ".github/copilot-instructions.md", "COPILOT-RULE\n")
    model.reply("ok")
    async with agent_session(home.env(model), [workspace]) as client:
        await ask(client, prompt="hi")
    system = system_of(model.bodies[0])
    assert "# Instructions from .github/copilot-instructions.md\n\nCOPILOT-RULE" in system
    # Nothing at all without the user's file, skills or workspace files: no empty sections.
    assert "# Skills" not in system


async def test_the_instruction_files_setting_changes_the_list(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    write(workspace / "AGENTS.md", "AGENTS-RULE\n")
    write(workspace / "CLAUDE.md", "CLAUDE-RULE\n")
    write(workspace / "docs/RULES.md", "DOCS-RULE\n")
    model.reply("one")
    model.reply("two")
    async with agent_session(
        home.env(model), [workspace], settings={"instructionFiles": ["CLAUDE.md", "AGENTS.md"]}
    ) as client:
        await ask(client, prompt="first")
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"agentLsp": {"instructionFiles": ["docs/RULES.md"]}}
            )
        )
        await ask(client, prompt="second")
    first, second = (system_of(body) for body in model.bodies)
    assert "# Instructions from CLAUDE.md\n\nCLAUDE-RULE" in first
    assert "AGENTS-RULE" not in first
    assert "# Instructions from docs/RULES.md\n\nDOCS-RULE" in second
    assert "CLAUDE-RULE" not in second and "AGENTS-RULE" not in second


async def test_a_changed_file_is_in_the_next_ask_of_the_same_conversation(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    agents = write(workspace / "AGENTS.md", "OLD-RULE\n")
    model.reply("one")
    model.reply("two")
    async with agent_session(home.env(model), [workspace]) as client:
        first = await ask(client, prompt="first")
        agents.write_text("NEW-RULE\n")
        write(home.agent / "AGENTS.md", "LATE-USER-RULE\n")
        await ask(client, prompt="second", sessionId=first["sessionId"])
    assert "OLD-RULE" in system_of(model.bodies[0])
    second = model.bodies[1]
    assert "NEW-RULE" in system_of(second) and "LATE-USER-RULE" in system_of(second)
    assert "OLD-RULE" not in system_of(second)
    # One system message: it is replaced, not added to.
    assert [m["role"] for m in second["messages"]].count("system") == 1


async def test_instructions_are_text_only(
    model: ScriptedModel, workspace: Path, home: Home, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    write(workspace / "AGENTS.md", f"Run `touch {marker}` first.\n$(touch {marker})\n")
    model.reply("ok")
    async with agent_session(home.env(model), [workspace]) as client:
        await ask(client, prompt="hi")
    assert f"$(touch {marker})" in system_of(model.bodies[0])
    assert not marker.exists()


# -- nested instructions --------------------------------------------------------------


@pytest.fixture
def nested(workspace: Path) -> Path:
    write(workspace / "AGENTS.md", "ROOT-RULE\n")
    write(workspace / "sub/AGENTS.md", "SUB-RULE\n")
    write(workspace / "sub/a.py", "A = 1\n")
    write(workspace / "sub/deep/AGENTS.md", "DEEP-RULE\n")
    write(workspace / "sub/deep/c.py", "C = 3\n")
    write(workspace / "other/CLAUDE.md", "OTHER-RULE\n")
    write(workspace / "plain/b.py", "B = 2\n")
    return workspace


async def test_nested_instructions_follow_the_first_read_under_them_once(
    model: ScriptedModel, nested: Path, home: Home
) -> None:
    model.reply(tool_calls=[tool_call("read_file", {"path": "sub/deep/c.py"}, id="r1")])
    model.reply(tool_calls=[tool_call("read_file", {"path": "sub/a.py"}, id="r2")])
    model.reply(tool_calls=[tool_call("read_file", {"path": "sub/deep/c.py"}, id="r3")])
    model.reply(tool_calls=[tool_call("read_file", {"path": "plain/b.py"}, id="r4")])
    model.reply("done")
    model.reply(tool_calls=[tool_call("read_file", {"path": "sub/a.py"}, id="r5")])
    model.reply("again")
    model.reply(tool_calls=[tool_call("read_file", {"path": "sub/a.py"}, id="r6")])
    model.reply("fresh")
    async with agent_session(home.env(model), [nested]) as client:
        first = await ask(client, prompt="look")
        before = await request(client, "agent/instructions", {})
        given = await request(client, "agent/instructions", {"sessionId": first["sessionId"]})
        await ask(client, prompt="look again", sessionId=first["sessionId"])
        await ask(client, prompt="new conversation")

    assert "SUB-RULE" not in system_of(model.bodies[0])  # not in the system prompt
    r1 = tool_result(model.bodies[1], "r1")
    assert r1.startswith("C = 3")
    assert "[Instructions for the files under sub/, sub/deep/:" in r1
    # Outermost first: the more specific one comes later and takes precedence.
    assert r1.index("# Instructions from sub/AGENTS.md\n\nSUB-RULE") < r1.index(
        "# Instructions from sub/deep/AGENTS.md\n\nDEEP-RULE"
    )
    assert "ROOT-RULE" not in r1  # the root's is in the system prompt already
    # Once per conversation: later reads under the same folders get the file alone.
    assert tool_result(model.bodies[2], "r2") == "A = 1"
    assert tool_result(model.bodies[3], "r3") == "C = 3"
    assert tool_result(model.bodies[4], "r4") == "B = 2"
    assert tool_result(model.bodies[6], "r5") == "A = 1"  # a follow-up ask: still given
    # Still in the conversation's history, once.
    history = "\n".join(str(m.get("content")) for m in model.bodies[6]["messages"])
    assert history.count("SUB-RULE") == 1
    # A new conversation is told again.
    r6 = tool_result(model.bodies[8], "r6")
    assert "# Instructions from sub/AGENTS.md\n\nSUB-RULE" in r6
    assert "DEEP-RULE" not in r6

    root = nested.resolve()
    assert [(i["name"], i["source"]) for i in before["instructions"]] == [
        ("AGENTS.md", "workspace")
    ]
    assert [(i["name"], i["source"]) for i in given["instructions"]] == [
        ("AGENTS.md", "workspace"),
        ("sub/AGENTS.md", "nested"),
        ("sub/deep/AGENTS.md", "nested"),
    ]
    sub = given["instructions"][1]
    assert sub["path"] == str(root / "sub/AGENTS.md")
    assert sub["uri"] == (root / "sub/AGENTS.md").as_uri()
    assert sub["bytes"] == len("SUB-RULE\n") and sub["cut"] is False


async def test_writes_and_edits_bring_nested_instructions_too(
    model: ScriptedModel, nested: Path, home: Home
) -> None:
    # The first ask reads sub/a.py with no instruction files at all (an empty list: no
    # folder is looked at), so the second one's edit is the first call that meets sub/.
    model.reply(tool_calls=[tool_call("read_file", {"path": "sub/a.py"}, id="r1")])
    model.reply("read")
    model.reply(
        tool_calls=[
            tool_call("write_file", {"path": "other/new.txt", "content": "x\n"}, id="w1"),
            tool_call(
                "edit_file", {"path": "sub/a.py", "old_text": "A = 1", "new_text": "A = 2"}, id="e1"
            ),
        ]
    )
    model.reply("done")
    async with agent_session(
        home.env(model), [nested], settings={"instructionFiles": []}
    ) as client:
        first = await ask(client, prompt="read")
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"agentLsp": {}})
        )
        await ask(client, prompt="change", sessionId=first["sessionId"])
    assert tool_result(model.bodies[1], "r1") == "A = 1"
    assert "ROOT-RULE" not in system_of(model.bodies[0])
    assert "ROOT-RULE" in system_of(model.bodies[2])
    sent = model.bodies[3]
    w1, e1 = tool_result(sent, "w1"), tool_result(sent, "e1")
    assert "# Instructions from other/CLAUDE.md\n\nOTHER-RULE" in w1
    assert "[Instructions for the files under other/:" in w1
    assert "# Instructions from sub/AGENTS.md\n\nSUB-RULE" in e1, e1
    assert (nested / "sub/a.py").read_text() == "A = 2\n"


async def test_a_failed_read_brings_no_instructions(
    model: ScriptedModel, nested: Path, home: Home
) -> None:
    model.reply(tool_calls=[tool_call("read_file", {"path": "sub/missing.py"}, id="m1")])
    model.reply(tool_calls=[tool_call("read_file", {"path": "sub/a.py"}, id="m2")])
    model.reply("done")
    async with agent_session(home.env(model), [nested]) as client:
        await ask(client, prompt="look")
    missing = tool_result(model.bodies[1], "m1")
    assert missing.startswith("Error") and "SUB-RULE" not in missing
    assert "SUB-RULE" in tool_result(model.bodies[2], "m2")


# -- the cap --------------------------------------------------------------------------


async def test_a_file_over_the_cap_is_cut_said_and_warned_about_once(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    text = "HEAD-MARK " + "x" * 300 + " TAIL-MARK\n"
    write(workspace / "AGENTS.md", text)
    model.reply("one")
    model.reply("two")
    async with agent_session(
        home.env(model), [workspace], settings={"instructionsMaxBytes": 100}
    ) as client:
        await ask(client, prompt="first")
        warning = await warned(client, "AGENTS.md is")
        result = await request(client, "agent/instructions", {})
        await ask(client, prompt="second")
        messages = [m.message for m in client.messages]
    size = len(text.encode())
    system = system_of(model.bodies[0])
    assert "HEAD-MARK" in system and "TAIL-MARK" not in system
    assert f"[cut: only the first 100 of {size:,} bytes of AGENTS.md are given]" in system
    assert warning == (
        f"agent-lsp: AGENTS.md is {size:,} bytes: only its first 100 are given to the model "
        "(instructionsMaxBytes)"
    )
    assert [m for m in messages if "AGENTS.md is" in m] == [warning]  # once, not per ask
    (info,) = result["instructions"]
    assert (info["name"], info["bytes"], info["cut"]) == ("AGENTS.md", size, True)
    assert any("AGENTS.md is" in w for w in result["warnings"])


async def test_the_cap_counts_all_the_files_together(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    user = "U" * 60 + "\n"  # 61 bytes of the 100
    write(home.agent / "AGENTS.md", user)
    write(workspace / "AGENTS.md", "W" * 80 + "\n")
    model.reply("ok")
    async with agent_session(
        home.env(model), [workspace], settings={"instructionsMaxBytes": 100}
    ) as client:
        await ask(client, prompt="hi")
        result = await request(client, "agent/instructions", {})
    system = system_of(model.bodies[0])
    assert "U" * 60 in system
    assert "W" * 39 in system and "W" * 40 not in system
    assert "[cut: only the first 39 of 81 bytes of AGENTS.md are given]" in system
    cut = {i["source"]: i["cut"] for i in result["instructions"]}
    assert cut == {"user": False, "workspace": True}


# -- the file store: an unsaved buffer, a symlink out ----------------------------------


async def test_an_unsaved_agents_md_buffer_is_what_the_model_sees(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    agents = write(workspace / "AGENTS.md", "DISK-RULE\n")
    write(workspace / "sub/AGENTS.md", "SUB-DISK-RULE\n")
    write(workspace / "sub/a.py", "A = 1\n")
    model.reply(tool_calls=[tool_call("read_file", {"path": "sub/a.py"}, id="r1")])
    model.reply("ok")
    async with agent_session(
        home.env(model),
        [workspace],
        client_factory=make_editor_client,
        capabilities=EDITOR_CAPABILITIES,
    ) as client:
        editor = client.editor  # type: ignore[attr-defined]
        editor.type(editor.open(agents), "DISK-RULE", "BUFFER-RULE")
        sub = editor.open(workspace / "sub/AGENTS.md")
        editor.type(sub, "SUB-DISK-RULE", "SUB-BUFFER-RULE")
        await ask(client, prompt="hi")
    assert agents.read_text() == "DISK-RULE\n"  # unsaved
    system = system_of(model.bodies[0])
    assert "# Instructions from AGENTS.md\n\nBUFFER-RULE" in system
    assert "DISK-RULE" not in system
    note = tool_result(model.bodies[1], "r1")
    assert "SUB-BUFFER-RULE" in note and "SUB-DISK-RULE" not in note


async def test_a_symlinked_agents_md_pointing_outside_is_refused(
    model: ScriptedModel, workspace: Path, home: Home, tmp_path: Path
) -> None:
    outside = write(tmp_path / "elsewhere/secret.md", "OUTSIDE-RULE\n")
    (workspace / "AGENTS.md").symlink_to(outside)
    write(workspace / "sub/a.py", "A = 1\n")
    (workspace / "sub/AGENTS.md").symlink_to(outside)
    model.reply(tool_calls=[tool_call("read_file", {"path": "sub/a.py"}, id="r1")])
    model.reply("ok")
    async with agent_session(home.env(model), [workspace]) as client:
        await ask(client, prompt="hi")
        warning = await warned(client, "agent-lsp: AGENTS.md leads outside")
        nested_warning = await warned(client, "agent-lsp: sub/AGENTS.md leads outside")
        result = await request(client, "agent/instructions", {})
    assert "OUTSIDE-RULE" not in system_of(model.bodies[0])
    assert "# Instructions from" not in system_of(model.bodies[0])
    assert tool_result(model.bodies[1], "r1") == "A = 1"
    assert warning == "agent-lsp: AGENTS.md leads outside the workspace: not used as instructions"
    assert nested_warning.startswith("agent-lsp: sub/AGENTS.md")
    assert result["instructions"] == []
    assert any("leads outside the workspace" in w for w in result["warnings"])


async def test_a_symlink_inside_the_workspace_is_followed(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    write(workspace / "docs/rules.md", "LINKED-RULE\n")
    (workspace / "AGENTS.md").symlink_to(Path("docs/rules.md"))
    model.reply("ok")
    async with agent_session(home.env(model), [workspace]) as client:
        await ask(client, prompt="hi")
        result = await request(client, "agent/instructions", {})
    assert "# Instructions from AGENTS.md\n\nLINKED-RULE" in system_of(model.bodies[0])
    assert result["instructions"][0]["path"] == str(workspace.resolve() / "docs/rules.md")


# -- skills ---------------------------------------------------------------------------


async def test_skills_are_discovered_listed_and_a_malformed_one_skipped(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    user_skill = skill(home.agent / "skills", "review", "Review a change.", "USER-BODY")
    skill(workspace / ".agents/skills", "deploy", "Deploy the app.", "DEPLOY-BODY")
    skill(workspace / ".claude/skills", "lint", "Lint  the\n  code.", "LINT-BODY")
    write(workspace / ".agents/skills/broken/SKILL.md", "---\nname: [broken\n---\nBROKEN\n")
    write(workspace / ".claude/skills/nameless/SKILL.md", "---\ndescription: no name\n---\n")
    write(workspace / ".agents/skills/unfenced/SKILL.md", "---\nname: x\ndescription: y\n")
    write(workspace / ".agents/skills/not-a-skill/README.md", "no SKILL.md here\n")
    skill(workspace / ".claude/skills", "review", "A second review.")  # the first name wins
    model.reply("ok")
    async with agent_session(home.env(model), [workspace]) as client:
        await ask(client, prompt="hi")
        broken = await warned(client, ".agents/skills/broken/SKILL.md")
        nameless = await warned(client, ".claude/skills/nameless/SKILL.md")
        unfenced = await warned(client, ".agents/skills/unfenced/SKILL.md")
        result = await request(client, "agent/instructions", {})
    system = system_of(model.bodies[0])
    skills = system[system.index("# Skills") :]
    assert f"- review: Review a change. ({user_skill})" in skills
    assert "- deploy: Deploy the app. (.agents/skills/deploy/SKILL.md)" in skills
    assert "- lint: Lint the code. (.claude/skills/lint/SKILL.md)" in skills
    assert [line for line in skills.splitlines() if line.startswith("- ")] == [
        f"- review: Review a change. ({user_skill})",
        "- deploy: Deploy the app. (.agents/skills/deploy/SKILL.md)",
        "- lint: Lint the code. (.claude/skills/lint/SKILL.md)",
    ]
    for body in ("USER-BODY", "DEPLOY-BODY", "LINT-BODY", "BROKEN"):
        assert body not in system
    assert broken.startswith("agent-lsp: skill .agents/skills/broken/SKILL.md skipped: ")
    assert "not valid YAML" in broken
    assert nameless.endswith("skipped: its front matter has no name")
    assert unfenced.endswith("skipped: the front matter has no closing --- line")
    root = workspace.resolve()
    assert [(s["name"], s["source"], s["path"]) for s in result["skills"]] == [
        ("review", "user", str(user_skill)),
        ("deploy", "workspace", str(root / ".agents/skills/deploy/SKILL.md")),
        ("lint", "workspace", str(root / ".claude/skills/lint/SKILL.md")),
    ]
    assert len([w for w in result["warnings"] if w.startswith("skill ")]) == 3


async def test_a_workspace_skill_linked_outside_is_skipped(
    model: ScriptedModel, workspace: Path, home: Home, tmp_path: Path
) -> None:
    outside = skill(tmp_path / "elsewhere", "escape", "Outside the workspace.")
    (workspace / ".agents/skills").mkdir(parents=True)
    (workspace / ".agents/skills/escape").symlink_to(outside.parent)
    model.reply("ok")
    async with agent_session(home.env(model), [workspace]) as client:
        await ask(client, prompt="hi")
        await warned(client, "escape/SKILL.md leads outside the workspace")
    assert "Outside the workspace." not in system_of(model.bodies[0])


async def test_read_file_reads_a_user_skill_but_nothing_beside_its_folder(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    user_skill = skill(home.agent / "skills", "review", "Review a change.", "SKILL-BODY-TEXT")
    write(user_skill.parent / "checklist.md", "CHECKLIST-TEXT\n")
    config = write(home.agent / "config.toml", "# CONFIG-SECRET\n")
    config.chmod(0o600)
    write(home.agent / "notes.txt", "NOTES-SECRET\n")
    (user_skill.parent / "link.txt").symlink_to(config)
    skills = home.agent / "skills"
    calls = {
        "skill": str(user_skill),
        "beside": str(user_skill.parent / "checklist.md"),
        "config": str(config),
        "notes": str(home.agent / "notes.txt"),
        "dotdot": f"{skills}/../config.toml",
        "link": str(user_skill.parent / "link.txt"),
    }
    model.reply(tool_calls=[tool_call("read_file", {"path": p}, id=k) for k, p in calls.items()])
    model.reply("ok")
    async with agent_session(home.env(model), [workspace]) as client:
        await ask(client, prompt="review it")
    sent = model.bodies[1]
    assert tool_result(sent, "skill").startswith("---\nname: review")
    assert "SKILL-BODY-TEXT" in tool_result(sent, "skill")
    assert tool_result(sent, "beside") == "CHECKLIST-TEXT"
    for refused in ("config", "notes", "dotdot", "link"):
        out = tool_result(sent, refused)
        assert out.startswith("Error"), (refused, out)
        assert "SECRET" not in out


# -- the environment block -------------------------------------------------------------


def sandbox_available() -> bool:
    from tools.sandbox import support

    return support().available


needs_sandbox = pytest.mark.skipif(
    not sandbox_available(), reason="the bash sandbox is not available here"
)


@needs_sandbox
@pytest.mark.parametrize(
    ("settings", "sandbox", "approval"),
    [
        (
            {},
            "Sandbox: workspace-write: bash may write the workspace and its own temporary folder "
            "($TMPDIR); everything else is read-only; network: off (a command that needs it "
            'must ask: escalation "network"); nothing outlives a call',
            "Approval: on-request (",
        ),
        (
            {
                "sandbox": "read-only",
                "allowedDomains": ["example.com", "*.pypi.org"],
                "approval": "always",
            },
            "Sandbox: read-only: bash may write only its own temporary folder ($TMPDIR); the "
            "workspace is read-only; network: off, except these hosts through a proxy: "
            "example.com, *.pypi.org; nothing outlives a call",
            "Approval: always (",
        ),
        (
            {"sandbox": "workspace-write", "network": True, "approval": "never"},
            "Sandbox: workspace-write: bash may write the workspace and its own temporary folder "
            "($TMPDIR); everything else is read-only; network: on; nothing outlives a call",
            "Approval: never (",
        ),
        (
            {"sandbox": "off"},
            "Sandbox: none (sandbox off): bash commands run with the user's full rights",
            "Approval: on-request (",
        ),
    ],
)
async def test_the_environment_block_reflects_the_sandbox_settings(
    model: ScriptedModel,
    workspace: Path,
    home: Home,
    settings: dict[str, Any],
    sandbox: str,
    approval: str,
) -> None:
    model.reply("ok")
    async with agent_session(home.env(model), [workspace], settings=settings) as client:
        await ask(client, prompt="hi")
    lines = environment_of(system_of(model.bodies[0])).splitlines()
    assert [line for line in lines if line.startswith("Sandbox: ")] == [sandbox]
    assert next(line for line in lines if line.startswith("Approval: ")).startswith(approval)
    assert folder_line(system_of(model.bodies[0]), workspace).endswith("(not a git repository)")


@needs_sandbox
async def test_writable_roots_are_in_the_block_and_a_changed_setting_in_the_next_ask(
    model: ScriptedModel, workspace: Path, home: Home, tmp_path: Path
) -> None:
    extra = tmp_path / "cache"
    extra.mkdir()
    model.reply("one")
    model.reply("two")
    async with agent_session(
        home.env(model), [workspace], settings={"writableRoots": [str(extra)]}
    ) as client:
        first = await ask(client, prompt="first")
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"agentLsp": {"sandbox": "read-only", "approval": "always"}}
            )
        )
        await ask(client, prompt="second", sessionId=first["sessionId"])
    one, two = (environment_of(system_of(body)) for body in model.bodies)
    assert f"bash may write the workspace, {extra}" in one
    assert "Sandbox: read-only:" in two and "Approval: always" in two
    assert "Sandbox: read-only:" not in one


@needs_git
async def test_the_block_names_the_branch_and_a_status_summary(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    git_repo(workspace, "feature-x")
    (workspace / "app.py").write_text("print(2)\n")
    write(workspace / "new.txt", "new\n")
    model.reply("ok")
    async with agent_session(home.env(model), [workspace]) as client:
        await ask(client, prompt="hi")
    line = folder_line(system_of(model.bodies[0]), workspace)
    assert line.endswith(
        "(git repository, branch feature-x; 1 changed, 1 untracked: M app.py, ?? new.txt)"
    ), line


@needs_git
async def test_a_clean_repository_and_a_detached_head(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    git_repo(workspace, "main")
    head = git(workspace, "rev-parse", "HEAD").strip()
    model.reply("one")
    model.reply("two")
    async with agent_session(home.env(model), [workspace]) as client:
        first = await ask(client, prompt="first")
        git(workspace, "checkout", "-q", "--detach")
        await ask(client, prompt="second", sessionId=first["sessionId"])
    one, two = (folder_line(system_of(body), workspace) for body in model.bodies)
    assert one.endswith("(git repository, branch main; clean working tree)"), one
    assert f"(git repository, detached HEAD at {head[:12]}; " in two, two


@pytest.fixture
def hanging_git(tmp_path: Path) -> Path:
    """A folder whose ``git`` hangs 30 s for a status, and is the real git otherwise (the
    checkpoints use git too)."""
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "bin"
    script = write(
        folder / "git",
        "#!/bin/sh\n"
        f'for a in "$@"; do [ "$a" = status ] && exec sleep 30; done\nexec {real} "$@"\n',
    )
    script.chmod(0o755)
    return folder


@needs_git
async def test_a_hanging_git_does_not_delay_the_ask_beyond_its_budget(
    model: ScriptedModel, workspace: Path, home: Home, hanging_git: Path
) -> None:
    git_repo(workspace, "slow")
    # The server's temp dir elsewhere: a git in the tests' one would never be chosen.
    server_tmp = hanging_git.parent / "server-tmp"
    server_tmp.mkdir()
    env = home.env(model, PATH=f"{hanging_git}:{os.environ['PATH']}", TMPDIR=str(server_tmp))
    model.reply("ok")
    async with agent_session(env, [workspace]) as client:
        started = time.monotonic()
        await ask(client, prompt="hi")
        took = time.monotonic() - started
    line = folder_line(system_of(model.bodies[0]), workspace)
    assert line.endswith("(git repository, branch slow; status skipped (git took longer than 1 s))")
    assert took < 10, took  # the hung git sleeps 30 s


@needs_git
async def test_a_repository_fsmonitor_is_never_run(
    model: ScriptedModel, workspace: Path, home: Home, tmp_path: Path
) -> None:
    git_repo(workspace, "main")
    marker = tmp_path / "fsmonitor-ran"
    hook = write(tmp_path / "hook.sh", f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(workspace, "config", "core.fsmonitor", str(hook))
    git(workspace, "status", "--porcelain")  # the hook is potent: plain git runs it
    assert marker.exists()
    marker.unlink()
    model.reply("ok")
    async with agent_session(home.env(model), [workspace]) as client:
        await ask(client, prompt="hi")
    line = folder_line(system_of(model.bodies[0]), workspace)
    assert "git repository, branch main; status not read" in line, line
    assert not marker.exists()


# -- the user's commands ---------------------------------------------------------------


@pytest.fixture
def commands(workspace: Path, home: Home) -> Path:
    write(
        home.agent / "commands/greet.md",
        "---\ndescription: user greeting\n---\nUSER GREET $ARGUMENTS\n",
    )
    write(
        home.agent / "commands/review.md",
        "---\ndescription: Review a file\nargument-hint: '[file] [focus]'\n---\n"
        "Review $1 with a focus on $2. Everything: $ARGUMENTS. Unused: [$3]\n",
    )
    write(home.agent / "commands/plain.md", "Explain the code.\n")
    write(
        workspace / ".agents/commands/greet.md",
        "---\ndescription: Greet someone\n---\nSay hello to $ARGUMENTS.\n",
    )
    return workspace


async def test_commands_expand_with_arguments(
    model: ScriptedModel, commands: Path, home: Home
) -> None:
    prompts = [
        '/review src/app.py "error handling"',
        "/greet Ann and Bob",
        "/plain app.py please",
        "/nosuch thing",
        "/compact",
        "no /review here",
    ]
    for _ in prompts:
        model.reply("ok")
    async with agent_session(home.env(model), [commands]) as client:
        for prompt in prompts:
            await ask(client, prompt=prompt)
    sent = [user_texts(body)[-1] for body in model.bodies]
    assert sent == [
        "Review src/app.py with a focus on error handling. Everything: "
        'src/app.py "error handling". Unused: []',
        "Say hello to Ann and Bob.",  # the workspace's file wins over the user's
        "Explain the code.\n\napp.py please",  # a file that names no argument gets them
        "/nosuch thing",  # unknown: as typed
        "/compact",  # a built-in is a client action: as typed
        "no /review here",
    ]


async def test_list_commands(model: ScriptedModel, commands: Path, home: Home) -> None:
    async with agent_session(home.env(model), [commands]) as client:
        result = await request(client, "agent/listCommands", {})
    listed = {c["name"]: c for c in result["commands"]}
    names = [c["name"] for c in result["commands"]]
    assert names[:4] == ["checkpoints", "compact", "new", "undo"]  # built-ins first
    assert names[4:] == ["greet", "plain", "review"]
    for name in ("checkpoints", "compact", "new", "undo"):
        assert listed[name]["source"] == "builtin"
        assert listed[name]["description"]
        assert listed[name].get("path") is None
    assert listed["undo"]["argumentHint"] == "[checkpoint id]"
    root = commands.resolve()
    greet = listed["greet"]
    assert (greet["description"], greet["source"]) == ("Greet someone", "workspace")
    assert greet["path"] == str(root / ".agents/commands/greet.md")
    assert greet.get("argumentHint") is None
    assert listed["review"]["source"] == "user"
    assert listed["review"]["argumentHint"] == "[file] [focus]"
    assert listed["review"]["description"] == "Review a file"
    assert listed["review"]["path"] == str(home.agent / "commands/review.md")
    assert listed["plain"]["description"] == "Explain the code."  # no front matter


async def test_list_commands_and_instructions_per_folder_and_session(
    model: ScriptedModel, tmp_path: Path, home: Home
) -> None:
    one = tmp_path / "one"
    two = tmp_path / "two"
    write(one / ".agents/commands/only-one.md", "first folder\n")
    write(one / "AGENTS.md", "ONE-RULE\n")
    write(two / ".agents/commands/only-two.md", "second folder\n")
    write(two / "CLAUDE.md", "TWO-RULE\n")
    skill(two / ".claude/skills", "two-skill", "Only in two.")
    model.reply("ok")
    async with agent_session(home.env(model), [one, two]) as client:
        session = await request(client, "agent/newSession", {"workspaceFolder": two.as_uri()})
        by_default = await request(client, "agent/listCommands", {})
        by_folder = await request(client, "agent/listCommands", {"workspaceFolder": two.as_uri()})
        by_session = await request(
            client, "agent/listCommands", {"sessionId": session["sessionId"]}
        )
        told_default = await request(client, "agent/instructions", {})
        told_session = await request(
            client, "agent/instructions", {"sessionId": session["sessionId"]}
        )
        await ask(client, prompt="/only-two", sessionId=session["sessionId"])

    def prompt_files(result: dict[str, Any]) -> list[str]:
        return [c["name"] for c in result["commands"] if c["source"] != "builtin"]

    assert prompt_files(by_default) == ["only-one"]
    assert prompt_files(by_folder) == ["only-two"]
    assert prompt_files(by_session) == ["only-two"]
    assert [i["name"] for i in told_default["instructions"]] == ["AGENTS.md"]
    assert told_default["skills"] == []
    assert [i["path"] for i in told_session["instructions"]] == [str(two.resolve() / "CLAUDE.md")]
    assert [s["name"] for s in told_session["skills"]] == ["two-skill"]
    assert user_texts(model.bodies[0]) == ["second folder"]
    assert "TWO-RULE" in system_of(model.bodies[0])


async def test_a_malformed_command_is_skipped_with_a_warning(
    model: ScriptedModel, workspace: Path, home: Home
) -> None:
    write(workspace / ".agents/commands/bad.md", "---\ndescription: [oops\n---\nBAD BODY\n")
    write(workspace / ".agents/commands/compact.md", "SHADOW COMPACT\n")
    model.reply("ok")
    model.reply("ok")
    async with agent_session(home.env(model), [workspace]) as client:
        result = await request(client, "agent/listCommands", {})
        bad = await warned(client, "command .agents/commands/bad.md skipped")
        shadow = await warned(client, "command .agents/commands/compact.md skipped")
        await ask(client, prompt="/bad x")
        await ask(client, prompt="/compact")
    assert "not valid YAML" in bad
    assert "built-in" in shadow
    listed = {c["name"]: c["source"] for c in result["commands"]}
    assert "bad" not in listed and listed["compact"] == "builtin"
    assert [user_texts(b)[-1] for b in model.bodies] == ["/bad x", "/compact"]


# -- unit: front matter -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "meta", "body"),
    [
        ("no front matter\n---\nx: 1\n---\n", {}, "no front matter\n---\nx: 1\n---\n"),
        ("", {}, ""),
        ("---x\nname: a\n---\n", {}, "---x\nname: a\n---\n"),  # not a fence line
        ("----\nname: a\n----\n", {}, "----\nname: a\n----\n"),
        ("---\nname: a\n---\nbody\n", {"name": "a"}, "body\n"),
        ("---  \nname: a\n---   \nbody", {"name": "a"}, "body"),  # trailing blanks
        ("---\n---\nbody", {}, "body"),  # empty
        ("---\n# only a comment\n---\nbody", {}, "body"),  # YAML null
        ("---\nname: a\n---", {"name": "a"}, ""),  # nothing after the fence
        ("---\nname: a\n---\n---\nmore\n", {"name": "a"}, "---\nmore\n"),  # first fence
        ("---\na: |\n  x\n  ---\n---\nb", {"a": "x\n---"}, "b"),  # indented: not a fence
        ("---\r\nname: a\r\n---\r\nbody\r\n", {"name": "a"}, "body\r\n"),  # CRLF
        ("---\nname: 'a: b'\nn: 3\n---\n", {"name": "a: b", "n": 3}, ""),
    ],
)
def test_front_matter_split(text: str, meta: dict[str, Any], body: str) -> None:
    assert split(text) == (meta, body)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\nname: a\n", "no closing --- line"),
        ("---\nname: [a\n---\n", "not valid YAML"),
        ("---\n- a\n- b\n---\n", "must be a mapping"),
        ("---\njust text\n---\n", "must be a mapping"),
        ("---\n!!python/object/apply:os.system ['true']\n---\n", "not valid YAML"),
        ("---\nx: !!python/name:os.system\n---\n", "not valid YAML"),
    ],
)
def test_front_matter_problems(text: str, problem: str) -> None:
    with pytest.raises(FrontMatterError, match=problem):
        split(text)


def test_a_yaml_error_names_the_line_in_the_file() -> None:
    # Line 1 is the opening fence, so the YAML's second line is the file's third.
    with pytest.raises(FrontMatterError, match=r"\(line 3\)"):
        split("---\nname: a\ndescription: [b\n---\n")


# -- unit: command expansion ------------------------------------------------------------


def table(**bodies: str) -> cmds.Commands:
    found = cmds.discover(None, None)
    for name, body in bodies.items():
        found.commands[name] = cmds.Command(name, "", "user", body=body)
    return found


@pytest.mark.parametrize(
    ("prompt", "expanded"),
    [
        ("/all one two", "<one two>"),
        ("/all   spaced   out  ", "<spaced   out>"),
        ("/all", "<>"),
        # "$10" is "$1" followed by "0".
        ("/pos a b c d e f g h i j", "i a b [a0] a b c d e f g h i j"),
        ("/pos a", " a  [a0] a"),
        ('/pos "two words" b', ' two words b [two words0] "two words" b'),
        ("/pos it's", " it's  [it's0] it's"),  # unbalanced quote: split on blanks
        ("/pos $2 x", " $2 x [$20] $2 x"),  # a $N typed in the arguments stays
        ("/first $ARGUMENTS x", "$ARGUMENTS | $ARGUMENTS x"),  # so does a typed $ARGUMENTS
        ("/none", "Fixed."),
        ("/none extra words", "Fixed.\n\nextra words"),
        ("/unknown x", "/unknown x"),
        ("/undo 3", "/undo 3"),  # a built-in: as typed
        ("/compact", "/compact"),
        ("all x", "all x"),  # no slash
        (" /all x", " /all x"),  # not at the start
        ("/", "/"),
    ],
)
def test_expand(prompt: str, expanded: str) -> None:
    found = table(
        all="<$ARGUMENTS>", pos="$9 $1 $2 [$10] $ARGUMENTS", first="$1 | $ARGUMENTS", none="Fixed."
    )
    text, used = cmds.expand(prompt, found)
    assert text == expanded
    assert (used is not None) == (expanded != prompt)


def test_discover_the_workspace_wins_and_names_are_plain_words(tmp_path: Path) -> None:
    from tooling.workspace import Workspace

    user = tmp_path / "user"
    root = tmp_path / "root"
    write(user / "same.md", "---\ndescription: user one\n---\nUSER\n")
    write(user / "mine.md", "MINE $1\n")
    write(user / "notes.txt", "not a command\n")
    write(user / "two words.md", "x\n")
    write(root / ".agents/commands/same.md", "---\ndescription: mine\n---\nWORKSPACE\n")
    found = cmds.discover(user, Workspace(root))
    assert found.commands["same"].source == "workspace"
    assert found.commands["same"].body == "WORKSPACE"
    assert found.commands["mine"].description == "MINE $1"
    assert "notes" not in found.commands
    assert "two words" not in found.commands
    assert any("two words.md" in w and "plain word" in w for w in found.warnings)
    assert cmds.expand("/same", found)[0] == "WORKSPACE"
