"""Asking about what the user is looking at: ``agent/ask`` with ``context``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from server.conversations.editor_context import ATTACHED_CHARS, FILE_CHARS, SELECTION_CHARS
from tests.support.editor import EDITOR_CAPABILITIES, TestEditor, make_editor_client
from tests.support.lsp_client import AgentTestClient, agent_session, ask, server_env
from tests.support.model_server import ScriptedModel

SOURCE = "import os\n\n\ndef main():\n    return 1  # 😀 wide\n\n\nprint(main())\n"


@pytest.fixture
def workspace(workspace: Path) -> Path:
    (workspace / "app.py").write_text(SOURCE)
    (workspace / "other.py").write_text("x = 1\n")
    return workspace


@pytest.fixture
async def client(model: ScriptedModel, workspace: Path) -> AsyncIterator[AgentTestClient]:
    async with agent_session(
        server_env(model.base_url),
        [workspace],
        capabilities=EDITOR_CAPABILITIES,
        client_factory=make_editor_client,
    ) as client:
        yield client


def selection(start: tuple[int, int], end: tuple[int, int]) -> dict[str, object]:
    return {
        "start": {"line": start[0], "character": start[1]},
        "end": {"line": end[0], "character": end[1]},
    }


def sent_prompt(model: ScriptedModel) -> str:
    return str(model.bodies[-1]["messages"][-1]["content"])


async def test_the_selection_of_an_unsaved_buffer_reaches_the_model(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    editor: TestEditor = client.editor  # type: ignore[attr-defined]
    buffer = editor.open(workspace / "app.py")
    editor.type(buffer, "return 1", "return 2")  # typed, not saved
    model.reply("It returns 2.")
    uri = (workspace / "app.py").resolve().as_uri()
    # Lines 4-5 (0-based 3-4), ending after the emoji (UTF-16: it counts 2).
    result = await ask(
        client,
        prompt="explain this",
        context={
            "activeDocument": {"uri": uri, "selection": selection((3, 0), (4, 25))},
            "documents": [(workspace / "other.py").as_uri()],
        },
    )
    assert result["answer"] == "It returns 2."
    content = sent_prompt(model)
    assert content.startswith("explain this\n\n[Editor context]\n")
    assert "app.py (unsaved changes in the editor), with lines 4-5 selected:" in content
    assert "```\ndef main():\n    return 2  # 😀 wide\n```" in content
    assert "The user also points at: other.py." in content
    # The file pointed at is attached, its content as the user sees it.
    assert "Attached: other.py (as the user sees it):\n```\nx = 1\n\n```" in content
    assert "Attached: app.py" not in content  # its selection is quoted instead
    # The conversation is listed and redrawn by its prompt, not the note.
    history = await client.protocol.send_request_async(
        "agent/sessionHistory", {"sessionId": result["sessionId"]}
    )
    assert history["entries"][0] == {"role": "user", "content": "explain this"}
    listed = await client.protocol.send_request_async("agent/sessions", {})
    assert listed["sessions"][0]["title"] == "explain this"


async def test_a_cursor_and_a_long_selection(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    uri = (workspace / "app.py").as_uri()
    model.reply("ok")
    await ask(
        client,
        prompt="here",
        context={"activeDocument": {"uri": uri, "selection": selection((3, 2), (3, 2))}},
    )
    assert sent_prompt(model).endswith("shows app.py, cursor on line 4.")

    (workspace / "big.txt").write_text("y" * (SELECTION_CHARS + 500) + "\n")
    model.reply("ok")
    await ask(
        client,
        prompt="big",
        context={
            "activeDocument": {
                "uri": (workspace / "big.txt").as_uri(),
                "selection": selection((0, 0), (1, 0)),
            }
        },
    )
    content = sent_prompt(model)
    assert "with line 1 selected" in content
    assert (
        f"cut to its first {SELECTION_CHARS:,} of {SELECTION_CHARS + 501:,} characters" in content
    )
    assert "y" * (SELECTION_CHARS + 1) not in content


async def test_the_files_pointed_at_are_attached_within_a_budget(
    client: AgentTestClient, model: ScriptedModel, workspace: Path
) -> None:
    editor: TestEditor = client.editor  # type: ignore[attr-defined]
    buffer = editor.open(workspace / "app.py")
    editor.type(buffer, "return 1", "return 3")  # the active file's chip, unsaved
    big = [workspace / f"big{i}.txt" for i in range(4)]
    for i, path in enumerate(big):
        path.write_text(f"{i}" * (FILE_CHARS + 100))
    (workspace / "blob.bin").write_bytes(b"\x00\x01binary")
    model.reply("ok")
    await ask(
        client,
        prompt="look",
        context={
            "activeDocument": {"uri": (workspace / "app.py").as_uri()},
            "documents": [p.as_uri() for p in (workspace / "app.py", *big)]
            + [(workspace / "blob.bin").as_uri()],
        },
    )
    content = sent_prompt(model)
    assert content.startswith("look\n\n[Editor context]\nThe user's active editor shows app.py")
    # The active file once (also pointed at), with what the editor has, not the disk.
    assert content.count("Attached: app.py") == 1
    assert "Attached: app.py (as the user sees it, unsaved changes included):" in content
    assert "    return 3  # 😀 wide" in content
    # Each file cut at FILE_CHARS, saying so; all of them within ATTACHED_CHARS.
    assert "0" * FILE_CHARS in content and "0" * (FILE_CHARS + 1) not in content
    assert f"[cut to its first {FILE_CHARS:,} of {FILE_CHARS + 100:,} characters" in content
    assert content.count("Attached:") == 5  # app.py and big0-3 (big3 only partly)
    note = content.split("[Editor context]\n", 1)[1]
    assert len(note) < ATTACHED_CHARS + 2_000
    assert "blob.bin is not attached (a binary file)." in content


@pytest.mark.parametrize(
    ("context", "field"),
    [
        ({"activeDocument": {"uri": "file:///etc/passwd"}}, "context.activeDocument.uri"),
        ({"documents": ["file:///etc/hosts"]}, "context.documents[0]"),
        (
            {
                "activeDocument": {
                    "uri": "file:///x",
                    "selection": {
                        "start": {"line": "1", "character": 0},
                        "end": {"line": 1, "character": 0},
                    },
                }
            },
            "context.activeDocument.selection.start.line",
        ),
    ],
)
async def test_a_context_outside_the_workspace_is_refused(
    client: AgentTestClient, model: ScriptedModel, context: dict[str, object], field: str
) -> None:
    with pytest.raises(JsonRpcException) as caught:
        await ask(client, prompt="what is this", context=context)
    assert caught.value.code == -32602
    assert caught.value.data == {"field": field}
    assert model.bodies == []  # nothing was sent to the model
