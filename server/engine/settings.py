"""Editor settings (section ``agentLsp``) parsed into one typed value.

Bad values are dropped with a warning rather than failing ``initialize``: a typo
in the user's settings should be reported, not take the server down. The API
key is deliberately not a setting (see ``server.model.endpoint``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NamedTuple

from tools.sandbox import MODES as SANDBOX_MODES
from tools.sandbox import SandboxPolicy
from tools.sandbox_limits import SETTINGS as LIMIT_SETTINGS
from tools.sandbox_limits import Limits
from tools.sandbox_proxy import valid_domain_pattern

from ..agent.compaction import DEFAULT_THRESHOLD
from ..agent.permissions import (
    APPROVAL_MODES,
    DEFAULT_PERMISSION_TIMEOUT,
    MAX_PERMISSION_TIMEOUT,
    ApprovalPolicy,
)
from ..project.instructions import DEFAULT_MAX_BYTES as INSTRUCTIONS_DEFAULT
from ..project.instructions import INSTRUCTION_FILES
from ..project.instructions import MAX_BYTES as INSTRUCTIONS_MAX
from ..protocol import SETTINGS_SECTION

SECTION = SETTINGS_SECTION  # one name, declared with the protocol
MIN_THRESHOLD, MAX_THRESHOLD = 0.1, 0.95
MAX_CONTEXT_WINDOW = 10_000_000
DEFAULT_MAX_TURNS = 50
MAX_LIMIT = 1_000_000  # of each sandbox limit (processes, MB)


def _positive(kind: str, maximum: float | None = None, **extra: Any) -> dict[str, Any]:
    # 0 (and null) mean "the server's default": editors send 0 for a number left empty.
    bounds = {"maximum": maximum} if maximum is not None else {}
    return {"type": [kind, "null"], "minimum": 0, **bounds, **extra}


def _strings(**extra: Any) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, **extra}


# The settings the server reads, as JSON Schema: what ``parse_settings`` accepts, and its
# defaults where the server has a fixed one (the model, endpoint and timeouts default from
# the environment and the user file: server.model.endpoint, tools/shell.py). Published in
# docs/protocol.schema.json; tests/test_settings_schema.py holds parse_settings to it.
# "scope": "machine" marks the settings a repository must not choose: clients take them from
# the user's own settings only (VS Code's machine scope), never from a workspace's.
SCHEMA: Final[dict[str, dict[str, Any]]] = {
    "model": {"type": "string", "description": "Model name sent to the endpoint."},
    "baseUrl": {"type": "string", "scope": "machine", "description": "OpenAI-compatible endpoint."},
    "requestTimeout": _positive(
        "number", description="Seconds for one model request, retries included."
    ),
    "maxRetries": {
        "type": ["integer", "null"],
        "minimum": 0,
        "maximum": 10,
        "description": "Retries of a failed model request.",
    },
    "maxTurns": _positive(
        "integer", 1000, default=DEFAULT_MAX_TURNS, description="Model requests per ask."
    ),
    "enabledTools": {
        **_strings(),
        "type": ["array", "null"],
        "scope": "machine",
        "description": "The tools the agent has (null: all).",
    },
    "bashTimeout": _positive("number", 600, description="Default timeout of a bash call (s)."),
    "systemPrompt": {
        "type": "string",
        "scope": "machine",
        "description": "Replaces the system prompt; {workspace} is the folder's path.",
    },
    "editThroughEditor": {
        "type": "boolean",
        "default": True,
        "scope": "machine",
        "description": "Edits to open documents go through workspace/applyEdit.",
    },
    "confirmEdits": {
        "type": "boolean",
        "default": False,
        "scope": "machine",
        "description": "Those edits are marked needsConfirmation.",
    },
    "contextWindow": _positive(
        "integer", MAX_CONTEXT_WINDOW, description="The model's context window in tokens."
    ),
    "compactThreshold": {
        "type": ["number", "null"],
        "minimum": MIN_THRESHOLD,
        "maximum": MAX_THRESHOLD,
        "default": DEFAULT_THRESHOLD,
        "description": "Share of the window past which the history is compacted.",
    },
    "sandbox": {
        "enum": list(SANDBOX_MODES),
        "default": SandboxPolicy.mode,
        "scope": "machine",
        "description": "How bash is confined.",
    },
    "writableRoots": _strings(
        default=[], scope="machine", description="Extra folders sandboxed commands may write."
    ),
    "network": {
        "type": "boolean",
        "default": False,
        "scope": "machine",
        "description": "Sandboxed commands may use the whole network.",
    },
    "allowedDomains": _strings(
        default=[], scope="machine", description="Hosts sandboxed commands may reach by proxy."
    ),
    **{
        key: _positive(
            "integer",
            MAX_LIMIT,
            default=getattr(Limits, name),
            scope="machine",
            description=f"Limit of a sandboxed call: {name.replace('_', ' ')}.",
        )
        for name, key in LIMIT_SETTINGS.items()
    },
    "approval": {
        "enum": list(APPROVAL_MODES),
        "default": ApprovalPolicy.approval,
        "scope": "machine",
        "description": "When calls need the user's permission.",
    },
    "allowedCommands": _strings(
        default=[], scope="machine", description="Bash command prefixes that never ask."
    ),
    "permissionTimeout": _positive(
        "number",
        MAX_PERMISSION_TIMEOUT,
        default=DEFAULT_PERMISSION_TIMEOUT,
        scope="machine",
        description="Seconds a permission request waits before it counts as rejected.",
    ),
    "instructionFiles": _strings(
        default=list(INSTRUCTION_FILES),
        scope="machine",
        description="Files whose text instructs the model: the first found at a folder's root.",
    ),
    "instructionsMaxBytes": _positive(
        "integer",
        INSTRUCTIONS_MAX,
        default=INSTRUCTIONS_DEFAULT,
        scope="machine",
        description="At most this much of the instruction files reaches the model (bytes).",
    ),
    # Raw: server.config.mcp_config parses it (VS Code's mcp.json "servers" shape), with a
    # warning per server; machine-scoped, as a repository must not name commands to run.
    "mcpServers": {
        "type": ["object", "null"],
        "scope": "machine",
        "description": "MCP servers by name, in the shape of VS Code's mcp.json servers.",
    },
}


class ToolSettings(NamedTuple):
    """The settings the tools are built from: ``server.engine.bootstrap.build_tools`` reads
    nothing else, so a folder's runtime is rebuilt exactly when one of these changes.

    A new tool's setting: a field of :class:`AgentSettings` parsed in :func:`parse_settings`,
    its name here too (:meth:`AgentSettings.tools` copies these by name), read by the
    tool's factory in bootstrap."""

    enabled_tools: tuple[str, ...] | None = None  # None: every tool bootstrap knows
    bash_timeout: float | None = None
    sandbox: SandboxPolicy = SandboxPolicy()
    # Only the tools that change nothing, and the ones the sandbox confines (a session in
    # the "read-only" mode: bash runs with the workspace read-only, no file tool writes).
    read_only: bool = False


@dataclass(frozen=True)
class AgentSettings:
    model: str | None = None
    base_url: str | None = None
    request_timeout: float | None = None
    max_retries: int | None = None
    max_turns: int = DEFAULT_MAX_TURNS
    enabled_tools: tuple[str, ...] | None = None
    bash_timeout: float | None = None
    system_prompt: str | None = None
    # Edits to documents open in the editor go through workspace/applyEdit.
    edit_through_editor: bool = True
    # ...marked needsConfirmation, so the editor asks the user first.
    confirm_edits: bool = False
    # The bash sandbox (machine-scoped in editors: a repository cannot relax it).
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    # When the user is asked before a call runs (machine-scoped too).
    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    # The model's context window in tokens (None: known for the model, else a default)
    # and the share of it past which the history is compacted (server.agent.compaction).
    context_window: int | None = None
    compact_threshold: float = DEFAULT_THRESHOLD
    # The editor's MCP server definitions, as sent (server.config.mcp_config parses them).
    mcp_servers: Mapping[str, Any] | None = None
    # The project's instructions (server.project.instructions).
    instruction_files: tuple[str, ...] = INSTRUCTION_FILES
    instructions_max_bytes: int = INSTRUCTIONS_DEFAULT
    # Not a setting: a session's mode sets it (server.engine.modes, "read-only").
    read_only: bool = False
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def model_overrides(self) -> dict[str, Any]:
        """What the front end may set of the model configuration (never the key)."""
        overrides: dict[str, Any] = {}
        if self.model:
            overrides["model"] = self.model
        if self.base_url:
            overrides["baseUrl"] = self.base_url
        if self.request_timeout is not None:
            overrides["timeout"] = self.request_timeout
        if self.max_retries is not None:
            overrides["maxRetries"] = self.max_retries
        return overrides

    def tools(self) -> ToolSettings:
        """The settings a tool runtime is built from: rebuild only when these change."""
        return ToolSettings(*(getattr(self, name) for name in ToolSettings._fields))


def parse_settings(raw: Any) -> AgentSettings:
    """Accept ``{"agentLsp": {...}}`` or the section itself; ``None`` gives defaults."""
    if isinstance(raw, Mapping) and isinstance(raw.get(SECTION), Mapping):
        raw = raw[SECTION]
    if raw is None:
        return AgentSettings()
    if not isinstance(raw, Mapping):
        return AgentSettings(warnings=(f"{SECTION} settings must be an object; ignored",))

    warnings: list[str] = []

    def text(key: str) -> str | None:
        value = raw.get(key)
        if value is None or value == "":
            return None
        if isinstance(value, str):
            return value
        warnings.append(f"{SECTION}.{key} must be a string; ignored")
        return None

    def number(key: str, *, integer: bool = False, maximum: float | None = None) -> Any:
        value = raw.get(key)
        if value is None or (value == 0 and not isinstance(value, bool)):
            return None  # editors send 0 for "the server's default"
        kind_ok = isinstance(value, int if integer else (int, float))
        if isinstance(value, bool) or not kind_ok or value <= 0:
            kind = "integer" if integer else "number"
            warnings.append(f"{SECTION}.{key} must be a positive {kind}; ignored")
            return None
        if maximum is not None and value > maximum:
            warnings.append(f"{SECTION}.{key} must be at most {maximum:g}; ignored")
            return None
        return value

    enabled: tuple[str, ...] | None = None
    raw_enabled = raw.get("enabledTools")
    if raw_enabled is not None:
        if isinstance(raw_enabled, list) and all(isinstance(n, str) for n in raw_enabled):
            enabled = tuple(raw_enabled)
        else:
            warnings.append(f"{SECTION}.enabledTools must be a list of tool names; ignored")

    def flag(key: str, default: bool) -> bool:
        value = raw.get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        warnings.append(f"{SECTION}.{key} must be true or false; ignored")
        return default

    mode = text("sandbox")
    if mode is not None and mode not in SANDBOX_MODES:
        warnings.append(f"{SECTION}.sandbox must be one of {', '.join(SANDBOX_MODES)}; ignored")
        mode = None

    def strings(key: str, what: str) -> list[str]:
        value = raw.get(key)
        if value is None:
            return []
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
        warnings.append(f"{SECTION}.{key} must be a list of {what}; ignored")
        return []

    roots: list[Path] = []
    for entry in strings("writableRoots", "folder paths"):
        root = Path(entry).expanduser()
        if root.is_absolute():
            roots.append(root)
        else:
            warnings.append(f"{SECTION}.writableRoots: {entry!r} is not an absolute path; ignored")
    domains: list[str] = []
    for entry in strings("allowedDomains", "host names"):
        problem = valid_domain_pattern(entry)
        if problem:
            warnings.append(f"{SECTION}.allowedDomains: {entry!r} {problem}; ignored")
        else:
            domains.append(entry.strip().rstrip(".").lower())
    limits = {
        field_name: number(key, integer=True, maximum=MAX_LIMIT)
        for field_name, key in LIMIT_SETTINGS.items()
    }
    sandbox = SandboxPolicy(
        mode=mode or SandboxPolicy.mode,
        writable_roots=tuple(roots),
        network=flag("network", False),
        allowed_domains=tuple(dict.fromkeys(domains)),
        limits=Limits(**{k: v for k, v in limits.items() if v is not None}),
    )

    approval = text("approval")
    if approval is not None and approval not in APPROVAL_MODES:
        warnings.append(f"{SECTION}.approval must be one of {', '.join(APPROVAL_MODES)}; ignored")
        approval = None
    allowed = raw.get("allowedCommands")
    if allowed is not None and not (
        isinstance(allowed, list) and all(isinstance(c, str) and c.strip() for c in allowed)
    ):
        warnings.append(f"{SECTION}.allowedCommands must be a list of command prefixes; ignored")
        allowed = None
    timeout = number("permissionTimeout", maximum=MAX_PERMISSION_TIMEOUT)
    approval_policy = ApprovalPolicy(
        approval=approval or ApprovalPolicy.approval,
        allowed_commands=tuple(" ".join(c.split()) for c in allowed or ()),
        timeout=float(timeout) if timeout is not None else ApprovalPolicy.timeout,
    )

    max_turns = number("maxTurns", integer=True, maximum=1000)
    max_retries = raw.get("maxRetries")
    if max_retries is not None and (
        isinstance(max_retries, bool)
        or not isinstance(max_retries, int)
        or not 0 <= max_retries <= 10
    ):
        warnings.append(f"{SECTION}.maxRetries must be an integer from 0 to 10; ignored")
        max_retries = None
    threshold = raw.get("compactThreshold")
    if threshold is not None and (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not MIN_THRESHOLD <= threshold <= MAX_THRESHOLD
    ):
        warnings.append(
            f"{SECTION}.compactThreshold must be a number from {MIN_THRESHOLD} to "
            f"{MAX_THRESHOLD}; ignored"
        )
        threshold = None
    instruction_files = INSTRUCTION_FILES
    raw_files = raw.get("instructionFiles")
    if raw_files is not None:
        if isinstance(raw_files, list) and all(_relative_name(f) for f in raw_files):
            instruction_files = tuple(raw_files)
        else:
            warnings.append(
                f"{SECTION}.instructionFiles must be a list of paths relative to a folder; ignored"
            )
    max_bytes = number("instructionsMaxBytes", integer=True, maximum=INSTRUCTIONS_MAX)
    mcp_servers = raw.get("mcpServers")
    if mcp_servers is not None and not isinstance(mcp_servers, Mapping):
        warnings.append(f"{SECTION}.mcpServers must be an object of servers by name; ignored")
        mcp_servers = None
    return AgentSettings(
        model=text("model"),
        base_url=text("baseUrl"),
        request_timeout=number("requestTimeout"),
        max_retries=max_retries,
        max_turns=max_turns if max_turns is not None else DEFAULT_MAX_TURNS,
        enabled_tools=enabled,
        bash_timeout=number("bashTimeout", maximum=600),
        system_prompt=text("systemPrompt"),
        edit_through_editor=flag("editThroughEditor", True),
        confirm_edits=flag("confirmEdits", False),
        sandbox=sandbox,
        approval=approval_policy,
        context_window=number("contextWindow", integer=True, maximum=MAX_CONTEXT_WINDOW),
        compact_threshold=float(threshold) if threshold is not None else DEFAULT_THRESHOLD,
        mcp_servers=mcp_servers,
        instruction_files=instruction_files,
        instructions_max_bytes=max_bytes if max_bytes is not None else INSTRUCTIONS_DEFAULT,
        warnings=tuple(warnings),
    )


def _relative_name(value: object) -> bool:
    """A path relative to a folder that stays in it (``AGENTS.md``, ``.github/x.md``)."""
    if not isinstance(value, str) or not value.strip():
        return False
    path = Path(value)
    return not path.is_absolute() and ".." not in path.parts
