"""The one generator of the wire's client-side copies, from server/protocol/.

``server.protocol`` owns the protocol (its classes, ``SIGNATURES``, ``ErrorCode``,
``ErrorAction``); this script only reads it, so what clients build on cannot drift from
what the server parses and sends. It writes:

- docs/protocol.schema.json: the agent/* methods and their types, the error codes and
  actions, the settings;
- editor-client/nvim/lua/agent_lsp/protocol_generated.lua: the method names, error codes
  and actions as a Lua table;
- editor-client/emacs/agent-lsp-protocol.el: the same as defconsts;
- server/lsp/announced.py: what the language server announces in ``initialize`` (the
  method names, the protocol's version, the settings section), so the LSP face answers
  ``initialize`` without importing ``server.protocol`` (its classes: ~60 ms of start-up).

It lives beside the schema, outside ``server/``: the server never needs it.

    uv run python docs/protocol_schema.py          # rewrite them
    uv run python docs/protocol_schema.py --check  # exit 1 when one is stale

The settings come from ``server.settings.settings``'s classes through ``docs/settings_docs.py``
(``$defs/Settings``; VS Code's package.json and the Neovim and Emacs settings tables, also
written and checked here). The VS
Code client's types, method names, error codes and actions are generated from the schema in turn
(``editor-client/vscode/scripts/generate-protocol.mjs``).
"""

from __future__ import annotations

import ast
import inspect
import io
import json
import sys
import tokenize
import types
import typing
from pathlib import Path
from typing import Any

import attrs

from docs import settings_docs
from server import protocol as p
from server.protocol import messages

SCHEMA_PATH = Path(__file__).with_name("protocol.schema.json")
REPO = Path(__file__).resolve().parents[1]
LUA_PATH = REPO / "editor-client/nvim/lua/agent_lsp/protocol_generated.lua"
ELISP_PATH = REPO / "editor-client/emacs/agent-lsp-protocol.el"
ANNOUNCED_PATH = REPO / "server/lsp/announced.py"
_PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean"}
_PRIMITIVES[type(None)] = "null"


def build_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12): ``$defs`` per class, ``methods`` per method name."""
    walker = _Walker()
    methods: dict[str, Any] = {}
    for method, signature in p.SIGNATURES.items():
        entry = {
            "kind": signature.kind,
            "direction": signature.direction,
            "params": walker.schema_of(signature.params),
        }
        if signature.kind == "request":
            entry["result"] = walker.schema_of(signature.result)
        methods[method] = entry
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "agent-lsp protocol",
        "description": (
            "Generated from server/protocol/ by docs/protocol_schema.py; do not edit. "
            "`methods` maps each agent/* method to its params and result ({}: not declared "
            "as a type, see docs/protocol.md); `errorCodes` names the JSON-RPC error codes; "
            "`errorActions` are the values of an error's `data.action` (what the user does "
            "to fix it). docs/protocol.md is the prose."
        ),
        "protocolVersion": p.PROTOCOL_VERSION,
        "errorCodes": {_camel_upper(c.name): int(c) for c in p.ErrorCode},
        "errorActions": [a.value for a in p.ErrorAction],
        "settingsSection": p.SETTINGS_SECTION,
        "settings": {"$ref": "#/$defs/Settings"},
        "methods": methods,
        "$defs": dict(sorted({**walker.defs, "Settings": _settings()}.items())),
    }


def _settings() -> dict[str, Any]:
    # server.settings.settings declares them; docs/settings_docs.py derives the schema and the
    # clients' settings declarations and tables (written and checked in main).
    return settings_docs.schema()


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


class _Walker:
    """Python annotations to JSON Schema; each attrs class becomes one ``$defs`` entry."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self._classes: dict[str, type] = {}

    def schema_of(self, tp: Any) -> dict[str, Any]:
        if tp is Any or tp is object:
            return {}
        if typing.is_typeddict(tp):
            return {"$ref": f"#/$defs/{self._define_typeddict(tp)}"}
        if isinstance(tp, type) and attrs.has(tp):
            return {"$ref": f"#/$defs/{self._define(tp)}"}
        if tp in _PRIMITIVES:
            return {"type": _PRIMITIVES[tp]}
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is list:
            return {"type": "array", "items": self.schema_of(args[0])}
        if origin is dict and args[0] is str:
            return {"type": "object", "additionalProperties": self.schema_of(args[1]) or True}
        if origin in (types.UnionType, typing.Union):
            if all(a in _PRIMITIVES for a in args):  # int | str | None: one "type" list
                return {"type": [_PRIMITIVES[a] for a in args]}
            return {"anyOf": [self.schema_of(a) for a in args]}
        raise TypeError(f"no JSON Schema for {tp!r}: extend docs/protocol_schema.py")

    def _define(self, cls: type) -> str:
        name = cls.__name__
        if self._classes.setdefault(name, cls) is not cls:
            raise ValueError(f"two protocol classes are named {name}")
        if name in self.defs:
            return name
        self.defs[name] = {}  # placed first: a class may refer to itself
        hints = typing.get_type_hints(cls)
        comments = _field_comments(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in attrs.fields(cls):
            wire = _wire_name(field.name)
            prop = self.schema_of(hints[field.name])
            if field.validator is messages._non_empty:  # the protocol's validator
                prop["pattern"] = r"\S"
            if field.name in comments:
                prop["description"] = comments[field.name]
            if field.default is attrs.NOTHING:
                required.append(wire)
            elif isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
                prop["default"] = field.default.factory()
            else:
                prop["default"] = field.default
            properties[wire] = prop
        doc = cls.__dict__.get("__doc__")
        if (
            cls.__module__ != messages.__name__
        ):  # lsprotocol's (Range, Position): its docs are LSP's
            doc = f"LSP's {name} (lsprotocol.types.{name})."
        self.defs[name] = {
            "type": "object",
            **({"description": inspect.cleandoc(doc)} if doc else {}),
            "properties": properties,
            **({"required": required} if required else {}),
        }
        return name

    def _define_typeddict(self, cls: Any) -> str:
        """A ``TypedDict``: JSON built as it is sent, its keys the wire's own names."""
        name = cls.__name__
        if self._classes.setdefault(name, cls) is not cls:
            raise ValueError(f"two protocol classes are named {name}")
        if name in self.defs:
            return name
        self.defs[name] = {}
        # NotRequired read from the hints (a postponed annotation hides it from
        # __required_keys__ before Python 3.12)
        hints = typing.get_type_hints(cls, include_extras=True)
        comments = _field_comments(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for key, tp in hints.items():
            if typing.get_origin(tp) is typing.NotRequired:
                tp = typing.get_args(tp)[0]
            else:
                required.append(key)
            prop = self.schema_of(tp)
            if key in comments:
                prop["description"] = comments[key]
            properties[key] = prop
        doc = cls.__dict__.get("__doc__")
        self.defs[name] = {
            "type": "object",
            **({"description": inspect.cleandoc(doc)} if doc else {}),
            "properties": properties,
            **({"required": required} if required else {}),
        }
        return name


def _camel_upper(name: str) -> str:
    """``MODEL_NOT_CONFIGURED`` -> ``modelNotConfigured``."""
    head, *rest = name.lower().split("_")
    return head + "".join(part.title() for part in rest)


def _wire_name(name: str) -> str:
    # What lsprotocol's converter (protocol.to_wire, parse) renames a field to; the test
    # checks it against the converter's real output for every class.
    stem = name.removesuffix("_")
    head, *rest = stem.split("_")
    return head + "".join(part.title() for part in rest)


def _field_comments(cls: type) -> dict[str, str]:
    """``field: type  # comment`` of a class of server/protocol/: the comment, by field."""
    if sys.modules.get(cls.__module__) is not messages:
        return {}
    source = inspect.getsource(messages)
    by_line = {
        tok.start[0]: tok.string.lstrip("#").strip()
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
            return {
                stmt.target.id: by_line[stmt.end_lineno]
                for stmt in node.body
                if isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.end_lineno in by_line
            }
    return {}


# -- the clients' tables ----------------------------------------------------------------------

_BANNER = "Generated from server/protocol/ by docs/protocol_schema.py; do not edit."


def _method_key(method: str) -> str:
    return method.removeprefix("agent/")


def _snake(name: str) -> str:
    """``newSession`` -> ``new_session``."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def render_lua() -> str:
    """The Neovim client's table: ``methods.new_session``, ``error_codes.session_busy``,
    ``actions.set_api_key``."""
    lines = [
        f"-- {_BANNER}",
        "-- Regenerate: uv run python docs/protocol_schema.py",
        "local M = {}",
        "",
    ]
    lines.append("M.methods = {")
    lines += [f"  {_snake(_method_key(m))} = '{m}'," for m in p.SIGNATURES]
    lines += ["}", "", "M.error_codes = {"]
    lines += [f"  {c.name.lower()} = {int(c)}," for c in p.ErrorCode]
    lines += ["}", "", "-- An error's data.action: what the user does to fix it.", "M.actions = {"]
    lines += [f"  {a.name.lower()} = '{a.value}'," for a in p.ErrorAction]
    lines += ["}", "", "return M", ""]
    return "\n".join(lines)


def render_elisp() -> str:
    """The Emacs client's constants: ``agent-lsp-method-new-session`` (the keyword jsonrpc
    sends: ``:agent/newSession``), ``agent-lsp-error-session-busy``,
    ``agent-lsp-action-set-api-key``."""

    def dashed(name: str) -> str:
        return _snake(name).replace("_", "-")

    lines = [
        ";;; agent-lsp-protocol.el --- The agent protocol's names  -*- lexical-binding: t; -*-",
        "",
        f";; {_BANNER}",
        ";; Regenerate: uv run python docs/protocol_schema.py",
        "",
        ";;; Code:",
        "",
    ]
    for m in p.SIGNATURES:
        lines.append(f"(defconst agent-lsp-method-{dashed(_method_key(m))} :{m}")
        lines.append(f'  "The method {m}, as the keyword jsonrpc sends.")')
    lines += [
        "",
        "(defun agent-lsp-method-symbol (method)",
        '  "The symbol Eglot dispatches METHOD (a keyword above) to, as in `eql\'."',
        "  (intern (substring (symbol-name method) 1)))",
        "",
    ]
    for c in p.ErrorCode:
        lines.append(f"(defconst agent-lsp-error-{c.name.lower().replace('_', '-')} {int(c)}")
        lines.append(f'  "The JSON-RPC error code {c.name}.")')
    lines.append("")
    for a in p.ErrorAction:
        lines.append(f'(defconst agent-lsp-action-{dashed(a.value)} "{a.value}"')
        lines.append(f'  "An error\'s data.action: {a.value}.")')
    lines += ["", "(provide 'agent-lsp-protocol)", ";;; agent-lsp-protocol.el ends here", ""]
    return "\n".join(lines)


def render_announced() -> str:
    """The LSP face's copy of the names its ``initialize`` result announces (light: no
    import), as ruff formats it."""

    def strings(name: str, values: tuple[str, ...]) -> list[str]:
        return [f"{name}: Final = (", *(f'    "{v}",' for v in values), ")"]

    return "\n".join(
        [
            '"""What the language server announces in ``initialize``: the agent protocol\'s',
            "version, methods and settings section, without importing ``server.protocol`` (its",
            "classes), so ``initialize`` is answered before the engine loads.",
            "",
            f"{_BANNER}",
            "Regenerate: uv run python docs/protocol_schema.py",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            "from typing import Final",
            "",
            f"PROTOCOL_VERSION: Final = {p.PROTOCOL_VERSION}",
            f'SETTINGS_SECTION: Final = "{p.SETTINGS_SECTION}"',
            *strings("REQUESTS", p.REQUESTS),
            *strings("NOTIFICATIONS", p.NOTIFICATIONS),
            "",
        ]
    )


def outputs() -> dict[Path, str]:
    """Every file this script writes, with its text."""
    return {
        SCHEMA_PATH: render(build_schema()),
        LUA_PATH: render_lua(),
        ELISP_PATH: render_elisp(),
        ANNOUNCED_PATH: render_announced(),
        **settings_docs.outputs(),  # package.json and the Neovim and Emacs settings tables
    }


def stale() -> list[Path]:
    return [
        path
        for path, text in outputs().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        for path in stale():
            print(f"{path} is stale: run uv run python docs/protocol_schema.py", file=sys.stderr)
        return 1 if stale() else 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    for path, text in outputs().items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
