"""An MCP server for the client's tests, written with the SDK's low-level server.

Run as a script (``python toolbox.py [options]``), over stdio, or over Streamable HTTP on
127.0.0.1 with ``--http`` (it prints ``listening on PORT`` once its socket listens). Its
tools, one per behaviour a test needs: ``echo`` (read-only), ``write_note`` (not), ``fail``
(isError), ``sleep`` (records its start and its cancellation in files), ``progress``,
``content`` (every content kind), ``structured``, ``add_tool`` (changes the tool list),
``crash``, ``env``, ``roots``, ``sampling``, ``elicit``, ``spawn_child``, ``headers``,
``odd_schema``. Options: ``--crash-at-start``, ``--slow-start SECONDS``, ``--tag TAG``
(only there to be found in ``/proc``).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

IMAGE = b"\x89PNG" + bytes(12_341)  # 12,345 bytes
AUDIO = bytes(3)
BLOB = bytes(range(10))


def _tool(
    name: str, properties: dict[str, Any] | None = None, *, read_only: bool = False, **extra: Any
) -> types.Tool:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if properties:
        schema["required"] = list(properties)
    return types.Tool(
        name=name,
        description=f"The toolbox's {name}.",
        input_schema=extra.pop("schema", schema),
        annotations=types.ToolAnnotations(read_only_hint=read_only, **extra),
    )


TEXT = {"type": "string"}
TOOLS = [
    _tool(
        "echo",
        {"text": {**TEXT, "description": "what to say back"}},
        read_only=True,
        title="Echo",
        open_world_hint=False,
    ),
    _tool("write_note", {"text": TEXT}),
    _tool("fail", {"message": TEXT}),
    _tool("sleep", {"seconds": {"type": "number"}, "marker": TEXT}),
    _tool("progress", {"steps": {"type": "integer"}}),
    _tool("content", read_only=True),
    _tool("structured", read_only=True),
    _tool("add_tool"),
    _tool("crash"),
    _tool("env", {"names": {"type": "array", "items": TEXT}}, read_only=True),
    _tool("roots", read_only=True),
    _tool("sampling"),
    _tool("elicit"),
    _tool("spawn_child", {"tag": TEXT}),
    _tool("headers", read_only=True),
    _tool("odd_schema", schema={"type": "object", "properties": {"n": {"type": "nonsense"}}}),
]


def text(value: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=value)], is_error=error)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    name = params.name
    if name in ("echo", "added"):
        return text(str(args.get("text", "")))
    if name == "write_note":
        return text(f"noted: {args['text']}")
    if name == "fail":
        return text(args["message"], error=True)
    if name == "sleep":
        marker = Path(args["marker"])
        marker.with_suffix(".started").write_text("")
        try:
            await anyio.sleep(args["seconds"])
        except anyio.get_cancelled_exc_class():
            marker.with_suffix(".cancelled").write_text("")
            raise
        return text("slept")
    if name == "progress":
        for step in range(args["steps"]):
            await ctx.session.report_progress(step + 1, args["steps"], f"step {step + 1}")
        return text("done")
    if name == "content":
        return types.CallToolResult(
            content=[
                types.TextContent(text="first"),
                types.ImageContent(data=base64.b64encode(IMAGE).decode(), mime_type="image/png"),
                types.AudioContent(data=base64.b64encode(AUDIO).decode(), mime_type="audio/wav"),
                types.EmbeddedResource(
                    resource=types.TextResourceContents(uri="file:///notes.txt", text="a note")
                ),
                types.EmbeddedResource(
                    resource=types.BlobResourceContents(
                        uri="file:///data.bin",
                        mime_type="application/octet-stream",
                        blob=base64.b64encode(BLOB).decode(),
                    )
                ),
                types.ResourceLink(uri="file:///linked.txt", name="linked.txt"),
            ]
        )
    if name == "structured":
        return types.CallToolResult(content=[], structured_content={"answer": 42})
    if name == "add_tool":
        TOOLS.append(_tool("added", {"text": TEXT}, read_only=True))
        await ctx.session.send_tool_list_changed()
        return text("added")
    if name == "crash":
        sys.stderr.write("fatal: the toolbox crashed on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "env":
        return text(json.dumps({key: os.environ.get(key) for key in args["names"]}))
    if name == "roots":
        result = await ctx.session.list_roots()
        return text("\n".join(str(root.uri) for root in result.roots))
    if name == "sampling":
        try:
            await ctx.session.create_message(
                messages=[types.SamplingMessage(role="user", content=types.TextContent(text="hi"))],
                max_tokens=5,
            )
        except MCPError as exc:
            return text(f"refused: {exc}")
        return text("sampled")
    if name == "elicit":
        try:
            await ctx.session.elicit_form("Name?", {"type": "object", "properties": {}})
        except MCPError as exc:
            return text(f"refused: {exc}")
        return text("elicited")
    if name == "spawn_child":
        return text(str(spawn_child(args["tag"])))
    if name == "headers":
        request = ctx.request
        return text(request.headers.get("x-toolbox", "") if request is not None else "")
    raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")


def spawn_child(tag: str) -> int:
    """A process of the server's that outlives it unless its group is ended."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)", tag],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    return child.pid


SERVER = Server("toolbox", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio() -> None:
    options = SERVER.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await SERVER.run(read, write, options)


async def serve_http() -> None:
    import uvicorn

    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(16)
    app = SERVER.streamable_http_app(host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    print(f"listening on {listening.getsockname()[1]}", flush=True)
    await server.serve(sockets=[listening])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--crash-at-start", action="store_true")
    parser.add_argument("--slow-start", type=float, default=0.0)
    parser.add_argument("--tag", default="")
    options = parser.parse_args()
    if options.crash_at_start:
        sys.stderr.write("toolbox: cannot start: no configuration\n")
        sys.exit(2)
    if options.slow_start:
        time.sleep(options.slow_start)
    anyio.run(serve_http if options.http else serve_stdio)


if __name__ == "__main__":
    main()
