"""Editor settings (section ``agentLsp``): declared once, as typed classes, read leniently.

Each setting is one field of one class below, its wire key, bounds, scope and description in
the field's metadata (:func:`setting`). Everything else is derived from these classes: the
reader (:func:`read_settings`), the settings schema in docs/protocol.schema.json, the editor
extension's ``contributes.configuration``, and the Neovim and Emacs settings tables
(``docs/settings_docs.py`` writes them; a test fails while one is stale).

The classes group the settings as the server uses them (model, tools, sandbox, approval,
instructions, MCP); the wire stays one flat object of camelCase keys. A bad value is one
warning naming the key and the default that stands instead (jedi-language-server's
initialization options do the same), never a failed ``initialize``: a typo in the user's
settings should be reported, not take the server down. The API key is deliberately not a
setting (see ``server.model.endpoint``).

A new setting: a field of the class it belongs to, with :func:`setting`; then its use (a
tool's setting also joins :class:`ToolSettings`); regenerate with
``uv run python docs/protocol_schema.py``.
"""

from __future__ import annotations

import functools
import json
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple, cast

import attrs
import cattrs

from tools.sandbox import LIMIT_SETTINGS, Limits, SandboxPolicy, valid_domain_pattern
from tools.sandbox import MODES as SANDBOX_MODES

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

# "machine": a setting a repository must not choose; clients take it from the user's own
# settings only (an editor's machine scope), never from a workspace's. "workspace": any level.
Scope = Literal["workspace", "machine"]
# One entry of a list setting: its problem (a phrase) or None, and its normal form.
Entry = Callable[[str], tuple[str | None, str]]


@attrs.frozen
class Setting:
    """What a field of a settings class says about its setting (``attrs`` metadata)."""

    key: str  # on the wire, in the agentLsp section
    description: str  # one sentence, editor-neutral (each client adds its own words)
    scope: Scope = "workspace"
    minimum: float | None = None
    maximum: float | None = None
    # Greater than 0; 0 (and null) stand for the server's default: editors send 0 for a
    # number left empty.
    positive: bool = False
    enum: tuple[str, ...] | None = None
    # A list's entries are checked one by one: a bad one is dropped with a warning.
    entry: Entry | None = None
    # Every entry must pass, or the whole list is refused.
    each: Callable[[str], bool] | None = None
    items: str = "strings"  # what a list holds, in the words of a warning


def setting(
    default: Any, key: str, description: str, *, scope: Scope = "workspace", **rules: Any
) -> Any:
    """A field of a settings class: its default, wire key, description, scope and rules."""
    meta = Setting(key, description, scope, **rules)
    return attrs.field(default=default, metadata={"setting": meta})


def _absolute_path(entry: str) -> tuple[str | None, str]:
    path = Path(entry).expanduser()
    return (None, str(path)) if path.is_absolute() else ("is not an absolute path", entry)


def _domain(entry: str) -> tuple[str | None, str]:
    return valid_domain_pattern(entry), entry.strip().rstrip(".").lower()


def _relative_name(value: str) -> bool:
    """A path relative to a folder that stays in it (``AGENTS.md``, ``.github/x.md``)."""
    path = Path(value)
    return bool(value.strip()) and not path.is_absolute() and ".." not in path.parts


def _command_prefix(value: str) -> bool:
    return bool(value.strip())


@attrs.frozen(slots=False)  # AgentSettings inherits the groups
class ModelSettings:
    """The model and its requests."""

    model: str | None = setting(None, "model", "Model name sent to the endpoint.")
    base_url: str | None = setting(None, "baseUrl", "OpenAI-compatible endpoint.", scope="machine")
    request_timeout: float | None = setting(
        None, "requestTimeout", "Seconds for one model request, retries included.", positive=True
    )
    max_retries: int | None = setting(
        None, "maxRetries", "Retries of a failed model request.", minimum=0, maximum=10
    )
    max_turns: int = setting(
        DEFAULT_MAX_TURNS, "maxTurns", "Model requests per ask.", positive=True, maximum=1000
    )
    context_window: int | None = setting(
        None,
        "contextWindow",
        "The model's context window in tokens.",
        positive=True,
        maximum=MAX_CONTEXT_WINDOW,
    )
    compact_threshold: float = setting(
        DEFAULT_THRESHOLD,
        "compactThreshold",
        "Share of the window past which the history is compacted.",
        minimum=MIN_THRESHOLD,
        maximum=MAX_THRESHOLD,
    )


@attrs.frozen(slots=False)  # AgentSettings inherits the groups
class ToolUseSettings:
    """Which tools the agent has and how their edits reach the editor."""

    enabled_tools: tuple[str, ...] | None = setting(
        None,
        "enabledTools",
        "The tools the agent has (null: all).",
        scope="machine",
        items="tool names",
    )
    bash_timeout: float | None = setting(
        None, "bashTimeout", "Default timeout of a bash call (s).", positive=True, maximum=600
    )
    edit_through_editor: bool = setting(
        True,
        "editThroughEditor",
        "Edits to open documents go through workspace/applyEdit.",
        scope="machine",
    )
    confirm_edits: bool = setting(
        False, "confirmEdits", "Those edits are marked needsConfirmation.", scope="machine"
    )
    diagnostics_wait: int = setting(
        1500,
        "diagnosticsWait",
        "How long a file tool waits for a language server's problems of what it wrote (ms).",
        minimum=0,
        maximum=30000,
    )


@attrs.frozen(slots=False)  # AgentSettings inherits the groups
class InstructionSettings:
    """What the model is told besides the ask."""

    system_prompt: str | None = setting(
        None,
        "systemPrompt",
        "Replaces the system prompt; {workspace} is the folder's path.",
        scope="machine",
    )
    instruction_files: tuple[str, ...] = setting(
        INSTRUCTION_FILES,
        "instructionFiles",
        "Files whose text instructs the model: the first found at a folder's root.",
        scope="machine",
        each=_relative_name,
        items="paths relative to a folder",
    )
    instructions_max_bytes: int = setting(
        INSTRUCTIONS_DEFAULT,
        "instructionsMaxBytes",
        "At most this much of the instruction files reaches the model (bytes).",
        scope="machine",
        positive=True,
        maximum=INSTRUCTIONS_MAX,
    )


@attrs.frozen(slots=False)  # AgentSettings inherits the groups
class McpSettings:
    """The editor's MCP servers."""

    # Raw: server.mcp.config parses it (mcp.json's "servers" shape), with a warning
    # per server; machine-scoped, as a repository must not name commands to run.
    mcp_servers: Mapping[str, Any] | None = setting(
        None,
        "mcpServers",
        "MCP servers by name, in the shape of .vscode/mcp.json's servers.",
        scope="machine",
    )


def _limit(name: str) -> Any:
    return setting(
        getattr(Limits, name),
        LIMIT_SETTINGS[name],
        f"Limit of a sandboxed call: {name.replace('_', ' ')}.",
        scope="machine",
        positive=True,
        maximum=MAX_LIMIT,
    )


@attrs.frozen
class SandboxSettings:
    """How bash is confined (machine-scoped: a repository cannot relax it)."""

    mode: str = setting(
        SandboxPolicy.mode, "sandbox", "How bash is confined.", scope="machine", enum=SANDBOX_MODES
    )
    writable_roots: tuple[str, ...] = setting(
        (),
        "writableRoots",
        "Extra folders sandboxed commands may write.",
        scope="machine",
        items="folder paths",
        entry=_absolute_path,
    )
    network: bool = setting(
        False, "network", "Sandboxed commands may use the whole network.", scope="machine"
    )
    allowed_domains: tuple[str, ...] = setting(
        (),
        "allowedDomains",
        "Hosts sandboxed commands may reach by proxy.",
        scope="machine",
        items="host names",
        entry=_domain,
    )
    processes: int = _limit("processes")
    file_size_mb: int = _limit("file_size_mb")
    memory_mb: int = _limit("memory_mb")
    call_memory_mb: int = _limit("call_memory_mb")

    def policy(self) -> SandboxPolicy:
        return SandboxPolicy(
            mode=self.mode,
            writable_roots=tuple(Path(root) for root in self.writable_roots),
            network=self.network,
            allowed_domains=tuple(dict.fromkeys(self.allowed_domains)),
            limits=Limits(**{name: getattr(self, name) for name in LIMIT_SETTINGS}),
        )


@attrs.frozen
class ApprovalSettings:
    """When the user is asked before a call runs (machine-scoped too)."""

    approval: str = setting(
        ApprovalPolicy.approval,
        "approval",
        "When calls need the user's permission.",
        scope="machine",
        enum=APPROVAL_MODES,
    )
    allowed_commands: tuple[str, ...] = setting(
        (),
        "allowedCommands",
        "Bash command prefixes that never ask.",
        scope="machine",
        each=_command_prefix,
        items="command prefixes",
    )
    permission_timeout: float = setting(
        DEFAULT_PERMISSION_TIMEOUT,
        "permissionTimeout",
        "Seconds a permission request waits before it counts as rejected.",
        scope="machine",
        positive=True,
        maximum=MAX_PERMISSION_TIMEOUT,
    )

    def policy(self) -> ApprovalPolicy:
        return ApprovalPolicy(
            approval=self.approval,
            allowed_commands=tuple(" ".join(c.split()) for c in self.allowed_commands),
            timeout=float(self.permission_timeout),
        )


@attrs.frozen
class Settings:
    """Every setting the server reads, by group: the one declaration (see the module doc)."""

    model: ModelSettings = ModelSettings()
    tools: ToolUseSettings = ToolUseSettings()
    instructions: InstructionSettings = InstructionSettings()
    mcp: McpSettings = McpSettings()
    sandbox: SandboxSettings = SandboxSettings()
    approval: ApprovalSettings = ApprovalSettings()


# The group classes, in the order their settings are listed (the generators' order).
GROUPS: Final[tuple[type, ...]] = tuple(typing.get_type_hints(Settings).values())


def settings_fields() -> list[tuple[attrs.Attribute[Any], Setting]]:
    """Every setting's field and metadata, in declaration order (the generators' source)."""
    return [(field, field.metadata["setting"]) for cls in GROUPS for field in attrs.fields(cls)]


class ToolSettings(NamedTuple):
    """The settings the tools are built from: ``server.engine.bootstrap.build_tools`` reads
    nothing else, so a folder's runtime is rebuilt exactly when one of these changes.

    A new tool's setting: a field of :class:`ToolUseSettings` (or the group it belongs to),
    its name here too (:meth:`AgentSettings.tools` copies these by name), read by the
    tool's factory in bootstrap."""

    enabled_tools: tuple[str, ...] | None = None  # None: every tool bootstrap knows
    bash_timeout: float | None = None
    sandbox: SandboxPolicy = SandboxPolicy()
    # Only the tools that change nothing, and the ones the sandbox confines (a session in
    # the "read-only" mode: bash runs with the workspace read-only, no file tool writes).
    read_only: bool = False
    # How long (ms) write_file and edit_file wait for a language server's problems.
    diagnostics_wait: int = 1500


@attrs.frozen(slots=False)
class AgentSettings(ModelSettings, ToolUseSettings, InstructionSettings, McpSettings):
    """The settings as the engine reads them: the groups' fields, flat (inherited), with the
    sandbox and approval groups as the policies they make."""

    # The bash sandbox (machine-scoped in editors: a repository cannot relax it).
    sandbox: SandboxPolicy = attrs.field(factory=SandboxPolicy)
    # When the user is asked before a call runs (machine-scoped too).
    approval: ApprovalPolicy = attrs.field(factory=ApprovalPolicy)
    # Not a setting: a session's mode sets it (server.settings.modes, "read-only").
    read_only: bool = False
    warnings: tuple[str, ...] = attrs.field(default=(), eq=False)

    @classmethod
    def of(cls, settings: Settings, warnings: tuple[str, ...] = ()) -> AgentSettings:
        flat: dict[str, Any] = {}
        for group in (settings.model, settings.tools, settings.instructions, settings.mcp):
            flat.update(attrs.asdict(group, recurse=False))
        return cls(
            **flat,
            sandbox=settings.sandbox.policy(),
            approval=settings.approval.policy(),
            warnings=warnings,
        )

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


def read_settings(raw: Any) -> AgentSettings:
    """Accept ``{"agentLsp": {...}}`` or the section itself; ``None`` gives defaults."""
    if isinstance(raw, Mapping) and isinstance(raw.get(SECTION), Mapping):
        raw = raw[SECTION]
    if raw is None:
        return AgentSettings()
    if not isinstance(raw, Mapping):
        return AgentSettings(warnings=(f"{SECTION} settings must be an object; ignored",))
    warnings: list[str] = []
    groups = {
        field.name: _read_group(cls, raw, warnings)
        for field, cls in zip(_group_fields(), GROUPS, strict=True)
    }
    return AgentSettings.of(Settings(**groups), tuple(warnings))


def _group_fields() -> tuple[attrs.Attribute[Any], ...]:
    return tuple(attrs.fields(Settings))


# -- the lenient converter ----------------------------------------------------------------
# cattrs structures each value into its field's type; the hooks below make it strict (no
# "5" -> 5, no True -> 1), so a wrong type is a refusal, and the metadata's rules follow.


def _strict(kind: type) -> Callable[[Any, type], Any]:
    def structure(value: Any, _: type) -> Any:
        if isinstance(value, bool) is not (kind is bool) or not isinstance(
            value, int | float if kind is float else kind
        ):
            raise TypeError(kind.__name__)
        return float(cast(float, value)) if kind is float else value

    return structure


def _mapping(value: Any, _: type) -> Any:
    if not isinstance(value, Mapping):
        raise TypeError("object")
    return value


def _strings(value: Any, _: type) -> tuple[str, ...]:
    # A list, never a string (cattrs would take "bash" as the letters b, a, s, h).
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("list of strings")
    return tuple(value)


_converter = cattrs.Converter()
for _kind in (str, int, float, bool):
    _converter.register_structure_hook(_kind, _strict(_kind))
_converter.register_structure_hook_func(lambda tp: tp == Mapping[str, Any], _mapping)
_converter.register_structure_hook_func(lambda tp: tp == tuple[str, ...], _strings)


class _Refused(ValueError):
    """A value of the right type out of bounds: what it must be instead."""


def _read_group(cls: type, raw: Mapping[str, Any], warnings: list[str]) -> Any:
    values: dict[str, Any] = {}
    for field, meta, tp, text in _plan(cls):
        value = raw.get(meta.key)
        # null, "" for a text left empty and, for a positive number, 0: the server's default.
        if value is None or (text and value == ""):
            continue
        if meta.positive and value == 0 and not isinstance(value, bool):
            continue
        try:
            values[field.name] = _read_value(value, tp, meta, warnings)
        except (TypeError, ValueError, cattrs.BaseValidationError) as error:
            must = str(error) if isinstance(error, _Refused) else expectation(field, meta)
            warnings.append(f"{SECTION}.{meta.key} must be {must}; {_default_words(field.default)}")
    return cls(**values)


@functools.cache
def _plan(cls: type) -> tuple[tuple[attrs.Attribute[Any], Setting, Any, bool], ...]:
    """Each field of a group: its metadata, its type, whether it is text (read once)."""
    types = _declared_types(GROUPS)
    return tuple(
        (field, field.metadata["setting"], types[field], json_type(field) == "string")
        for field in attrs.fields(cls)
    )


def _read_value(value: Any, tp: Any, meta: Setting, warnings: list[str]) -> Any:
    value = _converter.structure(value, tp)
    if meta.enum is not None and value not in meta.enum:
        raise ValueError(meta.key)
    if meta.positive and value <= 0:
        raise ValueError(meta.key)
    if meta.minimum is not None and value < meta.minimum:
        raise ValueError(meta.key)
    if meta.maximum is not None and value > meta.maximum:
        if meta.positive:
            raise _Refused(f"at most {meta.maximum:g}")
        raise ValueError(meta.key)
    if meta.each is not None and not all(meta.each(v) for v in value):
        raise ValueError(meta.key)
    if meta.entry is not None:
        kept: list[str] = []
        for entry in value:
            problem, normal = meta.entry(entry)
            if problem:
                warnings.append(f"{SECTION}.{meta.key}: {entry!r} {problem}; ignored")
            else:
                kept.append(normal)
        value = tuple(kept)
    return value


def expectation(field: attrs.Attribute[Any], meta: Setting) -> str:
    """What a value of ``field`` must be, in the words of a warning."""
    if meta.enum is not None:
        return f"one of {', '.join(meta.enum)}"
    kind = json_type(field)
    if kind in ("integer", "number"):
        article = "an" if kind == "integer" else "a"
        if meta.positive:
            return f"a positive {kind}"
        if meta.minimum is not None and meta.maximum is not None:
            return f"{article} {kind} from {meta.minimum:g} to {meta.maximum:g}"
        return f"{article} {kind}"
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        return f"a list of {meta.items}"
    if kind == "object":
        return "an object of servers by name"
    return "a string"


def json_type(field: attrs.Attribute[Any]) -> str:
    """The JSON type of a setting's values (null aside)."""
    tp = _declared_types(GROUPS)[field]
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        tp = next(arg for arg in typing.get_args(tp) if arg is not type(None))
    base = typing.get_origin(tp) or tp
    for python, kind in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if base is python:
            return kind
    if base is tuple:
        return "array"
    return "object"


def nullable(field: attrs.Attribute[Any]) -> bool:
    return type(None) in typing.get_args(_declared_types(GROUPS)[field])


@functools.cache
def _declared_types(groups: tuple[type, ...]) -> dict[attrs.Attribute[Any], Any]:
    # Resolved once: the annotations are strings (``from __future__ import annotations``).
    found: dict[attrs.Attribute[Any], Any] = {}
    for cls in groups:
        assert isinstance(cls, type)
        hints = typing.get_type_hints(cls)
        found.update({field: hints[field.name] for field in attrs.fields(cls)})
    return found


def _default_words(default: Any) -> str:
    if default is None:
        return "the server's default stands"
    shown = json.dumps(list(default) if isinstance(default, tuple) else default)
    return f"the default ({shown}) stands"
