"""Editor-aware files: unsaved buffers, edits through the editor, stale-edit protection."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.support.editor import EDITOR_CAPABILITIES, TestEditor, make_editor_client
from tests.support.framing import StrictReader, send
from tests.support.lsp_client import REPO, AgentTestClient, agent_session, ask, server_env
from tests.support.model_server import ScriptedModel, tool_call


@pytest.fixture
def workspace(workspace: Path) -> Path:
    (workspace / "app.py").write_text("import os\n\ndef main():\n    return 1\n")
    return workspace


def open_editor(
    model: ScriptedModel,
    workspace: Path,
    *,
    accept: bool = True,
    settings: dict[str, Any] | None = None,
    capabilities: types.ClientCapabilities = EDITOR_CAPABILITIES,
) -> AbstractAsyncContextManager[AgentTestClient]:
    return agent_session(
        server_env(model.base_url),
        [workspace],
        settings=settings,
        capabilities=capabilities,
        client_factory=lambda: make_editor_client(accept),
    )


@pytest.fixture
async def client(model: ScriptedModel, workspace: Path) -> AsyncIterator[AgentTestClient]:
    async with open_editor(model, workspace) as client:
        yield client


def editor_of(client: AgentTestClient) -> TestEditor:
    return client.editor  # type: ignore[attr-defined,no-any-return]


def tool_results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.bodies[-1]["messages"] if m["role"] == "tool"]


async def test_read_file_returns_the_unsaved_buffer(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    editor = editor_of(client)
    buffer = editor.open(workspace / "app.py")
    editor.type(buffer, "return 1", "return 42  # typed, not saved")
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})])
    model.reply("ok")
    await ask(client, prompt="read app.py")
    (output,) = tool_results(model)
    assert "return 42  # typed, not saved" in output
    assert "unsaved changes" in output
    assert "return 1" in (workspace / "app.py").read_text()


async def test_edit_of_a_dirty_buffer_goes_through_the_editor(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    editor = editor_of(client)
    buffer = editor.open(workspace / "app.py")
    editor.type(buffer, "import os", "import os\nimport sys  # user's unsaved line")
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})])
    model.reply(
        tool_calls=[
            tool_call(
                "edit_file", {"path": "app.py", "old_text": "return 1", "new_text": "return 2"}
            )
        ]
    )
    model.reply("edited")
    result = await ask(client, prompt="make it return 2")
    assert result["toolCalls"][1]["ok"], result["toolCalls"][1]["output"]
    assert "in the editor" in result["toolCalls"][1]["output"]

    # Both the user's unsaved line and the agent's change are in the buffer...
    assert (
        buffer.text == "import os\nimport sys  # user's unsaved line\n\ndef main():\n    return 2\n"
    )
    # ...the disk is untouched (the user saves)...
    assert (workspace / "app.py").read_text() == "import os\n\ndef main():\n    return 1\n"
    # ...and it arrived as one annotated, versioned applyEdit.
    (request,) = editor.apply_requests
    assert request.label == "agent-lsp: edit_file"
    (change,) = request.edit.document_changes
    assert change.text_document.version == 2
    (text_edit,) = change.edits
    assert isinstance(text_edit, types.AnnotatedTextEdit)
    annotation = request.edit.change_annotations[text_edit.annotation_id]
    assert annotation.label == "agent-lsp: edit_file"
    assert not annotation.needs_confirmation
    # One undo in the editor reverts the agent's change and keeps the user's.
    editor.undo(buffer)
    assert "return 1" in buffer.text
    assert "import sys  # user's unsaved line" in buffer.text


async def test_write_file_to_an_open_document(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    editor = editor_of(client)
    buffer = editor.open(workspace / "app.py")
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})])
    model.reply(tool_calls=[tool_call("write_file", {"path": "app.py", "content": "print(1)\n"})])
    model.reply("rewrote")
    result = await ask(client, prompt="rewrite")
    assert result["toolCalls"][1]["ok"], result["toolCalls"][1]["output"]
    assert buffer.text == "print(1)\n"
    assert editor.apply_requests[0].label == "agent-lsp: write_file"


async def test_a_refused_edit_is_reported_to_the_model(
    model: ScriptedModel, workspace: Path
) -> None:
    async with open_editor(
        model, workspace, accept=False, settings={"confirmEdits": True}
    ) as client:
        editor = editor_of(client)
        buffer = editor.open(workspace / "app.py")
        model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})])
        model.reply(
            tool_calls=[
                tool_call(
                    "edit_file", {"path": "app.py", "old_text": "return 1", "new_text": "return 3"}
                )
            ]
        )
        model.reply("the user said no")
        result = await ask(client, prompt="change it")
        call = result["toolCalls"][1]
        assert not call["ok"]
        assert "the user rejected this edit" in call["output"]
        assert "the user rejected this edit" in tool_results(model)[1]
        (request,) = editor.apply_requests
        annotation = next(iter(request.edit.change_annotations.values()))
        assert annotation.needs_confirmation is True
        assert "return 1" in buffer.text


async def test_a_file_changed_on_disk_after_the_read_is_refused_until_reread(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    target = workspace / "app.py"
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})])
    model.reply("read it")
    first = await ask(client, prompt="read")
    target.write_text(target.read_text() + "# the user saved this\n")

    edit = {"path": "app.py", "old_text": "return 1", "new_text": "return 5"}
    model.reply(tool_calls=[tool_call("edit_file", edit)])
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})])
    model.reply(tool_calls=[tool_call("edit_file", edit)])
    model.reply("done after re-reading")
    second = await ask(client, prompt="edit", sessionId=first["sessionId"])
    refused, reread, edited = second["toolCalls"]
    assert not refused["ok"]
    assert "changed since you last read it" in refused["output"]
    assert reread["ok"]
    assert edited["ok"], edited["output"]
    assert target.read_text().endswith("return 5\n# the user saved this\n")


async def test_editing_a_file_never_read_is_refused(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    model.reply(
        tool_calls=[
            tool_call("edit_file", {"path": "app.py", "old_text": "return 1", "new_text": "x"}),
            tool_call("write_file", {"path": "app.py", "content": "overwritten"}),
            tool_call("write_file", {"path": "new.py", "content": "fresh\n"}),
        ]
    )
    model.reply("ok")
    result = await ask(client, prompt="blind edits")
    edit, overwrite, create = result["toolCalls"]
    assert "has not been read in this conversation" in edit["output"]
    assert "has not been read in this conversation" in overwrite["output"]
    assert create["ok"]
    assert "return 1" in (workspace / "app.py").read_text()
    # Another conversation's read does not count for this one.
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})])
    model.reply("read")
    await ask(client, prompt="read in a new session")
    model.reply(tool_calls=[tool_call("write_file", {"path": "app.py", "content": "x"})])
    model.reply("ok")
    other = await ask(client, prompt="blind again")
    assert not other["toolCalls"][0]["ok"]


async def test_multibyte_text_edits_the_right_characters(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    target = workspace / "emoji.py"
    target.write_text('s = "😀é中文"; y = 1; z = "🎉"\nw = "𝄞"; v = 1\n')
    editor = editor_of(client)
    buffer = editor.open(target)
    editor.type(buffer, "w = ", "w = 0 or ")  # make it dirty too
    model.reply(tool_calls=[tool_call("read_file", {"path": "emoji.py"})])
    model.reply(
        tool_calls=[
            tool_call("edit_file", {"path": "emoji.py", "old_text": "y = 1", "new_text": "y = 2"}),
        ]
    )
    model.reply(
        tool_calls=[
            tool_call("edit_file", {"path": "emoji.py", "old_text": "v = 1", "new_text": "v = 🚀"})
        ]
    )
    model.reply("done")
    result = await ask(client, prompt="bump y and v")
    assert all(call["ok"] for call in result["toolCalls"]), result["toolCalls"]
    assert buffer.text == 's = "😀é中文"; y = 2; z = "🎉"\nw = 0 or "𝄞"; v = 🚀\n'


async def test_client_without_apply_edit_writes_disk_but_never_over_unsaved_text(
    model: ScriptedModel, workspace: Path
) -> None:
    async with open_editor(model, workspace, capabilities=types.ClientCapabilities()) as client:
        editor = editor_of(client)
        other = workspace / "clean.py"
        other.write_text("a = 1\n")
        editor.open(other)  # open but not dirty
        buffer = editor.open(workspace / "app.py")
        editor.type(buffer, "return 1", "return 9")  # dirty
        model.reply(
            tool_calls=[
                tool_call("read_file", {"path": "clean.py"}),
                tool_call("read_file", {"path": "app.py"}),
            ]
        )
        model.reply(
            tool_calls=[
                tool_call(
                    "edit_file", {"path": "clean.py", "old_text": "a = 1", "new_text": "a = 2"}
                ),
                tool_call(
                    "edit_file", {"path": "app.py", "old_text": "def", "new_text": "async def"}
                ),
            ]
        )
        model.reply("ok")
        result = await ask(client, prompt="edit both")
        clean, dirty = result["toolCalls"][2:]
        assert clean["ok"], clean["output"]
        assert other.read_text() == "a = 2\n"
        assert not dirty["ok"]
        assert "unsaved changes in the editor" in dirty["output"]
        assert "def main" in (workspace / "app.py").read_text()
        assert editor.apply_requests == []


async def test_closing_a_document_returns_to_the_disk(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    editor = editor_of(client)
    buffer = editor.open(workspace / "app.py")
    editor.type(buffer, "return 1", "return 77")
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=buffer.uri))
    )
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})])
    model.reply("ok")
    await ask(client, prompt="read")
    (output,) = tool_results(model)
    assert "return 1" in output
    assert "return 77" not in output


def test_kill_9_during_a_large_write_leaves_old_or_new_never_a_mix(
    model: ScriptedModel, tmp_path: Path
) -> None:
    target = tmp_path / "big.txt"
    old = b"old\n" * 2_000_000  # 8 MB
    new = "new\n" * 10_000_000  # 40 MB: the write takes a while
    target.write_bytes(old)
    outcomes = set()
    for attempt in range(3):
        model.reply(tool_calls=[tool_call("read_file", {"path": "big.txt", "limit": 1})])
        model.reply(tool_calls=[tool_call("write_file", {"path": "big.txt", "content": new})])
        model.reply("written")
        proc = subprocess.Popen(
            [sys.executable, "-I", "-m", "server", "--stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=server_env(model.base_url),
            cwd=REPO,
        )
        assert proc.stdout is not None
        reader = StrictReader(proc.stdout)
        try:
            uri = tmp_path.as_uri()
            send(proc, {"id": 1, "method": "initialize", "params": {
                "processId": None, "capabilities": {}, "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "w"}]}})  # fmt: skip
            reader.wait_for(lambda m: m.get("id") == 1)
            send(proc, {"method": "initialized", "params": {}})
            send(proc, {"id": 2, "method": "agent/ask", "params": {"prompt": f"write {attempt}"}})
            deadline = time.monotonic() + 30
            while not list(tmp_path.glob(".big.txt.*.tmp")) and time.monotonic() < deadline:
                time.sleep(0.001)
            time.sleep(0.002 * attempt)  # kill at slightly different points
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            proc.kill()
            proc.wait()
        data = target.read_bytes()
        assert data in (old, new.encode()), f"mixed content of {len(data)} bytes"
        outcomes.add("new" if data == new.encode() else "old")
        for leftover in tmp_path.glob(".big.txt.*.tmp"):
            leftover.unlink()
        target.write_bytes(old)
        model._queue.clear()  # type: ignore[attr-defined]
    assert outcomes  # at least one attempt ran; usually all three left the old content


def test_tool_arguments_are_json_with_unicode(workspace: Path) -> None:
    # Guard for the multibyte test above: the scripted model sends real UTF-8 JSON.
    assert json.loads(json.dumps({"t": "😀"}, ensure_ascii=False)) == {"t": "😀"}


async def test_a_document_whose_path_cannot_be_resolved_fails_no_tool_call(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    (workspace / "loop").symlink_to("loop")  # an editor may hold a buffer for any path
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=(workspace / "loop" / "x.py").as_uri(), language_id="python", version=1, text=""
            )
        )
    )
    model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})])
    model.reply("read")
    result = await ask(client, prompt="read")
    assert result["toolCalls"][0]["ok"], result["toolCalls"][0]["output"]
    assert "return 1" in tool_results(model)[0]
