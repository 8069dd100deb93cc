"""docs/protocol.schema.json from server/protocol.py: the agent/* methods and their types.

``server.protocol`` owns the protocol (its classes and ``SIGNATURES``); this script only
reads it, so the schema clients build on cannot drift from what the server parses and
sends. It lives beside the schema, outside ``server/``: the server never needs it.

    uv run python docs/protocol_schema.py          # rewrite the schema
    uv run python docs/protocol_schema.py --check  # exit 1 when it is stale

The settings come from ``server.engine.settings``'s classes through ``docs/settings_docs.py``
(``$defs/Settings``; VS Code's package.json and the Neovim and Emacs settings tables, also
written and checked here). The VS
Code client's types are generated from the schema in turn
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

SCHEMA_PATH = Path(__file__).with_name("protocol.schema.json")
_PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean"}
_PRIMITIVES[type(None)] = "null"


def build_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12): ``$defs`` per class, ``methods`` per method name."""
    directions = {
        **{m: ("request", "clientToServer") for m in p.REQUESTS},
        **{m: ("notification", "serverToClient") for m in p.NOTIFICATIONS},
        p.AGENT_REQUEST_PERMISSION: ("request", "serverToClient"),
    }
    if set(directions) != set(p.SIGNATURES):
        missing = sorted(set(directions) ^ set(p.SIGNATURES))
        raise ValueError(f"protocol.SIGNATURES and the method lists disagree on {missing}")
    walker = _Walker()
    methods: dict[str, Any] = {}
    for method, (kind, direction) in directions.items():
        params, result = p.SIGNATURES[method]
        entry = {"kind": kind, "direction": direction, "params": walker.schema_of(params)}
        if kind == "request":
            entry["result"] = walker.schema_of(result)
        methods[method] = entry
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "agent-lsp protocol",
        "description": (
            "Generated from server/protocol.py by docs/protocol_schema.py; do not edit. "
            "`methods` maps each agent/* method to its params and result ({}: not declared "
            "as a type yet, see docs/protocol.md). docs/protocol.md is the prose."
        ),
        "protocolVersion": p.PROTOCOL_VERSION,
        "settingsSection": p.SETTINGS_SECTION,
        "settings": {"$ref": "#/$defs/Settings"},
        "methods": methods,
        "$defs": dict(sorted({**walker.defs, "Settings": _settings()}.items())),
    }


def _settings() -> dict[str, Any]:
    # server.engine.settings declares them; docs/settings_docs.py derives the schema and the
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
        if tp is Any:
            return {}
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
            if field.validator is getattr(p, "_non_empty", None):  # protocol.py's validator
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
        if cls.__module__ != p.__name__:  # lsprotocol's (Range, Position): its docs are LSP's
            doc = f"LSP's {name} (lsprotocol.types.{name})."
        self.defs[name] = {
            "type": "object",
            **({"description": inspect.cleandoc(doc)} if doc else {}),
            "properties": properties,
            **({"required": required} if required else {}),
        }
        return name


def _wire_name(name: str) -> str:
    # What lsprotocol's converter (protocol.to_wire, parse) renames a field to; the test
    # checks it against the converter's real output for every class.
    stem = name.removesuffix("_")
    head, *rest = stem.split("_")
    return head + "".join(part.title() for part in rest)


def _field_comments(cls: type) -> dict[str, str]:
    """``field: type  # comment`` of a class of protocol.py: the comment, by field."""
    if sys.modules.get(cls.__module__) is not p:
        return {}
    source = inspect.getsource(p)
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


def main(argv: list[str]) -> int:
    text = render(build_schema())
    if argv == ["--check"]:
        stale = settings_docs.generate(check=True)
        if not stale and SCHEMA_PATH.exists() and SCHEMA_PATH.read_text(encoding="utf-8") == text:
            return 0
        print(f"{SCHEMA_PATH} is stale: run uv run python docs/protocol_schema.py", file=sys.stderr)
        return 1
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    SCHEMA_PATH.write_text(text, encoding="utf-8")
    settings_docs.generate(check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
