"""The MCP client (tools/mcp): real servers written with the SDK, over real stdio and HTTP."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_servers import toolbox, toolbox_over_http
from tests.support.procs import pids_with, unique_tag, until
from tooling.context import ToolContext
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tools.mcp.connection import McpCallError, McpConnection
from tools.mcp.naming import tool_name
from tools.mcp.results import tool_output
from tools.mcp.spec import McpServerSpec
from tools.mcp.tools import definitions

TOOLBOX = Path(toolbox.__file__)


def stdio_spec(*options: str, tag: str | None = None, **fields: Any) -> McpServerSpec:
    return McpServerSpec(
        name=fields.pop("name", "toolbox"),
        transport="stdio",
        command=sys.executable,
        args=(str(TOOLBOX), "--tag", tag or unique_tag(), *options),
        **fields,
    )


@asynccontextmanager
async def connected(spec: McpServerSpec, **options: Any) -> AsyncIterator[McpConnection]:
    connection = McpConnection(spec, **options)
    try:
        await connection.start()
        yield connection
    finally:
        await connection.close()


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The toolbox over Streamable HTTP on 127.0.0.1, for this module's tests."""
    with toolbox_over_http() as url:
        yield url


# -- names, definitions, results ---------------------------------------------------------


def test_tool_names_are_safe_short_and_distinct() -> None:
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert tool_name("my server", "files/read.v2") == "mcp__my_server__files_read_v2"
    first, second = tool_name("s" * 40, "t" * 40 + "a"), tool_name("s" * 40, "t" * 40 + "b")
    assert len(first) == len(second) == 64
    assert first != second and first.startswith("mcp__" + "s" * 40 + "__ttt")
    assert tool_name("s" * 40, "t" * 40 + "a") == first  # the same tool, the same name


async def test_start_lists_the_tools_as_definitions() -> None:
    states: list[str] = []
    spec = stdio_spec(disabled_tools=("crash",))
    async with connected(spec, on_state_changed=lambda c: states.append(c.state)) as connection:
        assert connection.state == "ready", connection.error
        assert states == ["ready"]
        assert connection.pid is not None
        names = [tool.name for tool in connection.tools]
        assert "echo" in names and "write_note" in names and "crash" not in names
        tools = {tool.name: tool for tool in definitions(connection)}

    echo = tools["mcp__toolbox__echo"]
    assert echo.description == "[toolbox] The toolbox's echo."
    assert echo.parameters == {  # the server's inputSchema, as it sent it
        "type": "object",
        "properties": {"text": {"type": "string", "description": "what to say back"}},
        "required": ["text"],
    }
    assert (echo.read_only, echo.destructive, echo.title) == (True, False, "Echo")
    assert echo.permission is None
    assert echo.annotations == {
        "openWorldHint": False,
        "source": {"kind": "mcp", "server": "toolbox"},
    }
    described = ToolRegistry([echo]).describe()[0]
    assert described["annotations"]["readOnlyHint"] is True
    assert described["annotations"]["source"] == {"kind": "mcp", "server": "toolbox"}

    note = tools["mcp__toolbox__write_note"]
    assert (note.read_only, note.destructive) == (False, True)
    assert note.annotations["openWorldHint"] is True  # the spec's default
    assert note.permission is not None
    asked = note.permission({"text": "hi"})
    assert asked.title == 'Run write_note on MCP server toolbox: {"text": "hi"}'
    assert "\u202e" not in note.permission({"text": "\u202e"}).title  # shown, not obeyed
    assert asked.required and asked.escalation
    assert asked.reason.startswith("MCP servers run outside the sandbox")
    # An invalid schema costs that tool its argument checks, not the registry.
    assert tools["mcp__toolbox__odd_schema"].parameters == {"type": "object"}
    ToolRuntime(ToolRegistry(tools.values()))


async def test_a_trusted_server_asks_nothing() -> None:
    async with connected(stdio_spec(trust=True, enabled_tools=("write_note",))) as connection:
        (note,) = definitions(connection)
    assert note.name == "mcp__toolbox__write_note"
    assert note.permission is None and note.destructive


async def test_calls_and_their_results() -> None:
    async with connected(stdio_spec()) as connection:
        assert tool_output(await connection.call("echo", {"text": "hello"})) == "hello"
        assert tool_output(await connection.call("content", {})).splitlines() == [
            "first",
            "[image: image/png, 12,345 bytes]",
            "[audio: audio/wav, 3 bytes]",
            "a note",
            "[resource file:///data.bin: application/octet-stream, 10 bytes]",
            "[resource link: file:///linked.txt (linked.txt)]",
        ]
        structured = tool_output(await connection.call("structured", {}))
        assert json.loads(structured) == {"answer": 42}
        assert tool_output(await connection.call("fail", {"message": "it broke"})) == (
            "Error: it broke"
        )
        steps: list[tuple[float, float | None, str | None]] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            steps.append((done, total, message))

        result = await connection.call("progress", {"steps": 3}, progress=progress)
        assert tool_output(result) == "done"
        await until(lambda: len(steps) == 3)
        assert steps[-1] == (3, 3, "step 3")
        with pytest.raises(McpCallError, match=r"^Error: MCP server toolbox refused the call"):
            await connection.call("no_such_tool_at_all", {})


async def test_calls_through_the_runtime_and_its_gate() -> None:
    async with connected(stdio_spec()) as connection:
        runtime = ToolRuntime(ToolRegistry(definitions(connection)))
        echo = await runtime.execute("mcp__toolbox__echo", '{"text": "hi"}', ToolContext())
        assert echo == "hi"
        invalid = await runtime.execute("mcp__toolbox__echo", "{}", ToolContext())
        assert invalid.startswith("Error: Invalid arguments") and "text" in invalid
        # Not read-only, and nobody to ask: refused as an unsandboxed bash call is.
        refused = await runtime.execute("mcp__toolbox__write_note", '{"text": "x"}')
        assert refused.startswith("Error: this call needs the user's permission")
        assert "Run write_note on MCP server toolbox" in refused


# -- timeout, cancel, list changes -------------------------------------------------------


async def test_a_call_that_exceeds_tool_timeout_fails_and_is_cancelled(tmp_path: Path) -> None:
    marker = tmp_path / "sleep"
    async with connected(stdio_spec(tool_timeout=0.5)) as connection:
        started = time.monotonic()
        with pytest.raises(McpCallError) as failure:
            await connection.call("sleep", {"seconds": 60, "marker": str(marker)})
        assert time.monotonic() - started < 10
        assert str(failure.value).startswith("Error: the MCP tool sleep of server toolbox")
        assert "did not answer within 0.5 s" in str(failure.value)
        await until(lambda: marker.with_suffix(".cancelled").exists())
        assert tool_output(await connection.call("echo", {"text": "still"})) == "still"


async def test_cancelling_a_call_cancels_it_on_the_server(tmp_path: Path) -> None:
    marker = tmp_path / "sleep"
    async with connected(stdio_spec()) as connection:
        call = asyncio.create_task(connection.call("sleep", {"seconds": 60, "marker": str(marker)}))
        await until(lambda: marker.with_suffix(".started").exists())
        cancelled_at = time.monotonic()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert time.monotonic() - cancelled_at < 2  # at once, not when the server is done
        await until(lambda: marker.with_suffix(".cancelled").exists())
        assert tool_output(await connection.call("echo", {"text": "on"})) == "on"


async def test_a_changed_tool_list_is_listed_again() -> None:
    changes: list[list[str]] = []

    def changed(connection: McpConnection) -> None:
        changes.append([tool.name for tool in connection.tools])

    async with connected(stdio_spec(), on_tools_changed=changed) as connection:
        assert "added" not in [tool.name for tool in connection.tools]
        await connection.call("add_tool", {})
        await until(lambda: bool(changes))
        assert "added" in changes[-1]
        assert "mcp__toolbox__added" in [tool.name for tool in definitions(connection)]
        assert tool_output(await connection.call("added", {"text": "new"})) == "new"


# -- failures and the end ------------------------------------------------------------------


async def test_a_crash_fails_the_call_and_the_server_with_its_stderr() -> None:
    states: list[str] = []
    async with connected(stdio_spec(), on_state_changed=lambda c: states.append(c.state)) as c:
        with pytest.raises(McpCallError, match="ended the connection during the call of crash"):
            await c.call("crash", {})
        await until(lambda: c.state == "failed")
        assert c.error is not None and "crashed on purpose" in c.error
        assert c.tools == []
        with pytest.raises(
            McpCallError, match=r"^Error: MCP server toolbox is not running \(failed: "
        ):
            await c.call("echo", {"text": "x"})
    assert states == ["ready", "failed"]


async def test_a_server_that_cannot_start_fails_with_its_stderr() -> None:
    async with connected(stdio_spec("--crash-at-start")) as connection:
        assert connection.state == "failed"
        assert connection.error is not None
        assert connection.error.startswith("the server ended the connection before it was ready")
        assert "toolbox: cannot start: no configuration" in connection.error


async def test_a_missing_command_fails(tmp_path: Path) -> None:
    spec = McpServerSpec(name="gone", transport="stdio", command=str(tmp_path / "nothing"))
    async with connected(spec) as connection:
        assert connection.state == "failed"
        assert connection.error is not None and connection.error.startswith("cannot run ")


async def test_a_slow_start_fails_after_startup_timeout_and_leaves_no_process() -> None:
    tag = unique_tag()
    spec = stdio_spec("--slow-start", "60", tag=tag, startup_timeout=0.5)
    connection = McpConnection(spec)
    assert await connection.start() == "failed"
    assert connection.error == "it did not start within 0.5 s (its startup_timeout)"
    await until(lambda: not pids_with(tag), within=5)


async def test_close_ends_the_whole_process_tree() -> None:
    tag, child_tag = unique_tag(), unique_tag()
    connection = McpConnection(stdio_spec(tag=tag))
    assert await connection.start() == "ready"
    child = int(tool_output(await connection.call("spawn_child", {"tag": child_tag})))
    assert pids_with(tag) and pids_with(child_tag) == [child]
    await connection.close()
    assert connection.state == "closed"
    await until(lambda: not pids_with(tag) and not pids_with(child_tag), within=1.5)
    with pytest.raises(McpCallError, match=r"is not running \(closed\)"):
        await connection.call("echo", {"text": "x"})


# -- what the server sees of us -------------------------------------------------------------


async def test_the_server_gets_the_safe_environment_and_its_env_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ours")
    monkeypatch.setenv("MODEL_API_KEY", "sk-ours-too")
    names = {"names": ["OPENAI_API_KEY", "MODEL_API_KEY", "GIVEN", "PATH"]}
    async with connected(stdio_spec(env={"GIVEN": "yes"})) as connection:
        seen = json.loads(tool_output(await connection.call("env", names)))
    assert seen["OPENAI_API_KEY"] is None and seen["MODEL_API_KEY"] is None
    assert seen["GIVEN"] == "yes" and seen["PATH"]
    # What the user put in env does reach it.
    async with connected(stdio_spec(env={"OPENAI_API_KEY": "sk-theirs"})) as connection:
        seen = json.loads(tool_output(await connection.call("env", names)))
    assert seen["OPENAI_API_KEY"] == "sk-theirs"


async def test_roots_are_answered_sampling_and_elicitation_refused(workspace: Path) -> None:
    async with connected(stdio_spec(), roots=[workspace.as_uri()]) as connection:
        assert tool_output(await connection.call("roots", {})) == workspace.as_uri()
        assert tool_output(await connection.call("sampling", {})).startswith("refused: ")
        assert tool_output(await connection.call("elicit", {})).startswith("refused: ")


# -- Streamable HTTP ------------------------------------------------------------------------


async def test_over_streamable_http_with_headers(http_url: str) -> None:
    spec = McpServerSpec(
        name="remote", transport="http", url=http_url, headers={"X-Toolbox": "from-config"}
    )
    async with connected(spec) as connection:
        assert connection.state == "ready", connection.error
        assert connection.pid is None
        assert tool_output(await connection.call("echo", {"text": "over http"})) == "over http"
        assert tool_output(await connection.call("headers", {})) == "from-config"
        assert tool_output(await connection.call("fail", {"message": "no"})) == "Error: no"
    assert connection.state == "closed"


async def test_an_unreachable_http_server_fails(listener: Any) -> None:
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now
    spec = McpServerSpec(
        name="away", transport="http", url=f"http://127.0.0.1:{port}/mcp", startup_timeout=10
    )
    async with connected(spec) as connection:
        assert connection.state == "failed"
        assert connection.error == "ConnectError: All connection attempts failed"


async def test_a_call_over_http_that_times_out_is_cancelled_on_the_server(
    http_url: str, tmp_path: Path
) -> None:
    marker = tmp_path / "sleep"
    spec = McpServerSpec(name="remote", transport="http", url=http_url, tool_timeout=0.5)
    async with connected(spec) as connection:
        with pytest.raises(McpCallError, match=r"did not answer within 0\.5 s"):
            await connection.call("sleep", {"seconds": 60, "marker": str(marker)})
        await until(lambda: marker.with_suffix(".cancelled").exists())


async def test_close_while_starting_ends_the_start() -> None:
    tag = unique_tag()
    connection = McpConnection(stdio_spec("--slow-start", "60", tag=tag))
    start = asyncio.create_task(connection.start())
    await until(lambda: bool(pids_with(tag)))
    await connection.close()
    assert await start == "closed"
    assert connection.error is None
    await until(lambda: not pids_with(tag), within=1)
