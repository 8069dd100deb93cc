"""A tool's summary argument and its words for compaction come from its definition: a new
tool declared with ``summary_key`` / ``compaction_keeps`` (or neither) shows up right in a
call's one-line summary and in the summarizer's instructions, with no other module edited."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from server.agent.activity import summarize_arguments
from server.agent.archive import Archive, ContextState
from server.agent.compaction import NOTE_PREFIX, ContextWindow, summary_instructions
from server.agent.loop import agent_loop, complete_text
from server.engine.bootstrap import DEFAULT_TOOLS, build_tools
from server.model.context_limits import Window
from server.model.endpoint import ModelSettings, create_client
from server.terminal.client import format_activity
from tests.support.model_server import ScriptedModel, tool_call
from tests.support.trace_cases import CALL_CASES, FORMAT_CASES, worded
from tooling.context import ToolContext
from tooling.contract import ToolDefinition
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace

PAGE = "".join(f"line {n} of the fetched page\n" for n in range(200))
URL = "https://example.test/docs/a"


async def _fetch(arguments: dict[str, Any], context: ToolContext) -> str:
    return PAGE


async def _lookup(arguments: dict[str, Any], context: ToolContext) -> str:
    return f"{arguments['symbol']} is defined in server/settings/settings.py"


def fetch_tool() -> ToolDefinition:
    # Its first required string is ``method``: the declared key is what names the call.
    return ToolDefinition(
        "fetch",
        "Fetch a web page.",
        {
            "type": "object",
            "properties": {"method": {"type": "string"}, "url": {"type": "string"}},
            "required": ["method", "url"],
        },
        _fetch,
        read_only=True,
        summary_key="url",
        compaction_keeps="pages fetched (with their addresses) and what they said",
    )


def lookup_tool() -> ToolDefinition:
    # Neither field: the defaults (the first required string; named, no words of its own).
    return ToolDefinition(
        "lookup",
        "Find where a symbol is defined.",
        {
            "type": "object",
            "properties": {"limit": {"type": "integer"}, "symbol": {"type": "string"}},
            "required": ["limit", "symbol"],
        },
        _lookup,
        read_only=True,
    )


def test_a_calls_summary_shows_the_argument_its_definition_names() -> None:
    fetch, lookup = fetch_tool(), lookup_tool()
    assert (fetch.summary_argument(), lookup.summary_argument()) == ("url", "symbol")
    arguments = json.dumps({"method": "GET", "url": URL})
    assert summarize_arguments("fetch", arguments, fetch.summary_argument()) == URL
    # Without the definition (a client that knows only the name) the arguments show.
    assert summarize_arguments("fetch", arguments) == f'{{"method": "GET", "url": "{URL}"}}'
    found = summarize_arguments("lookup", '{"limit": 3, "symbol": "parse"}', "symbol")
    assert found == "parse"
    # A value that is not a usable string falls back to the keys every client tries.
    assert summarize_arguments("fetch", '{"url": "", "path": "a.txt"}', "url") == "a.txt"
    no_strings = ToolDefinition("n", "", {"type": "object", "required": ["x"]}, _fetch)
    assert no_strings.summary_argument() is None


def test_the_built_in_tools_name_what_the_editors_show() -> None:
    """The built-in tools' declared keys give the summaries the terminal and the editors
    (which know no definitions) give for the shared trace cases."""
    registry = build_tools(Workspace(Path.cwd()))
    assert registry.names() == list(DEFAULT_TOOLS)
    keys = {tool.name: tool.summary_argument() for tool in registry}
    assert keys == {
        "bash": "command",
        "read_file": "path",
        "write_file": "path",
        "edit_file": "path",
        "glob": "pattern",
    }
    known = [case for case in FORMAT_CASES if case["name"] in keys]
    assert {case["name"] for case in known} == set(keys)
    for case in known:
        summary = summarize_arguments(case["name"], case["arguments"], keys[case["name"]])
        assert f" {case['name']} {summary}" in format_activity(case), case


def test_an_mcp_tool_is_shown_by_its_display_name() -> None:
    """The terminal's trace line names an MCP tool as the server's displayName does (the
    editors' lines are compared with these in the shared trace scenario)."""
    by_display = [worded(case) for case in CALL_CASES if "displayName" in case]
    lines = [format_activity(case)[9:] for case in by_display]
    assert lines == [
        "✓ get_current_time — time (MCP server) UTC (4 ms)",
        '⏸ \\e[8mecho — tb\\u202e (MCP server) {"text": "hi"} (waiting for permission)',
        "→ mcp__tb__echo {}",
        "→ mcp__tb__echo {}",
    ]


@pytest.fixture
async def client(model: ScriptedModel) -> AsyncIterator[Any]:
    settings = ModelSettings(
        api_key="sk-test", base_url=model.base_url, model="scripted", timeout=20, max_retries=0
    )
    sdk_client = create_client(settings)
    yield sdk_client
    await sdk_client.close()


async def test_a_new_tool_is_in_the_summary_request_as_declared(
    model: ScriptedModel, client: Any
) -> None:
    registry = ToolRegistry([fetch_tool(), lookup_tool()])
    runtime = ToolRuntime(registry)
    window = ContextWindow(
        Window(100_000, "setting"), ContextState(), Archive(), model="scripted", tools=registry
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Read the docs page and find parse."},
    ]
    model.reply(
        tool_calls=[
            tool_call("fetch", {"method": "GET", "url": URL}),
            tool_call("lookup", {"limit": 1, "symbol": "parse"}),
        ]
    )
    model.reply("The page says to call parse, defined in settings.py.")
    await agent_loop(messages, runtime, client=client, model="scripted", window=window)
    messages.append({"role": "user", "content": "Thanks; what next?"})
    model.reply("Nothing more.")
    await agent_loop(messages, runtime, client=client, model="scripted", window=window)

    model.reply("SUMMARY: fetched the docs page, found parse.")

    async def summarize(request: list[dict[str, Any]]) -> str:
        return await complete_text(client, "scripted", request)

    done = await window.fit(messages, summarize, trigger="request", force=True)
    assert done is not None and done.elided == 1 and done.summarized > 0
    summary_request = model.bodies[-1]
    assert "tools" not in summary_request
    system, user = summary_request["messages"]
    assert "works in the user's project with tools (fetch, lookup). " in system["content"]
    assert (
        "decisions made, pages fetched (with their addresses) and what they said, "
        "errors met" in system["content"]
    )
    text = user["content"]
    assert f"(called fetch {URL})" in text
    assert "(called lookup parse)" in text
    assert f"Tool result (fetch): {NOTE_PREFIX}fetch {URL} returned 200 lines" in text
    assert PAGE not in text


def test_the_instructions_follow_the_definitions_they_are_given() -> None:
    text = summary_instructions((), 300)
    assert "with tools. The agent" in text and "decisions made, errors met" in text
    built_in = summary_instructions(build_tools(Workspace(Path.cwd())), 300)
    assert "with tools (bash, read_file, write_file, edit_file, glob). " in built_in
    # write_file and edit_file keep the same: said once.
    assert built_in.count("files changed (with paths)") == 1
    assert "commands run and their results" in built_in
