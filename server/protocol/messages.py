"""The params, results and notifications of the agent protocol, as classes.

Params and results are attrs classes with snake_case fields; the converter of
:mod:`.convert` renames them to camelCase on the wire and leaves out optional fields at
their default (as lsprotocol's, the one pygls uses, does; not lsprotocol itself: its types
take ~0.3 s to import, which the ACP face would pay at start-up for one Range). Two
results built as JSON by the layers below the server (``agent/listTools``'s tools,
``agent/sandboxStatus``) are declared as ``TypedDict``s with their wire names: the types of
that JSON, unconverted.
"""

from __future__ import annotations

from typing import Any, Final, NotRequired, TypedDict

import attrs

# ``channel`` of agent/answerDelta.
ANSWER_CHANNEL: Final = "answer"  # the assistant's text; a turn's deltas add up to it
REASONING_CHANNEL: Final = "reasoning"  # thinking some models send beside it, never sent back

# -- params --------------------------------------------------------------------------------


class ParamsError(ValueError):
    """Params that do not fit their class; ``field`` is the wire path (e.g. ``prompt``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _non_empty(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not value.strip():
        raise ParamsError(camel(attribute.name), "must be a non-empty string")


def _names(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not all(isinstance(v, str) and v.strip() for v in value):
        raise ParamsError(camel(attribute.name), "must be a list of non-empty strings")


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
    # Ready to show (server/agent/activity.py), as agent/toolActivity's title, durationText,
    # subject and outputHead.
    title: str = ""
    duration_text: str = ""
    subject: str = ""
    output_head: str = ""


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
    # What to tell the user when the ask ended other than with an answer (stop_reason not
    # end_turn), ready to show: "stopped at the turn limit (maxTurns)"; None: an answer.
    stop_note: str | None = None


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
    title: str = ""  # as agent/toolActivity's title: the call's one line, ready to show
    subject: str = ""  # as agent/toolActivity's subject
    output_head: str = ""  # as agent/toolActivity's outputHead


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
    title: str = ""  # as agent/toolActivity's title: the call's one line, ready to show


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
    action: str | None = None  # a failed check's ErrorAction (setApiKey, ...): clients word it


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
    # The message without its "turn N: ", ready to show beside the turn (a running call's
    # progress line: "bash 3/10 indexing").
    text: str = ""


@attrs.define
class ToolActivity:
    """``agent/toolActivity``: a tool call's state, sent as it changes (built by
    server/agent/activity.py tool_activity). ``title``, ``output_head`` and
    ``duration_text`` are the words to show, escaped and on one line: clients show them as
    they are; the other fields are data (escape them to show them)."""

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
    # The call's one line: the tool (display_name or name), then what it acts on (its
    # summary_key argument, else path, command or pattern): "bash pytest -q ⏎ ls".
    title: str = ""
    output_head: str | None = None  # completed/failed: the output's first line, cut at 200
    # completed/failed: "12 ms", or "12 ms; 8.0 s waiting for permission" after a request.
    duration_text: str | None = None
    # What the call acts on, the title without the tool: "pytest -q ⏎ ls" (for a layout
    # that shows the tool's name apart).
    subject: str = ""


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


# -- the editor's own language servers (server -> client, CLIENT_CAN_ANSWER_LANGUAGE) -------
# The LSP methods agent/languageRequest forwards (their params and results are LSP's own).
LANGUAGE_REQUEST_METHODS: Final = (
    "textDocument/definition",
    "textDocument/references",
    "textDocument/documentSymbol",
    "workspace/symbol",
    "textDocument/hover",
    "textDocument/rename",
)


@attrs.define
class LanguageDiagnosticsParams:
    """``agent/languageDiagnostics`` (server -> client): the problems the editor's own
    language servers report for ``uris`` (a file not open is loaded first, not shown).
    ``wait_ms`` > 0: first wait, at most that long, for the editor's diagnostics of each
    uri to change after the request arrived; 0: answer at once with what is known."""

    uris: list[str]
    wait_ms: int


@attrs.define
class LanguageDiagnosticsFile:
    uri: str
    # LSP ``Diagnostic``s (``range`` in the client's position encoding, ``severity`` 1-4,
    # ``code``, ``source``, ``message``).
    diagnostics: list[dict[str, Any]]
    # False: the diagnostics did not change within the wait, or no language server of the
    # editor handles this file.
    answered: bool


@attrs.define
class LanguageDiagnosticsResult:
    files: list[LanguageDiagnosticsFile]


@attrs.define
class LanguageRequestParams:
    """``agent/languageRequest`` (server -> client): run one LSP request (``method``, one
    of ``LANGUAGE_REQUEST_METHODS``, with LSP's ``params``, positions in the client's
    encoding) against the editor's own providers."""

    method: str
    params: dict[str, Any]


@attrs.define
class LanguageRequestResult:
    # LSP's result of that method; null when no language server of the editor answered.
    result: Any = None


@attrs.define
class CompactResult:
    """``agent/compact``: the history's estimated size before and after, in tokens."""

    tokens_before: int
    tokens_after: int
    context_window: int
    elided_outputs: int  # tool outputs replaced by a note (agent/toolOutput still has them)
    summarized_messages: int  # messages replaced by the model's summary
    # Ready to show: "compacted: 30,512 → 9,880 tokens of 32,000 (12 outputs elided)".
    summary: str = ""


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
    summary: str = ""  # ready to show, as agent/compact's summary


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


# -- JSON built below the server, typed as it is sent ------------------------------------------


class ToolSource(TypedDict):
    kind: str  # "builtin" or "mcp"
    server: NotRequired[str]  # an MCP tool's server


class ToolInfo(TypedDict):
    """One tool as ``agent/listTools`` lists it: MCP's ``Tool`` shape, and its ``source``."""

    name: str
    description: str
    inputSchema: dict[str, object]  # the JSON Schema of its arguments, as the model sees it
    # MCP's hints (title, readOnlyHint, destructiveHint, ...); bash's "sandbox" (the object
    # agent/sandboxStatus answers); an MCP tool's "source"
    annotations: dict[str, object]
    source: ToolSource
    title: NotRequired[str]


class ListToolsResult(TypedDict):
    tools: list[ToolInfo]


class SandboxLayers(TypedDict):
    """The confinement layers in force for a bash call."""

    namespaces: bool
    networkNamespace: bool
    landlock: bool
    seccomp: bool
    processLimit: str | None  # "cgroup", "rlimit", or none
    callMemoryLimit: str | None  # "cgroup", or none


class SandboxLimits(TypedDict):
    processes: int
    fileSizeMB: int
    memoryMB: int
    callMemoryMB: int


class SandboxGrant(TypedDict):
    grantId: str
    title: str  # as agent/grants words it


class SandboxStatus(TypedDict):
    """``agent/sandboxStatus``: the bash sandbox of a folder, its layers in force (also
    bash's ``sandbox`` annotation in ``agent/listTools``)."""

    mode: str  # read-only | workspace-write | off
    enforced: bool
    network: bool  # the whole network is allowed
    networkAccess: str  # all | allowedDomains | none
    allowedDomains: list[str]
    writableRoots: list[str]
    landlockAbi: int
    hiddenPaths: list[str]  # agent-lsp's own files no sandboxed command may read
    layers: SandboxLayers
    limits: SandboxLimits
    bwrap: str | None  # the bubblewrap program, when namespaces are used
    fallback: str | None  # why the full form is not in force
    weakened: list[str]  # the promises that do not hold in full on this system
    reason: NotRequired[str]  # why there is no sandbox at all
    # With a sessionId: the conversation's "always" answers that let bash leave the sandbox
    grants: NotRequired[list[SandboxGrant]]
