"""The agent protocol, one side of the wire: method names, error codes, params, results.

Params and results are attrs classes with snake_case fields; the converter here renames
them to camelCase on the wire and leaves out optional fields at their default (as
lsprotocol's, the one pygls uses, does; not lsprotocol itself: its types take ~0.3 s to
import, which the ACP face would pay at start-up for one Range). :func:`parse`
structures a request's raw params into its class, so a malformed param is refused in
one place, with -32602 naming the field, instead of being checked by hand in each
handler. Clients (the terminal
client among them) import names from here, never from the server module.

The protocol is documented for client authors in ``docs/protocol.md``.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import attrs
import cattrs
import cattrs.gen

PROTOCOL_VERSION: Final = 1  # additions are announced in "requests"; 2 = a breaking change

# -- methods ---------------------------------------------------------------------------
AGENT_ASK: Final = "agent/ask"
AGENT_NEW_SESSION: Final = "agent/newSession"
AGENT_LIST_TOOLS: Final = "agent/listTools"
AGENT_END_SESSION: Final = "agent/endSession"
AGENT_SESSIONS: Final = "agent/sessions"
AGENT_SESSION_HISTORY: Final = "agent/sessionHistory"
AGENT_TOOL_OUTPUT: Final = "agent/toolOutput"
AGENT_CHECKPOINTS: Final = "agent/checkpoints"
AGENT_DIFF: Final = "agent/diff"
AGENT_REWIND: Final = "agent/rewind"
AGENT_LIST_MODELS: Final = "agent/listModels"
AGENT_CHECK_CONNECTION: Final = "agent/checkConnection"
AGENT_GRANTS: Final = "agent/grants"
AGENT_SANDBOX_STATUS: Final = "agent/sandboxStatus"
AGENT_REVOKE_GRANT: Final = "agent/revokeGrant"
AGENT_COMPACT: Final = "agent/compact"
AGENT_MCP_SERVERS: Final = "agent/mcpServers"
AGENT_APPROVE_MCP_SERVER: Final = "agent/approveMcpServer"
AGENT_CONTROL_MCP_SERVER: Final = "agent/controlMcpServer"
AGENT_MCP_SERVER_LOG: Final = "agent/mcpServerLog"
AGENT_INSTRUCTIONS: Final = "agent/instructions"
AGENT_LIST_COMMANDS: Final = "agent/listCommands"
# Server -> client notifications.
AGENT_TOOL_ACTIVITY: Final = "agent/toolActivity"
AGENT_ASK_PROGRESS: Final = "agent/askProgress"
AGENT_COMPACTION: Final = "agent/compaction"
AGENT_ANSWER_DELTA: Final = "agent/answerDelta"
# Server -> client request; a client that can answer sets
# capabilities.experimental.agent.requestPermission = true in initialize.
AGENT_REQUEST_PERMISSION: Final = "agent/requestPermission"
CLIENT_CAN_ANSWER_PERMISSION: Final = "requestPermission"

REQUESTS: Final = (
    AGENT_ASK,
    AGENT_NEW_SESSION,
    AGENT_LIST_TOOLS,
    AGENT_END_SESSION,
    AGENT_SESSIONS,
    AGENT_SESSION_HISTORY,
    AGENT_TOOL_OUTPUT,
    AGENT_CHECKPOINTS,
    AGENT_DIFF,
    AGENT_REWIND,
    AGENT_LIST_MODELS,
    AGENT_CHECK_CONNECTION,
    AGENT_GRANTS,
    AGENT_REVOKE_GRANT,
    AGENT_COMPACT,
    AGENT_SANDBOX_STATUS,
    AGENT_MCP_SERVERS,
    AGENT_APPROVE_MCP_SERVER,
    AGENT_CONTROL_MCP_SERVER,
    AGENT_MCP_SERVER_LOG,
    AGENT_INSTRUCTIONS,
    AGENT_LIST_COMMANDS,
)
NOTIFICATIONS: Final = (
    AGENT_TOOL_ACTIVITY,
    AGENT_ASK_PROGRESS,
    AGENT_COMPACTION,
    AGENT_ANSWER_DELTA,
)

# ``channel`` of agent/answerDelta.
ANSWER_CHANNEL: Final = "answer"  # the assistant's text; a turn's deltas add up to it
REASONING_CHANNEL: Final = "reasoning"  # thinking some models send beside it, never sent back

# -- error codes -------------------------------------------------------------------------
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
MODEL_NOT_CONFIGURED: Final = -32001
MODEL_REQUEST_FAILED: Final = -32002
NO_WORKSPACE_FOLDER: Final = -32003
SESSION_BUSY: Final = -32004
CONTEXT_WINDOW_EXCEEDED: Final = -32005
REQUEST_CANCELLED: Final = -32800

# The settings section every client forwards (raw user values; the server validates).
SETTINGS_SECTION: Final = "agentLsp"


# -- params --------------------------------------------------------------------------------


class ParamsError(ValueError):
    """Params that do not fit their class; ``field`` is the wire path (e.g. ``prompt``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _non_empty(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not value.strip():
        raise ParamsError(_camel(attribute.name), "must be a non-empty string")


def _names(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not all(isinstance(v, str) and v.strip() for v in value):
        raise ParamsError(_camel(attribute.name), "must be a list of non-empty strings")


@attrs.define
class FolderParams:
    """Params of requests that act on one open folder (default: the first)."""

    workspace_folder: str | None = attrs.field(default=None, validator=_non_empty)


@attrs.define
class SessionParams:
    session_id: str = attrs.field(validator=_non_empty)


@attrs.define
class ProjectParams:
    """Params of requests about what an ask would be told, or may do: of a conversation (its
    folder, and what it has been told or allowed since) or of a folder (default: the first)."""

    session_id: str | None = attrs.field(default=None, validator=_non_empty)
    workspace_folder: str | None = attrs.field(default=None, validator=_non_empty)


def _line_or_character(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not 0 <= value <= 2**31 - 1:
        raise ParamsError(attribute.name, "must be an integer from 0 to 2^31 - 1")


@attrs.define
class Position:
    """LSP's Position (lsprotocol.types.Position)."""

    line: int = attrs.field(validator=_line_or_character)
    character: int = attrs.field(validator=_line_or_character)


@attrs.define
class Range:
    """LSP's Range (lsprotocol.types.Range)."""

    start: Position
    end: Position


@attrs.define
class ActiveDocument:
    uri: str = attrs.field(validator=_non_empty)
    selection: Range | None = None  # an empty range: the cursor


@attrs.define
class EditorContext:
    """What the user is looking at, sent with an ask (``agent/ask`` ``context``)."""

    active_document: ActiveDocument | None = None
    documents: list[str] | None = None  # other documents the user points at (URIs)


@attrs.define
class AskParams:
    prompt: str = attrs.field(validator=_non_empty)
    session_id: str | None = attrs.field(default=None, validator=_non_empty)
    workspace_folder: str | None = attrs.field(default=None, validator=_non_empty)
    work_done_token: int | str | None = None
    context: EditorContext | None = None
    # Tools the user turned off for this ask (a client's per-conversation choice): tool
    # names, or "mcp__SERVER__*" for all of one MCP server's tools. Left out of the tools
    # the model is offered; a call to one is refused, saying so.
    disabled_tools: list[str] | None = attrs.field(default=None, validator=_names)


@attrs.define
class ToolOutputParams:
    session_id: str = attrs.field(validator=_non_empty)
    call_id: str = attrs.field(validator=_non_empty)


@attrs.define
class RevokeGrantParams:
    session_id: str = attrs.field(validator=_non_empty)
    grant_id: str = attrs.field(validator=_non_empty)


@attrs.define
class DiffParams:
    session_id: str = attrs.field(validator=_non_empty)
    checkpoint_id: str = attrs.field(validator=_non_empty)
    include_content: bool = False  # whole texts before and after, for a diff view


@attrs.define
class RewindParams:
    session_id: str = attrs.field(validator=_non_empty)
    checkpoint_id: str = attrs.field(validator=_non_empty)
    dry_run: bool = False


@attrs.define
class ApproveMcpServerParams:
    name: str = attrs.field(validator=_non_empty)
    workspace_folder: str | None = attrs.field(default=None, validator=_non_empty)


MCP_SERVER_ACTIONS: Final = ("start", "stop", "restart")


@attrs.define
class ControlMcpServerParams:
    """``agent/controlMcpServer``: the user starts, stops or restarts one server."""

    name: str = attrs.field(validator=_non_empty)
    action: str = attrs.field(validator=_non_empty)  # one of MCP_SERVER_ACTIONS
    workspace_folder: str | None = attrs.field(default=None, validator=_non_empty)


# -- results and notifications ---------------------------------------------------------------


@attrs.define
class NewSessionResult:
    session_id: str
    workspace_folder: str


@attrs.define
class EndSessionResult:
    ended: bool


@attrs.define
class ToolCallResult:
    id: str
    name: str
    arguments: str
    ok: bool
    output: str  # a preview; agent/toolOutput serves the whole output
    duration_ms: float  # without the time its permission request waited for the user
    waited_ms: float = 0.0  # that time (0: nobody was asked)


@attrs.define
class AskResult:
    answer: str
    session_id: str
    stop_reason: str
    turns: int
    tool_calls: list[ToolCallResult]
    usage: dict[str, int]
    model: str = ""  # the model that answered (clients show it under the answer)
    checkpoint_id: str | None = None  # agent/diff shows what it changed, agent/rewind undoes it


@attrs.define
class SessionSummary:
    session_id: str
    workspace_folder: str
    title: str  # the first prompt, shortened
    created: float  # seconds since the epoch
    updated: float
    turns: int  # asks answered
    # "done"; "running": an ask is under way in this server; "interrupted": its last ask
    # never finished (its server stopped or was killed mid-ask), the prompt is kept and
    # the ask's checkpoint can be undone.
    state: str = "done"


@attrs.define
class SessionsResult:
    sessions: list[SessionSummary]


@attrs.define
class HistoryToolCall:
    id: str
    name: str
    arguments: str
    ok: bool
    output: str  # a preview
    # How clients name the call (the tool's display name, as agent/toolActivity's
    # displayName); None: the name itself, or a tool not known now.
    display_name: str | None = None


@attrs.define
class HistoryEntry:
    role: str  # "user" or "assistant"
    content: str
    tool_calls: list[HistoryToolCall] = attrs.field(factory=list)


@attrs.define
class SessionHistoryResult:
    session_id: str
    workspace_folder: str
    entries: list[HistoryEntry]


@attrs.define
class ToolOutputResult:
    call_id: str
    name: str
    arguments: str
    ok: bool
    output: str
    truncated: bool  # the tool itself cut the output (bash keeps head and tail)


@attrs.define
class ModelInfo:
    id: str


@attrs.define
class ListModelsResult:
    models: list[ModelInfo]  # what GET /models lists, sorted
    current: str  # the model asks use now


@attrs.define
class ConnectionCheck:
    name: str  # configuration, models, model, request
    ok: bool
    message: str  # plain words: what works, or what to fix
    kind: str | None = None  # a failed check's fix: unreachable | url | auth | model | other


@attrs.define
class CheckConnectionResult:
    ok: bool
    checks: list[ConnectionCheck]


@attrs.define
class CheckpointFile:
    path: str  # relative to the session's folder, "/"-separated
    status: str  # "added" | "modified" | "deleted"
    added: int | None  # lines; None for binary or very large files
    removed: int | None


@attrs.define
class CheckpointSummary:
    id: str
    prompt: str  # shortened
    time: str  # when the ask started: ISO 8601, UTC
    state: str  # "running" | "done" | "interrupted"
    coverage: str  # "all" | "fileTools" (no git: bash changes not recorded)
    notes: list[str]
    files: list[CheckpointFile]


@attrs.define
class CheckpointsResult:
    checkpoints: list[CheckpointSummary]


@attrs.define
class FileDiff:
    path: str
    status: str
    diff: str  # unified; "" when binary
    binary: bool
    before: str | None = None  # with includeContent only (None: absent, binary, too large)
    after: str | None = None


@attrs.define
class DiffResult:
    files: list[FileDiff]


@attrs.define
class RewindConflict:
    path: str
    reason: str


@attrs.define
class RewindResult:
    restored: list[str]
    in_editor: list[str]  # of restored: put back in an open editor buffer, unsaved
    conflicts: list[RewindConflict]
    conversation_truncated: bool
    dry_run: bool


@attrs.define
class AskProgress:
    """``agent/askProgress``: what an ask is doing, for clients to show (never parse
    the human ``message``). ``phase``: model, writing, tools, permission, compacting,
    starting (MCP servers the ask waits for, then those it goes without: ``servers``), done."""

    session_id: str
    turn: int
    phase: str
    message: str
    # A running call's progress (phase tools; an MCP server's notifications/progress).
    call_id: str | None = None
    progress: float | None = None
    total: float | None = None
    servers: list[str] | None = None  # phase starting: the servers waited for / missing


@attrs.define
class ToolActivity:
    """``agent/toolActivity``: a tool call's state, sent as it changes (built as a dict in
    server/agent/activity.py and server/lsp/ask_reporting.py; the test holds them to this)."""

    session_id: str
    call_id: str
    name: str  # the model's: possibly a tool that does not exist (escape it to show it)
    arguments: str  # the raw JSON text the model sent (escape it to show it)
    turn: int
    status: str  # waiting (for the user's permission), started, completed or failed
    output: str | None = None  # completed/failed: the result's first 2,000 characters
    # completed/failed: the call's time, without the time the user took to answer its
    # permission request (waited_ms): a call is not slow because its user was thinking.
    duration_ms: float | None = None
    waited_ms: float | None = None  # completed/failed, after a permission request
    # The argument a one-line summary of the call shows (the tool's definition says which);
    # absent for a tool the server does not know. Clients then try path, command, pattern.
    summary_key: str | None = None
    # How to name the call when the tool's name reads badly, escaped: an MCP tool's
    # "get_current_time — time (MCP server)" for mcp__time__get_current_time; absent: name.
    display_name: str | None = None


@attrs.define
class GrantInfo:
    """An always-answer of the user, bound to one exact call."""

    grant_id: str
    tool_name: str
    arguments: str  # canonical JSON of the call's arguments
    title: str
    decision: str  # "allow" or "reject"
    created: float


@attrs.define
class GrantsResult:
    grants: list[GrantInfo]


@attrs.define
class RevokeGrantResult:
    revoked: bool


@attrs.define
class PermissionOption:
    option_id: str
    name: str
    kind: str  # allow_once | allow_always | reject_once | reject_always (ACP's kinds)


@attrs.define
class RequestPermissionParams:
    """``agent/requestPermission`` (server -> client). The result is ACP's
    ``{"outcome": {"outcome": "selected", "optionId": ...}}`` or
    ``{"outcome": {"outcome": "cancelled"}}``."""

    session_id: str
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    title: str
    reason: str
    options: list[PermissionOption]
    # What an "always" answer covers, one sentence to show as it is (e.g. "Network access
    # to localhost for any command, through the proxy, for this conversation"); absent when
    # no "always" answer is offered (an MCP server's approval).
    always_scope: str | None = None


@attrs.define
class CompactResult:
    """``agent/compact``: the history's estimated size before and after, in tokens."""

    tokens_before: int
    tokens_after: int
    context_window: int
    elided_outputs: int  # tool outputs replaced by a note (agent/toolOutput still has them)
    summarized_messages: int  # messages replaced by the model's summary


@attrs.define
class CompactionNotice:
    """``agent/compaction``: an ask compacted its conversation before a model request.
    ``trigger``: ``threshold`` (it would have passed compactThreshold of the window) or
    ``overflow`` (the provider answered that it does not fit)."""

    session_id: str
    turn: int
    trigger: str
    tokens_before: int
    tokens_after: int
    context_window: int
    elided_outputs: int
    summarized_messages: int
    duration_ms: float


@attrs.define
class AnswerDelta:
    """``agent/answerDelta``: the next piece of a turn's text, in order, as it streams.

    Coalesced (a few dozen a second at most; the first one as soon as the model
    starts). The ``answer`` deltas of the ask's last turn add up to its ``answer``."""

    session_id: str
    turn: int
    delta: str
    channel: str  # ANSWER_CHANNEL or REASONING_CHANNEL


@attrs.define
class McpServerInfo:
    """One MCP server of a folder, as ``agent/mcpServers`` lists it."""

    name: str
    origin: str  # "user" (the configuration file), "editor" (mcpServers), "workspace"
    transport: str  # "stdio" | "http"; "" when the definition names neither
    target: str  # the command line or URL as written (variables not replaced)
    # starting | ready | failed | disabled | stopped (by the user) | awaiting-approval | rejected
    state: str
    tools: list[str]  # the registry names of its tools (while ready)
    error: str | None = None  # why it failed (a stdio server's stderr tail included)
    trusted: bool = False  # trust = true: its tools run without asking
    warnings: list[str] = attrs.field(factory=list)  # problems of its definition


@attrs.define
class McpServersResult:
    servers: list[McpServerInfo]


@attrs.define
class McpServerLogResult:
    """``agent/mcpServerLog``: one server's own output: its state changes (timed), then
    the last lines of a stdio server's stderr (escape it to show it)."""

    name: str
    text: str


@attrs.define
class ApproveMcpServerResult:
    """``approved``: the user allowed it (it is starting); else ``state`` says where it is."""

    approved: bool
    state: str


@attrs.define
class InstructionInfo:
    """One instruction file the model is given (``agent/instructions``)."""

    path: str  # absolute
    uri: str
    name: str  # as the prompt's heading names it: "AGENTS.md", "sub/AGENTS.md", "~/…"
    source: str  # "user" (agent-lsp's config folder), "workspace" (its root), "nested"
    bytes: int  # the file's size
    cut: bool  # only its first part is given (instructionsMaxBytes)


@attrs.define
class SkillInfo:
    """One skill the system prompt lists (its SKILL.md is read by the model when it applies)."""

    name: str
    description: str
    path: str  # the SKILL.md, absolute
    source: str  # "user" | "workspace"


@attrs.define
class InstructionsResult:
    instructions: list[InstructionInfo]
    skills: list[SkillInfo]
    warnings: list[str]  # a file refused (outside the workspace), cut, a malformed skill


@attrs.define
class CommandInfo:
    """One ``/NAME`` a prompt may start with (``agent/listCommands``)."""

    name: str
    description: str
    source: str  # "builtin" (a client action), "user", "workspace" (a prompt file)
    argument_hint: str | None = None
    path: str | None = None  # a prompt file's path


@attrs.define
class CommandsResult:
    commands: list[CommandInfo]


# -- what each method carries ----------------------------------------------------------------

# (params, result) of every method. ``Any``: JSON this module does not declare as a class yet
# (built as a dict where it is sent); a notification's result is ``None``. The client-facing
# schema, docs/protocol.schema.json, is generated from this table and the classes above
# (docs/protocol_schema.py), and the VS Code client's types from the schema.
SIGNATURES: Final[dict[str, tuple[Any, Any]]] = {
    AGENT_ASK: (AskParams, AskResult),
    AGENT_NEW_SESSION: (FolderParams, NewSessionResult),
    AGENT_LIST_TOOLS: (FolderParams, Any),  # {"tools": the registry's describe()}
    AGENT_END_SESSION: (SessionParams, EndSessionResult),
    AGENT_SESSIONS: (FolderParams, SessionsResult),
    AGENT_SESSION_HISTORY: (SessionParams, SessionHistoryResult),
    AGENT_TOOL_OUTPUT: (ToolOutputParams, ToolOutputResult),
    AGENT_CHECKPOINTS: (SessionParams, CheckpointsResult),
    AGENT_DIFF: (DiffParams, DiffResult),
    AGENT_REWIND: (RewindParams, RewindResult),
    AGENT_LIST_MODELS: (FolderParams, ListModelsResult),
    AGENT_CHECK_CONNECTION: (FolderParams, CheckConnectionResult),
    AGENT_GRANTS: (SessionParams, GrantsResult),
    AGENT_REVOKE_GRANT: (RevokeGrantParams, RevokeGrantResult),
    AGENT_COMPACT: (SessionParams, CompactResult),
    AGENT_SANDBOX_STATUS: (ProjectParams, Any),  # tools/sandbox.py: describe, and "grants"
    AGENT_MCP_SERVERS: (FolderParams, McpServersResult),
    AGENT_APPROVE_MCP_SERVER: (ApproveMcpServerParams, ApproveMcpServerResult),
    AGENT_CONTROL_MCP_SERVER: (ControlMcpServerParams, McpServerInfo),
    AGENT_MCP_SERVER_LOG: (ApproveMcpServerParams, McpServerLogResult),
    AGENT_INSTRUCTIONS: (ProjectParams, InstructionsResult),
    AGENT_LIST_COMMANDS: (ProjectParams, CommandsResult),
    AGENT_TOOL_ACTIVITY: (ToolActivity, None),
    AGENT_ASK_PROGRESS: (AskProgress, None),
    AGENT_COMPACTION: (CompactionNotice, None),
    AGENT_ANSWER_DELTA: (AnswerDelta, None),
    AGENT_REQUEST_PERMISSION: (RequestPermissionParams, Any),  # ACP's outcome (the docstring)
}


# -- structuring ------------------------------------------------------------------------------

_Params = TypeVar("_Params")


def _strict(kind: type, name: str) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if isinstance(value, bool) and kind is not bool:
            raise TypeError(f"must be {name}")
        if not isinstance(value, kind):
            raise TypeError(f"must be {name}")
        return value

    return hook


def _token(value: Any, _: Any) -> int | str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError("must be a string or an integer")
    return value


def _wire(name: str) -> str:
    return _camel(name.removesuffix("_"))


def _make_converter() -> cattrs.Converter:
    # Our own converter (pygls keeps its own): strict primitives here would change how
    # pygls structures ordinary LSP messages. cattrs would otherwise turn 5 into "5".
    # Field names as lsprotocol's converter gives them (camelCase, a trailing _ dropped),
    # optional fields left out at their default.
    converter = cattrs.Converter()

    def overrides(cls: type) -> dict[str, Any]:
        return {
            a.name: cattrs.gen.override(rename=_wire(a.name), omit_if_default=True)
            for a in attrs.fields(cls)
        }

    converter.register_unstructure_hook_factory(
        attrs.has, lambda cls: cattrs.gen.make_dict_unstructure_fn(cls, converter, **overrides(cls))
    )
    converter.register_structure_hook_factory(
        attrs.has, lambda cls: cattrs.gen.make_dict_structure_fn(cls, converter, **overrides(cls))
    )
    for kind, name in ((str, "a string"), (int, "an integer"), (bool, "true or false")):
        converter.register_structure_hook(kind, _strict(kind, name))
    converter.register_structure_hook(float, _strict(int | float, "a number"))
    converter.register_structure_hook(int | str, _token)
    converter.register_structure_hook(
        int | str | None, lambda value, t: None if value is None else _token(value, t)
    )
    return converter


_converter = _make_converter()


def parse(raw: Any, cls: type[_Params]) -> _Params:
    """``raw`` params structured into ``cls``; :class:`ParamsError` names what is wrong."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ParamsError("params", "must be an object")
    try:
        return _converter.structure(raw, cls)
    except ParamsError:
        raise
    except Exception as exc:  # cattrs wraps every failure; find the first leaf
        field, message = _first_problem(exc, [])
        raise ParamsError(field, message) from None


def to_wire(value: Any) -> Any:
    """A result or notification as plain JSON (camelCase keys)."""
    return _converter.unstructure(value)


def _first_problem(exc: BaseException, path: list[str]) -> tuple[str, str]:
    if isinstance(exc, cattrs.ClassValidationError | cattrs.IterableValidationError):
        for sub in exc.exceptions:
            step = path
            for note in getattr(sub, "__notes__", ()):
                if hasattr(note, "name"):  # an attribute of a class
                    step = [*path, _camel(str(note.name))]
                    break
                if hasattr(note, "index"):  # an item of a list
                    step = [*path, f"[{note.index}]"]
                    break
            return _first_problem(sub, step)
    if isinstance(exc, ParamsError):  # raised by a validator, which knows its field
        return _join([*path, exc.field]), exc.message
    if isinstance(exc, KeyError):
        return _join(path), "is required"
    message = str(exc) if isinstance(exc, TypeError | ValueError) and str(exc) else "is invalid"
    if message.startswith(("must ", "is ")):
        return _join(path), message
    return _join(path), f"is invalid ({message})"


def _join(path: list[str]) -> str:
    return "".join(p if p.startswith("[") else f".{p}" for p in path).lstrip(".")


def warm() -> None:
    """Generate the (un)structuring code of every class now (cattrs compiles it on first
    use, a few milliseconds each), in the warm-up thread rather than in a first request."""
    for value in list(globals().values()):
        if isinstance(value, type) and attrs.has(value):
            _converter.get_structure_hook(value)
            _converter.get_unstructure_hook(value)
