"""docs/protocol.schema.json: current with server/protocol.py, true to the wire, and the
method names every client sends are in it."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import types
import typing
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from jsonschema import Draft202012Validator

from server import protocol as p
from tests.support.lsp_client import AgentTestClient, agent_session, ask, server_env
from tests.support.model_server import ScriptedModel, tool_call

REPO = Path(__file__).resolve().parents[1]


def _load_generator() -> Any:
    # docs/ is not a package: the generator is a script beside the schema it writes.
    spec = importlib.util.spec_from_file_location(
        "protocol_schema", REPO / "docs/protocol_schema.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generator = _load_generator()
SCHEMA = json.loads((REPO / "docs/protocol.schema.json").read_text(encoding="utf-8"))


def test_the_checked_in_schema_is_current() -> None:
    fresh = generator.render(generator.build_schema())
    assert (REPO / "docs/protocol.schema.json").read_text(encoding="utf-8") == fresh, (
        "docs/protocol.schema.json is stale: run uv run python docs/protocol_schema.py"
    )


def test_the_generated_lua_and_elisp_tables_are_current() -> None:
    assert generator.stale() == [], "stale: run uv run python docs/protocol_schema.py"
    lua = generator.LUA_PATH.read_text(encoding="utf-8")
    elisp = generator.ELISP_PATH.read_text(encoding="utf-8")
    for method in p.SIGNATURES:
        assert f"'{method}'" in lua and f" :{method}\n" in elisp
    assert "model_not_configured = -32001" in lua
    assert "(defconst agent-lsp-error-request-cancelled -32800" in elisp
    assert "set_api_key = 'setApiKey'" in lua
    assert '(defconst agent-lsp-action-set-api-key "setApiKey"' in elisp


LANGUAGE = (p.AGENT_LANGUAGE_DIAGNOSTICS, p.AGENT_LANGUAGE_REQUEST)


def test_it_is_a_2020_12_schema_naming_every_method() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    methods = SCHEMA["methods"]
    server_to_client = {p.AGENT_REQUEST_PERMISSION, *LANGUAGE}
    assert set(methods) == {*p.REQUESTS, *p.NOTIFICATIONS, *server_to_client}
    assert {m for m, e in methods.items() if e["kind"] == "notification"} == set(p.NOTIFICATIONS)
    assert all(methods[m]["direction"] == "serverToClient" for m in server_to_client)
    assert methods[p.AGENT_LANGUAGE_DIAGNOSTICS]["result"] == {
        "$ref": "#/$defs/LanguageDiagnosticsResult"
    }
    assert methods[p.AGENT_ASK]["params"] == {"$ref": "#/$defs/AskParams"}
    assert all("result" not in methods[m] for m in p.NOTIFICATIONS)


def test_the_method_lists_and_error_tables_are_derived_from_the_declaration() -> None:
    assert p.REQUESTS == tuple(
        m for m, s in p.SIGNATURES.items() if (s.kind, s.direction) == ("request", "clientToServer")
    )
    assert p.NOTIFICATIONS == tuple(m for m, s in p.SIGNATURES.items() if s.kind == "notification")
    constants = {v for k, v in vars(p).items() if k.startswith("AGENT_")}
    assert constants == set(p.SIGNATURES)  # every method constant is declared, and only those
    assert SCHEMA["errorCodes"]["modelNotConfigured"] == p.ErrorCode.MODEL_NOT_CONFIGURED == -32001
    assert SCHEMA["errorActions"] == ["setApiKey", "setBaseUrl", "setModel"]


# -- the schema against the converter: names, types, what is required ------------------------


def _protocol_classes() -> list[type]:
    # The attrs classes (the TypedDicts are JSON as it is built; the real server checks them).
    names = [n for n in SCHEMA["$defs"] if attrs.has(getattr(p, n, None) or int)]
    return [getattr(p, n) for n in names]


def _sample(tp: Any) -> Any:
    """A value of ``tp`` with every optional part present (nothing left at its default)."""
    if isinstance(tp, type) and attrs.has(tp):
        hints = typing.get_type_hints(tp)
        return tp(**{f.name: _sample(hints[f.name]) for f in attrs.fields(tp)})
    if tp is Any:
        return "any"
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is list:
        return [_sample(args[0])]
    if origin is dict:
        return {"key": _sample(args[1])}
    if origin is types.UnionType:
        return _sample(next(a for a in args if a is not type(None)))
    return {str: "text", int: 7, float: 1.5, bool: True}[tp]


def _minimal(cls: type) -> Any:
    hints = typing.get_type_hints(cls)
    required = [f for f in attrs.fields(cls) if f.default is attrs.NOTHING]
    return cls(**{f.name: _sample(hints[f.name]) for f in required})


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with no undeclared property allowed (the published one allows them: a
    client ignores what a newer server adds)."""
    strict = copy.deepcopy(schema)
    for definition in strict["$defs"].values():
        definition["additionalProperties"] = False
    return strict


def _validator(subschema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator({"$defs": _strict(SCHEMA)["$defs"], **subschema})


@pytest.mark.parametrize("cls", _protocol_classes(), ids=lambda c: c.__name__)
def test_every_class_on_the_wire_fits_its_definition(cls: type) -> None:
    definition = SCHEMA["$defs"][cls.__name__]
    full = p.to_wire(_sample(cls))
    _validator({"$ref": f"#/$defs/{cls.__name__}"}).validate(full)
    assert set(full) == set(definition["properties"])  # the converter's own camelCase names
    # What the converter leaves out at its default is exactly what the schema does not require.
    assert set(p.to_wire(_minimal(cls))) == set(definition.get("required", []))
    assert p.parse(full, cls) == _sample(cls)


def test_types_and_constraints_match_what_parse_accepts() -> None:
    ask_params = _validator({"$ref": "#/$defs/AskParams"})
    for raw in ({"prompt": " "}, {"prompt": 5}, {"prompt": "x", "workDoneToken": True}, {}):
        assert not ask_params.is_valid(raw), raw
        with pytest.raises(p.ParamsError):
            p.parse(raw, p.AskParams)
    accepted = {"prompt": "x", "workDoneToken": 3, "context": {"documents": ["file:///a"]}}
    ask_params.validate(accepted)
    p.parse(accepted, p.AskParams)


# -- the schema against the real server --------------------------------------------------------


@pytest.fixture
async def client(model: ScriptedModel, workspace: Path) -> AsyncIterator[AgentTestClient]:
    async with agent_session(server_env(model.base_url), [workspace]) as client:
        yield client


async def test_the_real_servers_results_and_notifications_fit_the_schema(
    client: AgentTestClient, model: ScriptedModel
) -> None:
    methods = SCHEMA["methods"]

    async def request(method: str, params: dict[str, Any]) -> Any:
        _validator(methods[method]["params"]).validate(params)
        result = await client.protocol.send_request_async(method, params)
        _validator(methods[method]["result"]).validate(result)
        return result

    write = {"path": "notes.md", "content": "x = 2\n"}
    model.reply(tool_calls=[tool_call("write_file", write, id="c1")])
    model.reply("Done.")
    answer = await ask(client, prompt="write notes.md")
    _validator(methods[p.AGENT_ASK]["result"]).validate(answer)
    assert answer["toolCalls"][0]["ok"], answer
    session = {"sessionId": answer["sessionId"]}

    assert client.progress and client.deltas and client.activity
    for params in client.activity:
        _validator(methods[p.AGENT_TOOL_ACTIVITY]["params"]).validate(params)
    assert {a["summaryKey"] for a in client.activity} == {"path"}  # write_file's definition
    assert all("displayName" not in a for a in client.activity)  # a built-in: its name
    for params in client.progress:
        _validator(methods[p.AGENT_ASK_PROGRESS]["params"]).validate(params)
    for delta in client.deltas:
        _validator(methods[p.AGENT_ANSWER_DELTA]["params"]).validate(
            {k: v for k, v in delta.items() if k != "at"}  # "at": the test client's arrival time
        )

    checkpoint = answer["checkpointId"]
    assert (await request(p.AGENT_CHECKPOINTS, session))["checkpoints"][0]["files"]
    diff = await request(
        p.AGENT_DIFF, {**session, "checkpointId": checkpoint, "includeContent": True}
    )
    assert diff["files"][0]["after"] == "x = 2\n"
    await request(p.AGENT_REWIND, {**session, "checkpointId": checkpoint, "dryRun": True})
    assert (await request(p.AGENT_SESSION_HISTORY, session))["entries"]
    await request(p.AGENT_TOOL_OUTPUT, {**session, "callId": "c1"})
    assert (await request(p.AGENT_SESSIONS, {}))["sessions"]
    await request(p.AGENT_GRANTS, session)
    await request(p.AGENT_REVOKE_GRANT, {**session, "grantId": "none"})
    await request(p.AGENT_LIST_MODELS, {})
    await request(p.AGENT_CHECK_CONNECTION, {})
    await request(p.AGENT_COMPACT, session)
    tools = (await request(p.AGENT_LIST_TOOLS, {}))["tools"]
    assert {t["source"]["kind"] for t in tools} == {"builtin"}
    assert "grants" not in await request(p.AGENT_SANDBOX_STATUS, {})
    assert (await request(p.AGENT_SANDBOX_STATUS, session))["grants"] == []
    fresh = await request(p.AGENT_NEW_SESSION, {})
    assert (await request(p.AGENT_END_SESSION, {"sessionId": fresh["sessionId"]}))["ended"]


# -- the hand-written clients ------------------------------------------------------------------

# Each client's sources, all files together, without the generated table they take names from.
_CLIENT_SOURCES = {
    "nvim": sorted(
        f for f in (REPO / "editor-client/nvim/lua").rglob("*.lua") if f != generator.LUA_PATH
    ),
    "emacs": sorted(
        f for f in (REPO / "editor-client/emacs").glob("*.el") if f != generator.ELISP_PATH
    ),
}
# A method name written by hand: a Lua string, an Elisp string, keyword or quoted symbol.
_LITERAL = {
    "nvim": re.compile(r"""['"]agent/[A-Za-z]+"""),
    "emacs": re.compile(r""""agent/[A-Za-z]+"|(?<![`\w]):agent/|'agent/"""),
}
# A generated name used: methods.new_session / agent-lsp-method-new-session.
_USED = {
    "nvim": re.compile(r"\bmethods\.([a-z_]+)"),
    "emacs": re.compile(r"\bagent-lsp-method-([a-z-]+)"),
}

# The names the generated table declares.
_DECLARED = {
    "nvim": re.compile(r"^  ([a-z_]+) = 'agent/", re.MULTILINE),
    "emacs": re.compile(r"^\(defconst agent-lsp-method-([a-z-]+) ", re.MULTILINE),
}


def _code(client: str, text: str) -> str:
    """The text without comments (Lua ``--``, Elisp ``;``); strings kept."""
    mark = "--" if client == "nvim" else ";"
    return "\n".join(line.split(mark, 1)[0] for line in text.splitlines())


@pytest.mark.parametrize("client", sorted(_CLIENT_SOURCES))
def test_the_lua_and_elisp_clients_take_method_names_from_the_generated_table(
    client: str,
) -> None:
    generated = (generator.LUA_PATH if client == "nvim" else generator.ELISP_PATH).read_text(
        encoding="utf-8"
    )
    declared = set(_DECLARED[client].findall(generated))
    assert len(declared) == len(p.SIGNATURES)
    used: dict[str, str] = {}
    for source in _CLIENT_SOURCES[client]:
        code = _code(client, source.read_text(encoding="utf-8"))
        by_hand = _LITERAL[client].findall(code)
        assert not by_hand, f"{source.relative_to(REPO)} writes method names by hand: {by_hand}"
        used.update(dict.fromkeys(_USED[client].findall(code), str(source.relative_to(REPO))))
    assert used, "no generated name found: the pattern no longer matches how the client uses them"
    unknown = {name: f for name, f in used.items() if name not in declared and name != "symbol"}
    assert not unknown, f"the {client} client uses names the generated table lacks: {unknown}"
