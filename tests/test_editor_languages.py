"""The editor's own language servers (issue 38, the LSP face): a client that advertises
``languageFeatures`` answers ``agent/languageDiagnostics`` and ``agent/languageRequest``,
through the real server over stdio with the scripted model.

The "editor" here is a pytest-lsp client that answers as a real one does: positions in
UTF-16 (a line with an emoji before the problem), the diagnostics of a changed file
arriving a moment after the request (its language server analyses it), a file the
editor has not open loaded first, a file no server of the editor handles answered
``answered: false`` after the wait, and a null result where no provider answers.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError

from tests.support.lsp_client import AgentTestClient, agent_session, ask, make_client, server_env
from tests.support.mcp_sessions import tool_results
from tests.support.model_server import ScriptedModel, tool_call

CAN_ANSWER = types.ClientCapabilities(experimental={"agent": {"languageFeatures": True}})
ANALYSIS_S = 0.3  # how long the editor's "language server" takes to publish after a change


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _problems(text: str) -> list[dict[str, Any]]:
    """The fake TypeScript: ``: number = "`` on a line is error 2322 at the string."""
    found = []
    for line, body in enumerate(text.splitlines()):
        at = body.find(': number = "')
        if at >= 0:
            start = _utf16(body[: at + len(": number = ")])
            found.append(
                {
                    "range": {
                        "start": {"line": line, "character": start},
                        "end": {"line": line, "character": _utf16(body.rstrip(";"))},
                    },
                    "severity": 1,
                    "code": 2322,
                    "source": "ts",
                    "message": "Type 'string' is not assignable to type 'number'.",
                }
            )
    return found


class EditorClient(AgentTestClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fail_requests = False  # answer agent/languageRequest with a JSON-RPC error
        self.diagnostics_asked: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.loaded: list[str] = []  # uris the editor opened (not shown) to answer
        self.results: dict[str, Any] = {}  # method -> the LSP result to answer


def _editor() -> EditorClient:
    client = make_client(EditorClient)
    assert isinstance(client, EditorClient)

    @client.feature("agent/languageDiagnostics")
    async def on_diagnostics(params: dict[str, Any]) -> dict[str, Any]:
        client.diagnostics_asked.append(params)
        files = []
        for uri in params["uris"]:
            path = Path(unquote(urlparse(uri).path))
            if path.suffix != ".ts":  # no language server of this editor handles it
                if path.suffix != ".txt":  # plain text: said at once; else after the wait
                    await asyncio.sleep(params["waitMs"] / 1000)
                files.append({"uri": uri, "diagnostics": [], "answered": False})
                continue
            client.loaded.append(uri)
            if params["waitMs"] > 0:
                await asyncio.sleep(ANALYSIS_S)  # its server publishes after a moment
            text = path.read_text() if path.exists() else ""
            files.append({"uri": uri, "diagnostics": _problems(text), "answered": True})
        return {"files": files}

    @client.feature("agent/languageRequest")
    async def on_request(params: dict[str, Any]) -> dict[str, Any]:
        client.requests.append(params)
        if client.fail_requests:
            raise JsonRpcInternalError("the provider threw")
        return {"result": client.results.get(params["method"])}

    return client


async def _calls(
    model: ScriptedModel,
    workspace: Path,
    calls: list[tuple[str, dict[str, Any]]],
    results: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    fail_requests: bool = False,
) -> tuple[dict[str, str], list[str], EditorClient]:
    for n, (name, arguments) in enumerate(calls):
        model.reply(tool_calls=[tool_call(name, arguments, id=f"c{n}")])
    model.reply("done")
    async with agent_session(
        server_env(model.base_url, **(env or {})),
        [workspace],
        capabilities=CAN_ANSWER,
        client_factory=_editor,
        settings=settings,
    ) as client:
        assert isinstance(client, EditorClient)
        client.results.update(results or {})
        client.fail_requests = fail_requests
        result = await ask(client, prompt="go")
        assert result["answer"] == "done"
    offered = [t["function"]["name"] for t in model.bodies[-1].get("tools", [])]
    return tool_results(model), offered, client


async def test_a_write_carries_the_editors_type_error_in_characters(
    model: ScriptedModel, workspace: Path
) -> None:
    content = 'const s = "🙂🙂";\nconst n: number = "two";\n'
    results, offered, editor = await _calls(
        model, workspace, [("write_file", {"path": "app.ts", "content": content})]
    )
    text = results["c0"]
    assert text.startswith("Wrote 47 bytes to app.ts\nProblems: 1 new problem in app.ts:"), text
    assert (
        "app.ts:2:19: error [ts 2322] Type 'string' is not assignable to type 'number'." in text
    ), text
    assert {"diagnostics", "definition", "references", "symbols", "hover", "rename"} <= set(offered)
    # After the write it waited for the change (the setting's bound), for the file it wrote.
    asked = editor.diagnostics_asked[-1]
    assert asked["uris"] == [(workspace / "app.ts").resolve().as_uri()]
    assert asked["waitMs"] == 1500


async def test_an_edit_is_told_only_the_problems_it_introduced_the_file_loaded_first(
    model: ScriptedModel, workspace: Path
) -> None:
    (workspace / "old.ts").write_text('let a: number = "x";\nlet b = 1;\n')
    results, _, editor = await _calls(
        model,
        workspace,
        [("read_file", {"path": "old.ts"}),
         ("edit_file", {"path": "old.ts", "old_text": "let b = 1;",
                        "new_text": 'let b: number = "y";'})],
    )  # fmt: skip
    edited = results["c1"]
    assert "Problems: 1 new problem in old.ts:" in edited, edited
    assert "old.ts:2:17: error [ts 2322]" in edited
    assert "old.ts:1:" not in edited
    uri = (workspace / "old.ts").resolve().as_uri()
    assert uri in editor.loaded  # not open in the editor: loaded to answer
    # Before the edit: the file not open, so waited for its first analysis; after: again.
    assert [a["waitMs"] for a in editor.diagnostics_asked] == [1500, 1500]


async def test_a_file_no_server_of_the_editor_handles_is_said_then_not_waited_for(
    model: ScriptedModel, workspace: Path
) -> None:
    results, _, editor = await _calls(
        model,
        workspace,
        [("write_file", {"path": "a.md", "content": "one\n"}),
         ("write_file", {"path": "b.md", "content": "two\n"}),
         ("write_file", {"path": "c.md", "content": "three\n"})],
        settings={"diagnosticsWait": 300},
    )  # fmt: skip
    said = "Problems: the language server did not answer within 300 ms."
    assert results["c0"].endswith(said), results["c0"]
    assert results["c1"].endswith(said), results["c1"]
    assert results["c2"] == "Wrote 6 bytes to c.md"  # learnt: nothing handles .md
    assert len(editor.diagnostics_asked) == 2


async def test_navigation_goes_through_the_editors_providers_in_utf16(
    model: ScriptedModel, workspace: Path
) -> None:
    (workspace / "lib.ts").write_text("// 🙂 x\nexport function greet(n: string) { return n; }\n")
    (workspace / "main.ts").write_text('import { greet } from "./lib";\n/*🙂*/ greet("a");\n')
    lib, main = (workspace / "lib.ts").resolve().as_uri(), (workspace / "main.ts").as_uri()
    at_greet = {"start": {"line": 1, "character": 16}, "end": {"line": 1, "character": 21}}
    results, _, editor = await _calls(
        model,
        workspace,
        [
            ("definition", {"path": "main.ts", "line": 2, "symbol": "greet"}),
            ("hover", {"path": "main.ts", "line": 2, "column": 7}),
            ("symbols", {"path": "lib.ts"}),
            ("symbols", {"query": "greet"}),
            ("read_file", {"path": "lib.ts"}),
            ("read_file", {"path": "main.ts"}),
            ("rename", {"path": "lib.ts", "line": 2, "symbol": "greet", "new_name": "hello"}),
        ],
        results={
            "textDocument/definition": [{"uri": lib, "range": at_greet}],
            "textDocument/hover": {"contents": {"kind": "markdown", "value": "function greet"}},
            "textDocument/documentSymbol": [
                {"name": "greet", "kind": 12, "range": at_greet, "selectionRange": at_greet}
            ],
            "workspace/symbol": None,
            "textDocument/rename": {
                "changes": {
                    lib: [{"range": at_greet, "newText": "hello"}],
                    main: [
                        {
                            "range": {
                                "start": {"line": 0, "character": 9},
                                "end": {"line": 0, "character": 14},
                            },
                            "newText": "hello",
                        },
                        {
                            "range": {
                                "start": {"line": 1, "character": 7},
                                "end": {"line": 1, "character": 12},
                            },
                            "newText": "hello",
                        },
                    ],
                }
            },
        },
    )
    assert results["c0"] == "lib.ts:2:17: export function greet(n: string) { return n; }"
    assert "function greet" in results["c1"]
    assert results["c2"] == "function greet (line 2)"
    assert results["c3"] == "Error: no language server of the editor answered (workspace/symbol)"
    assert "main.ts" in results["c6"] and "lib.ts" in results["c6"], results["c6"]
    assert (workspace / "main.ts").read_text() == (
        'import { hello } from "./lib";\n/*🙂*/ hello("a");\n'
    )
    # The model's column 7 on '/*🙂*/ greet' is UTF-16 character 7 (the emoji is 2 units).
    definition = editor.requests[0]
    assert definition["method"] == "textDocument/definition"
    assert definition["params"]["position"] == {"line": 1, "character": 7}
    assert editor.requests[1]["params"]["position"] == {"line": 1, "character": 7}


async def test_list_tools_names_the_editors_language_servers(
    model: ScriptedModel, workspace: Path
) -> None:
    async with agent_session(
        server_env(model.base_url), [workspace], capabilities=CAN_ANSWER, client_factory=_editor
    ) as client:
        listed = await client.protocol.send_request_async("agent/listTools", {})
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert tools["definition"]["annotations"]["languageSource"] == "the editor's language servers"


async def test_an_editor_error_is_said_and_the_ask_goes_on(
    model: ScriptedModel, workspace: Path
) -> None:
    (workspace / "x.ts").write_text("let a = 1;\n")
    results, _, _ = await _calls(
        model,
        workspace,
        [("hover", {"path": "x.ts", "line": 1, "column": 5})],
        fail_requests=True,
    )
    assert results["c0"].startswith("Error: the editor could not answer agent/languageRequest:"), (
        results["c0"]
    )
    assert "the provider threw" in results["c0"]


async def test_the_editors_servers_answer_even_where_language_servers_are_configured(
    model: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "config"
    (folder / "agent-lsp").mkdir(parents=True)
    (folder / "agent-lsp" / "config.toml").write_text(
        '[language_servers.never]\ncommand = "/nonexistent/server"\nextensions = [".ts"]\n'
    )
    async with agent_session(
        server_env(model.base_url, XDG_CONFIG_HOME=str(folder)),
        [workspace],
        capabilities=CAN_ANSWER,
        client_factory=_editor,
    ) as client:
        listed = await client.protocol.send_request_async("agent/listTools", {})
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert tools["hover"]["annotations"]["languageSource"] == "the editor's language servers"


async def test_a_file_the_editor_says_at_once_nothing_handles_gets_no_problems_line(
    model: ScriptedModel, workspace: Path
) -> None:
    results, _, editor = await _calls(
        model,
        workspace,
        [("write_file", {"path": "a.txt", "content": "one\n"}),
         ("write_file", {"path": "b.txt", "content": "two\n"})],
    )  # fmt: skip
    assert results["c0"] == "Wrote 4 bytes to a.txt"
    assert results["c1"] == "Wrote 4 bytes to b.txt"
    assert len(editor.diagnostics_asked) == 1  # learnt at once: nothing handles .txt
