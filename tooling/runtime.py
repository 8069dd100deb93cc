"""The runtime: look a tool up, parse and validate its arguments, run it."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .context import ToolContext
from .contract import ToolDefinition, is_error
from .permissions import PermissionRequest, refused_without_asker
from .registry import ToolRegistry

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

log = logging.getLogger(__name__)


class ToolRuntime:
    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry
        # Imported here, not at module level: jsonschema is a sizeable share of the
        # server's start-up, and a runtime is only built when a folder is first used.
        import jsonschema

        # Compiled once per tool: the declared schema is the single source of truth
        # for argument shape, so handlers only check what a schema cannot express.
        self._validators: dict[str, Validator] = {}
        for tool in registry:
            jsonschema.Draft202012Validator.check_schema(tool.parameters)
            self._validators[tool.name] = jsonschema.Draft202012Validator(tool.parameters)

    def without(self, turned_off: Callable[[str], bool]) -> ToolRuntime:
        """This runtime without the tools ``turned_off`` names (not offered, not run: a
        call to one is an unknown tool's); the validators are shared, not compiled again."""
        narrowed = object.__new__(ToolRuntime)
        narrowed._registry = ToolRegistry(t for t in self._registry if not turned_off(t.name))
        narrowed._validators = {
            name: v for name, v in self._validators.items() if not turned_off(name)
        }
        return narrowed

    @property
    def registry(self) -> ToolRegistry:
        return self._registry

    def schemas(self) -> list[dict[str, Any]]:
        return self._registry.schemas()

    def describe(self) -> list[dict[str, Any]]:
        """MCP tool descriptions (the registry's; treat them as read-only)."""
        return self._registry.describe()

    def summary_key(self, name: str) -> str | None:
        """The argument a one-line summary of a call to ``name`` shows (None: unknown tool)."""
        tool = self._registry.get(name)
        return tool.summary_argument() if tool is not None else None

    def display_name(self, name: str) -> str | None:
        """How clients name a call to ``name`` (``ToolDefinition.display_name``; None: the
        name itself, or an unknown tool)."""
        tool = self._registry.get(name)
        return tool.display_name if tool is not None else None

    def kind(self, name: str) -> str:
        """What a call to ``name`` does (``ToolDefinition.kind``; "other": unknown tool)."""
        tool = self._registry.get(name)
        return tool.kind if tool is not None else "other"

    def is_read_only(self, name: str) -> bool:
        tool = self._registry.get(name)
        return tool is not None and tool.read_only

    async def execute(
        self, name: str, raw_arguments: str, context: ToolContext | None = None
    ) -> str:
        """Run one call. ``context`` is what the handler may use; without one it gets a
        fresh context (an empty ledger: writes over existing files are refused)."""
        tool = self._registry.get(name)
        if tool is None:
            why = context.unavailable(name) if context and context.unavailable else None
            return f"Error: {why}" if why else f"Error: Unknown tool: {name}"

        try:
            arguments = json.loads(raw_arguments) if raw_arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return f"Error: Invalid arguments: {exc}"
        if not isinstance(arguments, dict):
            return "Error: arguments must be an object"

        validator = self._validators[name]
        if not validator.is_valid(arguments):  # the fast path; errors are described below
            return f"Error: Invalid arguments for {name}: {_first_violation(validator, arguments)}"

        context = context if context is not None else ToolContext()
        try:
            if tool.destructive or tool.permission is not None:
                permission = tool.permission(arguments) if tool.permission else None
                if tool.permission_check is not None:
                    permission = await tool.permission_check(arguments) or permission
                request = PermissionRequest(
                    tool_name=name,
                    tool_title=tool.title or name,
                    call_id=context.call_id,
                    arguments=arguments,
                    raw_arguments=raw_arguments,
                    permission=permission,
                    summary_key=tool.summary_argument(),
                    display_name=tool.display_name,
                )
                if context.permissions is None:
                    decision = refused_without_asker(request)
                else:
                    decision = await context.permissions.authorize(request)
                context.waits.seconds += decision.waited_s
                if not decision.allowed:
                    return f"Error: {decision.message}"
            if not tool.read_only and context.journal is not None:
                # Nothing may change before the ask's checkpoint is recorded (asked after
                # the permission, so the user's question never waits for the snapshot).
                await context.journal.ready()
            # Exceptions the handler did not turn into ``Error:`` text are bugs: let them out.
            if tool.read_only or tool.kind in _REPORTING_KINDS or context.journal is None:
                output = await tool.handler(arguments, context)
            else:
                with context.journal.running():  # its changes are told apart by time
                    output = await tool.handler(arguments, context)
            return await _with_path_note(tool, arguments, context, output)
        except asyncio.CancelledError:
            context.cancelled.set()  # reaches work the handler runs in threads
            raise
        except OSError as exc:
            # Not a bug but the environment refusing (a disk error, a permission, a folder
            # gone) in a place the tool did not word itself: this call fails, not the ask.
            # Logged with the traceback, so the tool that should say it better is found.
            log.warning("%s: unhandled environment error %r", name, exc, exc_info=True)
            where = f" ({exc.filename})" if exc.filename else ""
            return f"Error: {name} failed: {exc.strerror or exc}{where}"


# Tools that report each change through the journal (the file tools).
_REPORTING_KINDS = frozenset({"edit"})

# The kinds of call that act on one file, named by the tool's summary argument.
_FILE_KINDS = frozenset({"read", "edit", "delete", "move"})


async def _with_path_note(
    tool: ToolDefinition, arguments: dict[str, Any], context: ToolContext, output: str
) -> str:
    """``output``, followed by what the model must be told of the file the call acted on
    (``ToolContext.path_notes``: a subfolder's instructions, the first time)."""
    if context.path_notes is None or tool.kind not in _FILE_KINDS or is_error(output):
        return output
    key = tool.summary_argument()
    path = arguments.get(key) if key is not None else None
    if not isinstance(path, str):
        return output
    note = await context.path_notes(path)
    return f"{output}\n\n{note}" if note else output


def _first_violation(validator: Validator, arguments: dict[str, Any]) -> str:
    errors = sorted(validator.iter_errors(arguments), key=_error_order)
    return _describe(errors[0])


def _error_order(error: ValidationError) -> tuple[int, str]:
    return (len(error.path), "/".join(str(p) for p in error.path))


def _describe(error: ValidationError) -> str:
    """Name the field and the rule, e.g. ``'limit': must be >= 1 (minimum)``."""
    field = ".".join(str(p) for p in error.absolute_path)
    rule = str(error.validator)
    value = error.validator_value
    if rule == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return f"missing required field '{missing}' (required)"
    if rule == "additionalProperties":
        return f"{error.message} (additionalProperties)"
    where = f"'{field}'" if field else "arguments"
    if rule == "type":
        return f"{where} must be of type {value}, got {json.dumps(error.instance)[:80]} (type)"
    if rule == "minimum":
        return f"{where} must be >= {value} (minimum)"
    if rule == "maximum":
        return f"{where} must be <= {value} (maximum)"
    if rule == "minLength":
        return f"{where} must be at least {value} characters long (minLength)"
    return f"{where}: {error.message} ({rule})"
