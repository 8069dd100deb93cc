"""Stale-edit protection: a write replaces only what this conversation was shown.

Real files in a temporary workspace, through the real runtime. Where a race has to
land at an exact moment (another process saving while the agent's write is in
flight), the test makes the other process's write from inside the lowest seam the
tools call (``os.open``, ``os.fsync``), so the moment is certain, not likely.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tooling.context import ToolContext
from tooling.contract import is_error
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace
from tools.edit_file import edit_file_tool
from tools.read_file import read_file_tool
from tools.write_file import write_file_tool


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def rt(ws: Path) -> ToolRuntime:
    workspace = Workspace(ws)
    return ToolRuntime(
        ToolRegistry(f(workspace) for f in (read_file_tool, write_file_tool, edit_file_tool))
    )


class Conversation:
    """One conversation's tool calls: they share one context (its ledger), as in an ask."""

    def __init__(self, rt: ToolRuntime) -> None:
        self.rt = rt
        self.context = ToolContext()

    async def __call__(self, name: str, **arguments: object) -> str:
        return await self.rt.execute(name, json.dumps(arguments), self.context)


@pytest.fixture
def agent(rt: ToolRuntime) -> Conversation:
    return Conversation(rt)


def temp_leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*.tmp")]


def rewrite_in_place_keeping_stat(path: Path, new: bytes) -> None:
    """Change a file's bytes without changing its inode, size or mtime: what a same-size
    write within one tick of a coarse mtime clock looks like to ``stat``."""
    before = path.stat()
    assert len(new) == before.st_size
    with open(path, "r+b") as f:
        f.write(new)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


# --- write_file over an existing file -------------------------------------------------


async def test_write_file_over_a_file_never_read_fails_closed(rt: ToolRuntime, ws: Path) -> None:
    (ws / "notes.txt").write_text("the user's notes\n")
    args = json.dumps({"path": "notes.txt", "content": "overwritten\n"})
    for context in (ToolContext(), None):  # a fresh context, or none at all
        out = await rt.execute("write_file", args, context)
        assert is_error(out) and "has not been read in this conversation" in out
        assert "read_file" in out  # the refusal says what to do
    assert (ws / "notes.txt").read_text() == "the user's notes\n"
    # A new file needs no read.
    created = await rt.execute("write_file", json.dumps({"path": "new.txt", "content": "x"}))
    assert created == "Wrote 1 bytes to new.txt"


async def test_write_file_over_a_file_changed_since_the_read_is_refused(
    agent: Conversation, ws: Path
) -> None:
    target = ws / "notes.txt"
    target.write_text("v1\n")
    await agent("read_file", path="notes.txt")
    target.write_text("v2, saved by the user\n")
    out = await agent("write_file", path="notes.txt", content="agent\n")
    assert is_error(out) and "changed since you last read it" in out and "read it again" in out
    assert target.read_text() == "v2, saved by the user\n"
    await agent("read_file", path="notes.txt")
    assert await agent("write_file", path="notes.txt", content="agent\n") == (
        "Wrote 6 bytes to notes.txt"
    )


def save_during_the_write(
    monkeypatch: pytest.MonkeyPatch, target: Path, saved: bytes
) -> Callable[[], int]:
    """Make "the editor" save ``target`` while the agent's temporary file is being
    synced, i.e. after any check a tool made before starting to write and before its
    rename. Returns how many times that happened."""
    real_fsync = os.fsync
    saves = 0

    def fsync(fd: int) -> None:
        nonlocal saves
        real_fsync(fd)
        name = os.readlink(f"/proc/self/fd/{fd}")
        if name.startswith(str(target.parent / f".{target.name}.")) and name.endswith(".tmp"):
            saves += 1
            target.write_bytes(saved)

    monkeypatch.setattr(os, "fsync", fsync)
    return lambda: saves


@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
async def test_a_save_landing_during_the_write_is_not_overwritten(
    agent: Conversation, ws: Path, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    target = ws / "app.py"
    target.write_text("x = 1\n")
    await agent("read_file", path="app.py")
    saves = save_during_the_write(monkeypatch, target, b"x = 1\ny = 2  # saved by the user\n")
    if tool == "write_file":
        out = await agent("write_file", path="app.py", content="x = 3\n")
    else:
        out = await agent("edit_file", path="app.py", old_text="x = 1", new_text="x = 3")
    assert saves() == 1
    assert is_error(out) and "changed" in out and "read it again" in out.lower()
    assert target.read_text() == "x = 1\ny = 2  # saved by the user\n"
    assert temp_leftovers(ws) == []


async def test_a_file_created_during_write_file_is_not_overwritten(
    agent: Conversation, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = ws / "new.py"
    saves = save_during_the_write(monkeypatch, target, b"# the user's new file\n")
    out = await agent("write_file", path="new.py", content="# the agent's\n")
    assert saves() == 1
    assert is_error(out) and "read it" in out.lower()
    assert target.read_text() == "# the user's new file\n"
    assert temp_leftovers(ws) == []


# --- what a read records ------------------------------------------------------------


async def test_read_file_opens_the_file_once_and_records_what_it_showed(
    agent: Conversation, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write landing after the bytes were shown but before a fingerprint was taken
    (a second open and hash of the file) must not authorise overwriting it."""
    target = ws / "config.toml"
    target.write_text("a = 1\n")
    real_open = os.open
    opens = 0

    def spying_open(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal opens
        if Path(path) == target:
            opens += 1
            if opens == 2:  # the user saves between the read and any later look
                target.write_text("a = 1\nb = 2  # the user's\n")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spying_open)
    shown = await agent("read_file", path="config.toml")
    monkeypatch.setattr(os, "open", real_open)
    assert shown == "a = 1"
    # Whatever happened after the read, the agent's write replaces only what it saw.
    out = await agent("write_file", path="config.toml", content="a = 2\n")
    if opens >= 2:  # the user's save happened: it must survive
        assert is_error(out), out
        assert target.read_text() == "a = 1\nb = 2  # the user's\n"
    assert opens == 1  # and there was no second look to race with


async def test_a_windowed_read_does_not_hash_the_whole_file(agent: Conversation, ws: Path) -> None:
    target = ws / "big.log"
    target.write_bytes(b"".join(b"%08d %s\n" % (i, b"." * 90) for i in range(400_000)))  # 40 MB

    def bytes_read() -> int:
        io = Path("/proc/self/io").read_text()
        return int(next(ln.split()[1] for ln in io.splitlines() if ln.startswith("rchar:")))

    before = bytes_read()
    out = await agent("read_file", path="big.log", limit=20)
    read = bytes_read() - before
    assert out.startswith("00000000 ")
    assert read < 2 * 1024 * 1024, f"read {read:,} bytes for 20 lines"


async def test_a_same_size_change_with_the_same_mtime_is_caught_by_the_digest(
    agent: Conversation, ws: Path
) -> None:
    whole, window = ws / "whole.txt", ws / "window.txt"
    whole.write_bytes(b"alpha\nbeta\n")
    window.write_bytes(b"one\ntwo\nthree\n")
    await agent("read_file", path="whole.txt")
    await agent("read_file", path="window.txt", limit=2)
    rewrite_in_place_keeping_stat(whole, b"alpha\nBETA\n")
    rewrite_in_place_keeping_stat(window, b"ONE\ntwo\nthree\n")  # inside the shown lines
    for path in ("whole.txt", "window.txt"):
        out = await agent("write_file", path=path, content="agent\n")
        assert is_error(out) and "changed since you last read it" in out, path
    assert whole.read_bytes() == b"alpha\nBETA\n"
    assert window.read_bytes() == b"ONE\ntwo\nthree\n"


async def test_a_touch_keeps_a_whole_read_valid_but_not_a_window(
    agent: Conversation, ws: Path
) -> None:
    (ws / "whole.txt").write_text("a\nb\n")
    (ws / "part.txt").write_text("a\nb\nc\n")
    await agent("read_file", path="whole.txt")
    await agent("read_file", path="part.txt", limit=1)
    for name in ("whole.txt", "part.txt"):
        st = (ws / name).stat()
        os.utime(ws / name, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    # The whole content was shown, and it is the same: the write is not blind.
    assert await agent("write_file", path="whole.txt", content="new\n") == (
        "Wrote 4 bytes to whole.txt"
    )
    # Only line 1 was shown; the file changed (mtime), so the rest may have too.
    out = await agent("write_file", path="part.txt", content="new\n")
    assert is_error(out) and "changed since you last read it" in out
    assert (ws / "part.txt").read_text() == "a\nb\nc\n"


async def test_the_agents_own_write_counts_as_seen(agent: Conversation, ws: Path) -> None:
    assert not is_error(await agent("write_file", path="m.py", content="x = 1\n"))
    out = await agent("edit_file", path="m.py", old_text="x = 1", new_text="x = 2")
    assert out == "Replaced 1 occurrence in m.py at line 1"
    assert await agent("write_file", path="m.py", content="x = 3\n") == "Wrote 6 bytes to m.py"
    (ws / "m.py").write_text("x = 3\n# the user's line\n")
    out = await agent("edit_file", path="m.py", old_text="x = 3", new_text="x = 4")
    assert is_error(out) and "changed since you last read it" in out
