"""The generic mechanism: contract, registry, runtime, workspace boundary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tooling.context import ToolContext
from tooling.contract import ToolDefinition, is_error
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace, WorkspaceError

REPO = Path(__file__).resolve().parent.parent


def make_tool(name: str = "echo", **kwargs: Any) -> ToolDefinition:
    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        return json.dumps(arguments, sort_keys=True)

    parameters = kwargs.pop(
        "parameters",
        {
            "type": "object",
            "properties": {
                "text": {"type": "string", "minLength": 1},
                "count": {"type": "integer", "minimum": 1, "maximum": 10},
                "flag": {"type": "boolean"},
            },
            "required": ["text"],
            "additionalProperties": False,
        },
    )
    return ToolDefinition(
        name=name,
        description=f"{name} tool",
        parameters=parameters,
        handler=kwargs.pop("handler", handler),
        **kwargs,
    )


# -- registry --------------------------------------------------------------------------


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ValueError, match="Duplicate tool name: echo"):
        ToolRegistry([make_tool(), make_tool()])


def test_registries_are_isolated() -> None:
    first = ToolRegistry([make_tool("a")])
    second = ToolRegistry([make_tool("b")])
    assert first.names() == ["a"]
    assert second.names() == ["b"]
    assert first.get("b") is None
    assert second.get("a") is None


def test_schemas_are_deep_copies() -> None:
    tool = make_tool()
    registry = ToolRegistry([tool])
    schema = registry.schemas()[0]
    assert schema["type"] == "function"
    assert schema["function"]["name"] == "echo"
    schema["function"]["parameters"]["properties"]["text"]["type"] = "number"
    schema["function"]["parameters"]["required"].append("evil")
    assert tool.parameters["properties"]["text"]["type"] == "string"
    assert tool.parameters["required"] == ["text"]
    described = registry.describe()[0]
    described["inputSchema"]["required"].append("evil")
    assert tool.parameters["required"] == ["text"]


def test_describe_is_mcp_shaped_with_annotations() -> None:
    registry = ToolRegistry(
        [
            make_tool("reader", read_only=True, title="Read things"),
            make_tool("writer", destructive=True),
        ]
    )
    reader, writer = registry.describe()
    assert reader == {
        "name": "reader",
        "title": "Read things",
        "description": "reader tool",
        "inputSchema": make_tool().parameters,
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "title": "Read things"},
    }
    assert "title" not in writer
    assert writer["annotations"] == {"readOnlyHint": False, "destructiveHint": True}
    # Both views come from the same index, in the same order.
    assert [s["function"]["name"] for s in registry.schemas()] == ["reader", "writer"]


def test_definition_is_frozen() -> None:
    tool = make_tool()
    with pytest.raises(AttributeError):
        tool.name = "other"  # type: ignore[misc]


# -- runtime ---------------------------------------------------------------------------


@pytest.fixture
def runtime() -> ToolRuntime:
    return ToolRuntime(ToolRegistry([make_tool()]))


async def test_execute_runs_the_handler(runtime: ToolRuntime) -> None:
    assert (
        await runtime.execute("echo", '{"text": "hi", "count": 2}') == '{"count": 2, "text": "hi"}'
    )


async def test_unknown_tool(runtime: ToolRuntime) -> None:
    assert await runtime.execute("write_file", "{}") == "Error: Unknown tool: write_file"


async def test_bad_json(runtime: ToolRuntime) -> None:
    output = await runtime.execute("echo", '{"text": ')
    assert output.startswith("Error: Invalid arguments: ")
    assert is_error(output)


@pytest.mark.parametrize("raw", ["[]", "null", "123", '"text"'])
async def test_non_object_arguments(runtime: ToolRuntime, raw: str) -> None:
    assert await runtime.execute("echo", raw) == "Error: arguments must be an object"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "missing required field 'text' (required)"),
        ({"text": 5}, "'text' must be of type string, got 5 (type)"),
        ({"text": ""}, "'text' must be at least 1 characters long (minLength)"),
        ({"text": "x", "count": 0}, "'count' must be >= 1 (minimum)"),
        ({"text": "x", "count": 11}, "'count' must be <= 10 (maximum)"),
        ({"text": "x", "count": True}, "'count' must be of type integer, got true (type)"),
        ({"text": "x", "flag": "yes"}, "'flag' must be of type boolean"),
        ({"text": "x", "extra": 1}, "'extra' was unexpected) (additionalProperties)"),
    ],
)
async def test_schema_violations_name_field_and_rule(
    runtime: ToolRuntime, arguments: dict[str, Any], expected: str
) -> None:
    output = await runtime.execute("echo", json.dumps(arguments))
    assert output.startswith("Error: Invalid arguments for echo: ")
    assert expected in output


async def test_handler_is_not_called_on_invalid_arguments() -> None:
    calls: list[dict[str, Any]] = []

    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        calls.append(arguments)
        return "ok"

    runtime = ToolRuntime(ToolRegistry([make_tool(handler=handler)]))
    await runtime.execute("echo", '{"text": 1}')
    assert calls == []
    assert await runtime.execute("echo", '{"text": "a"}') == "ok"
    assert calls == [{"text": "a"}]


async def test_handler_exceptions_propagate() -> None:
    async def broken(arguments: dict[str, Any], context: ToolContext) -> str:
        raise RuntimeError("bug in the tool")

    runtime = ToolRuntime(ToolRegistry([make_tool(handler=broken)]))
    with pytest.raises(RuntimeError, match="bug in the tool"):
        await runtime.execute("echo", '{"text": "a"}')


async def test_an_environment_error_a_tool_did_not_word_fails_only_that_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def unlucky(arguments: dict[str, Any], context: ToolContext) -> str:
        raise PermissionError(13, "Permission denied", "/srv/data")

    runtime = ToolRuntime(ToolRegistry([make_tool(handler=unlucky)]))
    out = await runtime.execute("echo", '{"text": "a"}')
    assert out == "Error: echo failed: Permission denied (/srv/data)"
    assert "unhandled environment error" in caplog.text  # seen, not swallowed


def test_invalid_declared_schema_is_refused_at_assembly() -> None:
    bad = make_tool(parameters={"type": "object", "properties": {"x": {"type": "nonsense"}}})
    with pytest.raises(Exception, match="nonsense"):
        ToolRuntime(ToolRegistry([bad]))


async def test_validators_are_compiled_once_per_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    import jsonschema

    built: list[object] = []
    real = jsonschema.Draft202012Validator

    def counting(schema: dict[str, Any]) -> Any:
        built.append(schema)
        return real(schema)

    counting.check_schema = real.check_schema  # type: ignore[attr-defined]
    monkeypatch.setattr(jsonschema, "Draft202012Validator", counting)
    runtime = ToolRuntime(ToolRegistry([make_tool()]))
    for _ in range(5):
        await runtime.execute("echo", '{"text": "a"}')
    assert len(built) == 1


def test_is_read_only() -> None:
    runtime = ToolRuntime(ToolRegistry([make_tool("r", read_only=True), make_tool("w")]))
    assert runtime.is_read_only("r")
    assert not runtime.is_read_only("w")
    assert not runtime.is_read_only("missing")


# -- import boundaries -----------------------------------------------------------------


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    return set(out.stdout.split())


def test_importing_tooling_loads_no_tool() -> None:
    modules = _modules_after(
        "import tooling, tooling.contract, tooling.registry, tooling.runtime, tooling.workspace"
    )
    assert not {m for m in modules if m == "tools" or m.startswith("tools.")}
    assert "server.engine.bootstrap" not in modules
    assert "openai" not in modules


def test_importing_a_tool_module_registers_nothing() -> None:
    code = (
        "import gc, tools.shell, tools.read_file, tools.write_file, tools.edit_file, tools.glob\n"
        "from tooling.registry import ToolRegistry\n"
        "print(sum(isinstance(o, ToolRegistry) for o in gc.get_objects()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "0"


# -- workspace -------------------------------------------------------------------------


def test_workspace_resolves_inside(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    ws = Workspace(tmp_path)
    assert ws.resolve("src/a.py") == tmp_path.resolve() / "src" / "a.py"
    assert ws.resolve(str(tmp_path / "src")) == tmp_path.resolve() / "src"
    assert ws.resolve(".") == tmp_path.resolve()
    assert ws.relative(ws.resolve("src/a.py")) == "src/a.py"


@pytest.mark.parametrize("path", ["../x", "src/../../x", "/etc/passwd", ""])
def test_workspace_refuses_escapes(tmp_path: Path, path: str) -> None:
    (tmp_path / "src").mkdir()
    with pytest.raises(WorkspaceError):
        Workspace(tmp_path).resolve(path)


def test_workspace_refuses_symlinks_leading_out(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("s")
    (root / "file_link").symlink_to(outside / "secret")
    (root / "dir_link").symlink_to(outside)
    (root / "inner_link").symlink_to(root / "real")
    ws = Workspace(root)
    with pytest.raises(WorkspaceError):
        ws.resolve("file_link")
    with pytest.raises(WorkspaceError):
        ws.resolve("dir_link/secret")
    assert ws.resolve("inner_link") == root.resolve() / "real"


def test_workspace_refuses_a_prefix_sibling(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj-evil").mkdir()
    with pytest.raises(WorkspaceError):
        Workspace(tmp_path / "proj").resolve(str(tmp_path / "proj-evil" / "x"))


def test_workspace_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError):
        Workspace(tmp_path / "missing")


def test_workspace_reports_symlink_loops(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(WorkspaceError, match="Cannot resolve"):
        Workspace(tmp_path).resolve("a/x")
