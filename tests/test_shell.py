"""The ``bash`` tool against real subprocesses in a real temporary workspace."""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import time
from pathlib import Path

import pytest

from tests.support.procs import until
from tooling.contract import is_error
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace
from tools.shell import DEFAULT_SECRET_ENV, OUTPUT_LIMIT, BoundedOutput, bash_tool

HAS_PROC = Path("/proc/self/cmdline").exists()
needs_proc = pytest.mark.skipif(not HAS_PROC, reason="process scan needs /proc")


def runtime_for(root: Path, **options: object) -> ToolRuntime:
    return ToolRuntime(ToolRegistry([bash_tool(Workspace(root), **options)]))  # type: ignore[arg-type]


async def run(runtime: ToolRuntime, command: str, **arguments: object) -> str:
    return await runtime.execute("bash", json.dumps({"command": command, **arguments}))


def unique_tag() -> str:
    """Digits that make a ``sleep`` argument unique, e.g. ``sleep 30.<tag>``."""
    return str(random.randrange(10**8, 10**9))


def live_processes_with(tag: str) -> list[str]:
    """Command lines of running (non-zombie) processes mentioning ``tag``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()  # empty for zombies
        except OSError:
            continue
        if tag.encode() in cmdline:
            found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


async def test_output_of_stdout_and_stderr(tmp_path: Path) -> None:
    result = await run(runtime_for(tmp_path), "echo hello; echo oops >&2")
    assert not is_error(result)
    assert result == "hello\noops\n"


async def test_runs_in_the_workspace_root(tmp_path: Path) -> None:
    (tmp_path / "only-here.txt").write_text("x")
    root = Workspace(tmp_path).root  # symlink-resolved, as ``pwd`` prints it
    result = await run(runtime_for(tmp_path), "pwd; ls")
    assert result.splitlines() == [str(root), "only-here.txt"]


async def test_stdin_is_dev_null_not_the_servers_stdin(tmp_path: Path) -> None:
    # Make our own stdin an open pipe (as the editor's protocol stream is), so a
    # command that inherited it would block in ``cat`` instead of seeing end-of-file.
    read_end, write_end = os.pipe()
    saved_stdin = os.dup(0)
    os.dup2(read_end, 0)
    try:
        runtime = runtime_for(tmp_path)
        start = time.monotonic()
        assert await run(runtime, "cat", timeout_seconds=5) == "(no output)"
        assert time.monotonic() - start < 2.5
        assert await run(runtime, "readlink /proc/self/fd/0") == "/dev/null\n"
    finally:
        os.dup2(saved_stdin, 0)
        for fd in (saved_stdin, read_end, write_end):
            os.close(fd)


async def test_nonzero_exit_is_an_error_with_the_output(tmp_path: Path) -> None:
    result = await run(runtime_for(tmp_path), "echo partial; exit 2")
    assert is_error(result)
    assert result == "Error: exit code 2\npartial\n"


async def test_shell_killed_by_signal_is_reported(tmp_path: Path) -> None:
    result = await run(runtime_for(tmp_path), "kill -KILL $$")
    assert result.startswith("Error: killed by SIGKILL")


async def test_empty_output_says_so(tmp_path: Path) -> None:
    assert await run(runtime_for(tmp_path), "true") == "(no output)"


@needs_proc
async def test_background_child_neither_holds_nor_outlives_the_call(tmp_path: Path) -> None:
    tag = unique_tag()
    start = time.monotonic()
    result = await run(runtime_for(tmp_path), f"sleep 100.{tag} & echo started", timeout_seconds=1)
    assert time.monotonic() - start < 2.5
    assert result == "started\n"
    assert live_processes_with(tag) == []


@needs_proc
async def test_timeout_kills_the_whole_tree(tmp_path: Path) -> None:
    tag = unique_tag()
    start = time.monotonic()
    result = await run(
        runtime_for(tmp_path),
        f"echo before; (sleep 1.{tag}; touch marker) & sleep 30.{tag}",
        timeout_seconds=0.5,
    )
    assert time.monotonic() - start < 2.5
    assert result == "Error: command timed out after 0.5 s\nbefore\n"
    # The subshell that would touch the marker carries the tag too: with every tagged
    # process gone, nothing is left that could write it later.
    assert live_processes_with(tag) == []
    assert not (tmp_path / "marker").exists()


@needs_proc
async def test_timeout_escalates_to_sigkill_when_term_is_ignored(tmp_path: Path) -> None:
    tag = unique_tag()
    start = time.monotonic()
    result = await run(
        runtime_for(tmp_path),
        f"trap '' TERM; echo before; sleep 30.{tag}; echo after",
        timeout_seconds=0.5,
    )
    assert time.monotonic() - start < 2.5
    assert result.startswith("Error: command timed out after 0.5 s\nbefore")
    assert live_processes_with(tag) == []


async def test_default_timeout_applies(tmp_path: Path) -> None:
    result = await run(runtime_for(tmp_path, default_timeout=0.3), "sleep 30")
    assert result.startswith("Error: command timed out after 0.3 s")


@needs_proc
async def test_cancellation_kills_the_whole_tree(tmp_path: Path) -> None:
    tag = unique_tag()
    inner = f"(sleep 1.{tag}; touch marker) & sleep 30.{tag}"
    task = asyncio.create_task(run(runtime_for(tmp_path), f"bash -c '{inner}'"))
    await until(lambda: len(live_processes_with(tag)) >= 2)  # the subshell and the sleep

    start = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - start < 1.5
    assert live_processes_with(tag) == []  # the marker's writer included: it never comes
    assert not (tmp_path / "marker").exists()


@needs_proc
async def test_cancellation_while_spawning_kills_the_whole_tree(tmp_path: Path) -> None:
    tag = unique_tag()
    task = asyncio.create_task(
        run(runtime_for(tmp_path), f"(sleep 0.{tag}; touch marker) & sleep 30.{tag}")
    )
    await asyncio.sleep(0)  # the task is now suspended inside the spawn
    start = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - start < 1.5
    assert live_processes_with(tag) == []  # the marker's writer included: it never comes
    assert not (tmp_path / "marker").exists()


async def test_commands_run_concurrently_without_blocking_the_loop(tmp_path: Path) -> None:
    runtime = runtime_for(tmp_path)
    start = time.monotonic()
    results = await asyncio.gather(*(run(runtime, "sleep 0.5; echo done") for _ in range(3)))
    assert results == ["done\n"] * 3
    assert time.monotonic() - start < 1.4


async def test_huge_output_is_bounded_head_and_tail(tmp_path: Path) -> None:
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    result = await run(
        runtime_for(tmp_path),
        "echo START; head -c 200000000 /dev/zero | tr '\\0' a; echo; echo END",
        timeout_seconds=60,
    )
    rss_growth_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    total = len("START\n") + 200_000_000 + len("\nEND\n")
    marker = f"\n\n[... {total - OUTPUT_LIMIT:,} bytes of output omitted ...]\n\n"
    assert marker in result
    head, tail = result.split(marker)
    assert head == "START\n" + "a" * (OUTPUT_LIMIT // 2 - len("START\n"))
    assert tail == "a" * (OUTPUT_LIMIT // 2 - len("\nEND\n")) + "\nEND\n"
    assert rss_growth_mib < 100  # generous: the whole stream would be 200 MB


async def test_non_utf8_bytes_are_replaced(tmp_path: Path) -> None:
    result = await run(runtime_for(tmp_path), r"printf '\xff\xfeok\xc3\xa9'")
    assert result == "\ufffd\ufffdok\u00e9"


def test_truncation_cuts_at_character_boundaries() -> None:
    output = BoundedOutput(OUTPUT_LIMIT)
    text = "€" * 30_000  # 3 bytes each: both cut points (25,000 and 65,000) split one
    data = text.encode()
    for start in range(0, len(data), 4093):
        output.feed(data[start : start + 4093])
    rendered = output.render()
    assert "\ufffd" not in rendered
    head, marker, tail = rendered.partition("\n\n[... ")
    assert marker
    assert set(head) == {"€"} and set(tail.split("...]\n\n")[1]) == {"€"}
    assert len(head) + len(tail.split("...]\n\n")[1]) <= OUTPUT_LIMIT // 2
    dropped = int(tail.split(" bytes")[0].replace(",", ""))
    kept = len(head.encode()) + len(tail.split("...]\n\n")[1].encode())
    assert dropped + kept == len(data)


async def test_model_credentials_are_hidden_from_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MODEL_API_KEY", "model-secret-4711")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret-4712")
    monkeypatch.setenv("MY_EXTRA_TOKEN", "extra-secret-4713")
    monkeypatch.setenv("AGENT_LSP_VISIBLE", "visible-4714")
    runtime = runtime_for(tmp_path, hidden_env=(*DEFAULT_SECRET_ENV, "MY_EXTRA_TOKEN"))
    result = await run(runtime, "env")
    assert "AGENT_LSP_VISIBLE=visible-4714" in result
    for secret in ("model-secret-4711", "sk-openai-secret-4712", "extra-secret-4713"):
        assert secret not in result


async def test_default_hidden_env_is_the_model_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret-4715")
    result = await run(runtime_for(tmp_path), 'echo "[$OPENAI_API_KEY]"')
    assert result == "[]\n"


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        ({}, "missing required field 'command'"),
        ({"command": ""}, "'command' must be at least 1 characters long"),
        ({"command": "touch side-effect", "timeout_seconds": 601}, "must be <= 600"),
        ({"command": "touch side-effect", "timeout_seconds": 0}, "exclusiveMinimum"),
        ({"command": "touch side-effect", "timeout_seconds": "5"}, "must be of type number"),
        ({"command": "touch side-effect", "cwd": "/"}, "additionalProperties"),
    ],
)
async def test_schema_violations_are_errors_and_run_nothing(
    tmp_path: Path, arguments: dict[str, object], complaint: str
) -> None:
    result = await runtime_for(tmp_path).execute("bash", json.dumps(arguments))
    assert result.startswith("Error: Invalid arguments for bash:")
    assert complaint in result
    assert not (tmp_path / "side-effect").exists()


async def test_vanished_workspace_is_an_error(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    runtime = runtime_for(root)
    root.rmdir()
    result = await run(runtime, "echo hi")
    assert result == f"Error: workspace folder no longer exists: {root}"


async def test_missing_bash_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = await run(runtime_for(tmp_path), "echo hi")
    assert result.startswith("Error: could not start bash:")


def test_declaration(tmp_path: Path) -> None:
    tool = bash_tool(Workspace(tmp_path), max_timeout=300)
    assert (tool.name, tool.read_only, tool.destructive) == ("bash", False, True)
    assert tool.title == "Run shell command"
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "minLength": 1,
                "description": "The bash command line to run.",
            },
            "timeout_seconds": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 300,
                "description": "Time limit in seconds (default 120).",
            },
            "escalation": tool.parameters["properties"]["escalation"],
            "network_hosts": tool.parameters["properties"]["network_hosts"],
            "justification": tool.parameters["properties"]["justification"],
        },
        "required": ["command"],
        "dependentRequired": {"escalation": ["justification"], "network_hosts": ["escalation"]},
        "additionalProperties": False,
    }
    escalations = tool.parameters["properties"]["escalation"]["enum"]
    assert escalations == ["network", "git-config", "unsandboxed"]
    annotations = ToolRegistry([tool]).describe()[0]["annotations"]
    assert annotations["destructiveHint"] is True and annotations["readOnlyHint"] is False


@pytest.mark.parametrize("default_timeout", [0, -1, 601])
def test_bad_default_timeout_is_refused(tmp_path: Path, default_timeout: float) -> None:
    with pytest.raises(ValueError, match="default_timeout"):
        bash_tool(Workspace(tmp_path), default_timeout=default_timeout)
