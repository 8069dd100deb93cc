"""read_file, write_file, edit_file and glob against real files in a temporary workspace,
called through the real runtime (schema validation included)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tooling.context import ToolContext
from tooling.contract import is_error
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace
from tools import listing
from tools.edit_file import edit_file_tool
from tools.glob import MAX_RESULTS as MAX_GLOB_RESULTS
from tools.glob import glob_tool
from tools.read_file import DEFAULT_LINES, OUTPUT_CHARS, read_file_tool
from tools.textfiles import FileChangedError, atomic_write
from tools.write_file import write_file_tool

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
not_root = pytest.mark.skipif(IS_ROOT, reason="root ignores permission bits")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace folder; its sibling ``outside`` is outside the workspace."""
    # Keep git from discovering a repository above the test folders.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n")
    root = tmp_path / "ws"
    root.mkdir()
    return root


class Agent:
    """The file tools of one workspace as one conversation calls them: every call shares
    the conversation's context (its ledger), as in an ask."""

    def __init__(self, workspace: Workspace) -> None:
        self.runtime = ToolRuntime(
            ToolRegistry(
                factory(workspace)
                for factory in (read_file_tool, write_file_tool, edit_file_tool, glob_tool)
            )
        )
        self.context = ToolContext()

    def describe(self) -> list[dict[str, object]]:
        return self.runtime.describe()

    def is_read_only(self, name: str) -> bool:
        return self.runtime.is_read_only(name)

    async def raw(self, name: str, raw_arguments: str) -> str:
        return await self.runtime.execute(name, raw_arguments, self.context)


@pytest.fixture
def rt(ws: Path) -> Agent:
    return Agent(Workspace(ws))


async def call(rt: Agent, name: str, **arguments: object) -> str:
    return await rt.raw(name, json.dumps(arguments))


async def seen(rt: Agent, path: str) -> None:
    """The agent reads a file the test put there (edits need a read first)."""
    await call(rt, "read_file", path=path)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, stdin=subprocess.DEVNULL
    )


def temp_leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*.tmp")]


# --- declarations -------------------------------------------------------------------


def test_declarations_and_annotations(rt: Agent) -> None:
    described = {t["name"]: t for t in rt.describe()}
    assert set(described) == {"read_file", "write_file", "edit_file", "glob"}
    for tool in described.values():
        assert tool["inputSchema"]["additionalProperties"] is False
        assert tool["title"]
    hints = {n: t["annotations"] for n, t in described.items()}
    assert hints["read_file"]["readOnlyHint"] and hints["glob"]["readOnlyHint"]
    for name in ("write_file", "edit_file"):
        assert not hints[name]["readOnlyHint"] and hints[name]["destructiveHint"]
    assert rt.is_read_only("read_file") and not rt.is_read_only("edit_file")


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("read_file", {"path": "a.txt", "limit": 0}, "'limit' must be >= 1"),
        ("read_file", {"path": "a.txt", "offset": 0}, "'offset' must be >= 1"),
        ("read_file", {}, "missing required field 'path'"),
        ("read_file", {"path": "a.txt", "lines": 3}, "additionalProperties"),
        ("write_file", {"path": "a.txt"}, "missing required field 'content'"),
        ("edit_file", {"path": "a.txt", "old_text": "", "new_text": "x"}, "minLength"),
        ("edit_file", {"path": "a.txt", "old_text": "a", "new_text": 1}, "type"),
        ("glob", {"pattern": "*", "include_ignored": "yes"}, "type"),
    ],
)
async def test_schema_violations_are_errors(
    rt: Agent, ws: Path, name: str, arguments: dict[str, object], expected: str
) -> None:
    (ws / "a.txt").write_text("a\n")
    out = await call(rt, name, **arguments)
    assert is_error(out) and expected in out
    assert (ws / "a.txt").read_text() == "a\n"


# --- read_file ----------------------------------------------------------------------


async def test_read_returns_exact_text_without_notes(rt: Agent, ws: Path) -> None:
    (ws / "a.py").write_text("def f():\n    return 1\n")
    assert await call(rt, "read_file", path="a.py") == "def f():\n    return 1"


async def test_read_pages_with_offset_and_limit(rt: Agent, ws: Path) -> None:
    (ws / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    first = await call(rt, "read_file", path="n.txt", limit=10)
    body, note = first.split("\n\n")
    assert body.splitlines() == [f"line {i}" for i in range(1, 11)]
    assert note == "[lines 1-10 of 100 shown; 90 more lines: continue with offset=11]"

    middle = await call(rt, "read_file", path="n.txt", offset=11, limit=5)
    assert middle.split("\n\n")[0].splitlines() == [f"line {i}" for i in range(11, 16)]
    assert "continue with offset=16" in middle

    last = await call(rt, "read_file", path="n.txt", offset=99, limit=10)
    assert last == "line 99\nline 100\n\n[lines 99-100 of 100 shown; end of file]"

    exact_end = await call(rt, "read_file", path="n.txt", offset=91, limit=10)
    assert "end of file" in exact_end and "continue" not in exact_end

    past = await call(rt, "read_file", path="n.txt", offset=101)
    assert is_error(past) and "past the end" in past and "100 lines" in past


async def test_read_without_limit_is_bounded(rt: Agent, ws: Path) -> None:
    (ws / "many.txt").write_text("".join(f"{i}\n" for i in range(1, 3001)))
    out = await call(rt, "read_file", path="many.txt")
    body, note = out.split("\n\n")
    assert len(body.splitlines()) == DEFAULT_LINES
    assert f"continue with offset={DEFAULT_LINES + 1}" in note and "1,000 more lines" in note

    (ws / "wide.txt").write_text(("y" * 1500 + "\n") * 200)
    wide = await call(rt, "read_file", path="wide.txt")
    assert len(wide) <= OUTPUT_CHARS + 300
    body, note = wide.split("\n\n")
    shown = len(body.splitlines())
    assert 0 < shown < 200
    assert "output limit" in note and f"continue with offset={shown + 1}" in note


async def test_read_truncates_long_lines(rt: Agent, ws: Path) -> None:
    (ws / "min.js").write_text("a" * 10_000 + "\nshort\n" + "é" * 3000 + "\n")
    out = await call(rt, "read_file", path="min.js")
    lines = out.splitlines()
    assert lines[0].startswith("a" * 2000) and "a" * 2001 not in lines[0]
    assert "[line truncated: it is 10,000 bytes long]" in lines[0]
    assert lines[1] == "short"
    # A cut through a multi-byte character is not mistaken for invalid UTF-8.
    assert lines[2].startswith("é" * 2000) and "6,000 bytes" in lines[2]
    assert "not valid UTF-8" not in out


async def test_read_crlf_shows_lf(rt: Agent, ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    assert await call(rt, "read_file", path="w.txt") == "one\ntwo"


async def test_read_refuses_binary(rt: Agent, ws: Path) -> None:
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    out = await call(rt, "read_file", path="img.png")
    assert is_error(out) and "binary" in out and "img.png" in out


async def test_read_non_utf8_decodes_with_replacement(rt: Agent, ws: Path) -> None:
    (ws / "latin1.txt").write_bytes("café\nnaïve\n".encode("latin-1"))
    out = await call(rt, "read_file", path="latin1.txt")
    assert not is_error(out)
    assert out.startswith("caf\ufffd\nna\ufffdve")
    assert "not valid UTF-8" in out and "edit_file" in out


async def test_read_empty_missing_and_folder(rt: Agent, ws: Path) -> None:
    (ws / "empty.txt").write_bytes(b"")
    (ws / "sub").mkdir()
    assert await call(rt, "read_file", path="empty.txt") == "[empty.txt is empty]"
    missing = await call(rt, "read_file", path="nope/x.txt")
    assert is_error(missing) and "not found" in missing and "nope/x.txt" in missing
    folder = await call(rt, "read_file", path="sub")
    assert is_error(folder) and "folder" in folder


async def test_read_refuses_fifo_without_blocking(rt: Agent, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    out = await call(rt, "read_file", path="pipe")
    assert is_error(out) and "not a regular file" in out


@not_root
async def test_read_permission_denied(rt: Agent, ws: Path) -> None:
    (ws / "locked.txt").write_text("x\n")
    (ws / "locked.txt").chmod(0)
    out = await call(rt, "read_file", path="locked.txt")
    assert is_error(out) and "permission denied" in out


def write_numbered_lines(path: Path, count: int) -> None:
    """``count`` lines of 100 bytes: an 8-digit 0-based number, dots, newline."""
    with open(path, "w") as f:
        for start in range(0, count, 10_000):
            f.write("".join(f"{i:08d}{'.' * 91}\n" for i in range(start, start + 10_000)))


async def test_read_large_file_with_limit_reads_a_bounded_part(rt: Agent, ws: Path) -> None:
    write_numbered_lines(ws / "big.log", 500_000)  # 50 MB
    started = time.monotonic()
    out = await call(rt, "read_file", path="big.log", limit=20)
    elapsed = time.monotonic() - started
    body, note = out.split("\n\n")
    assert body.splitlines()[0].startswith("00000000") and len(body.splitlines()) == 20
    assert "more lines follow" in note and "continue with offset=21" in note
    assert elapsed < 5  # generous: only ~8 KB is read

    deep = await call(rt, "read_file", path="big.log", offset=400_001, limit=2)
    assert deep.splitlines()[:2] == [f"{400_000:08d}{'.' * 91}", f"{400_001:08d}{'.' * 91}"]
    # Under 4 MiB left (after line 460,000): the remaining lines are counted exactly.
    near_end = await call(rt, "read_file", path="big.log", offset=470_001, limit=1)
    assert "of 500,000 shown; 29,999 more lines" in near_end


async def test_read_single_huge_line(rt: Agent, ws: Path) -> None:
    (ws / "blob.txt").write_bytes(b"z" * 10_000_000)
    out = await call(rt, "read_file", path="blob.txt")
    assert out.endswith("[line truncated: it is 10,000,000 bytes long]")
    assert len(out) < 2100


# --- escapes (all tools) ------------------------------------------------------------


@pytest.fixture
def links(ws: Path) -> Path:
    """``ws/out_file`` -> outside/secret.txt, ``ws/out_dir`` -> outside/, and inside links."""
    (ws / "out_file").symlink_to(ws.parent / "outside" / "secret.txt")
    (ws / "out_dir").symlink_to(ws.parent / "outside", target_is_directory=True)
    (ws / "real").mkdir()
    (ws / "real" / "inner.txt").write_text("inner\n")
    (ws / "in_file").symlink_to(ws / "real" / "inner.txt")
    (ws / "in_dir").symlink_to(ws / "real", target_is_directory=True)
    return ws


@pytest.mark.parametrize(
    "path",
    ["../outside/secret.txt", "OUTSIDE_ABS", "out_file", "out_dir/secret.txt", "real/../../x"],
)
async def test_every_file_tool_refuses_paths_outside(rt: Agent, links: Path, path: str) -> None:
    secret = links.parent / "outside" / "secret.txt"
    if path == "OUTSIDE_ABS":
        path = str(secret)
    for name, extra in (
        ("read_file", {}),
        ("write_file", {"content": "pwned\n"}),
        ("edit_file", {"old_text": "secret", "new_text": "pwned"}),
    ):
        out = await call(rt, name, path=path, **extra)
        assert is_error(out) and "escapes workspace" in out, (name, out)
        assert "secret" not in out.replace("secret.txt", "")
    assert secret.read_text() == "secret\n"
    assert sorted(p.name for p in secret.parent.iterdir()) == ["secret.txt"]


async def test_symlinks_inside_the_workspace_work(rt: Agent, links: Path) -> None:
    assert await call(rt, "read_file", path="in_file") == "inner"
    assert await call(rt, "read_file", path="in_dir/inner.txt") == "inner"
    out = await call(rt, "edit_file", path="in_file", old_text="inner", new_text="edited")
    assert out == "Replaced 1 occurrence in real/inner.txt at line 1"
    out = await call(rt, "write_file", path="in_file", content="written\n")
    assert out == "Wrote 8 bytes to real/inner.txt"
    assert (links / "in_file").is_symlink()
    assert (links / "real" / "inner.txt").read_text() == "written\n"


async def test_symlink_loops_are_errors_not_crashes(rt: Agent, ws: Path) -> None:
    (ws / "a").symlink_to("b")
    (ws / "b").symlink_to("a")
    (ws / "ok.txt").write_text("ok\n")
    for name, extra in (
        ("read_file", {}),
        ("write_file", {"content": "x"}),
        ("edit_file", {"old_text": "x", "new_text": "y"}),
    ):
        out = await call(rt, name, path="a/file.txt", **extra)
        assert is_error(out) and "loop" in out, (name, out)
    out = await call(rt, "glob", pattern="*", path="a")
    assert is_error(out) and "loop" in out
    assert await glob_lines(rt, "**/*") == ["ok.txt"]


# --- write_file ---------------------------------------------------------------------


async def test_write_creates_nested_folders(rt: Agent, ws: Path) -> None:
    out = await call(rt, "write_file", path="a/b/c/new.txt", content="héllo\n")
    assert out == "Wrote 7 bytes to a/b/c/new.txt"
    assert (ws / "a/b/c/new.txt").read_bytes() == "héllo\n".encode()
    assert temp_leftovers(ws) == []


async def test_write_new_file_gets_umask_mode(rt: Agent, ws: Path) -> None:
    umask = os.umask(0o022)
    try:
        await call(rt, "write_file", path="fresh.txt", content="x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((ws / "fresh.txt").stat().st_mode) == 0o644


async def test_write_overwrites_atomically_keeping_mode(rt: Agent, ws: Path) -> None:
    target = ws / "run.sh"
    target.write_text("old\n")
    await seen(rt, target.name)
    target.chmod(0o750)
    inode = target.stat().st_ino
    out = await call(rt, "write_file", path="run.sh", content="#!/bin/sh\necho new\n")
    assert out == "Wrote 19 bytes to run.sh"
    assert target.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert target.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert sorted(p.name for p in ws.iterdir()) == ["run.sh"]


async def test_write_refuses_folders_and_blocked_parents(rt: Agent, ws: Path) -> None:
    (ws / "dir").mkdir()
    (ws / "file.txt").write_text("keep\n")
    await seen(rt, "file.txt")
    out = await call(rt, "write_file", path="dir", content="x")
    assert is_error(out) and "folder" in out
    out = await call(rt, "write_file", path="file.txt/child.txt", content="x")
    assert is_error(out) and "file.txt is a file" in out
    assert (ws / "file.txt").read_text() == "keep\n"
    assert await call(rt, "write_file", path=".", content="x") == "Error: . is a folder, not a file"
    assert temp_leftovers(ws) == []


async def test_write_and_edit_refuse_unencodable_text(rt: Agent, ws: Path) -> None:
    out = await rt.raw("write_file", '{"path": "s.txt", "content": "bad \\ud800"}')
    assert is_error(out) and "surrogate" in out
    assert not (ws / "s.txt").exists()
    (ws / "e.txt").write_text("good\n")
    await seen(rt, "e.txt")
    raw = '{"path": "e.txt", "old_text": "good", "new_text": "bad \\udc80"}'
    out = await rt.raw("edit_file", raw)
    assert is_error(out) and "surrogate" in out
    assert (ws / "e.txt").read_text() == "good\n"


@not_root
async def test_write_and_edit_refuse_read_only_files(rt: Agent, ws: Path) -> None:
    target = ws / "ro.txt"
    target.write_text("keep\n")
    target.chmod(0o444)
    out = await call(rt, "write_file", path="ro.txt", content="x")
    assert is_error(out) and "not writable" in out
    out = await call(rt, "edit_file", path="ro.txt", old_text="keep", new_text="x")
    assert is_error(out) and "not writable" in out
    assert target.read_text() == "keep\n"


def test_atomic_write_cleans_up_when_it_fails(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("original\n")
    stale = target.stat()
    target.write_text("changed by the editor\n")  # another size: a change whatever the clock
    with pytest.raises(FileChangedError):
        atomic_write(target, b"agent's version\n", expected=stale)
    assert target.read_text() == "changed by the editor\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


# --- edit_file ----------------------------------------------------------------------


async def test_edit_unique_match(rt: Agent, ws: Path) -> None:
    (ws / "m.py").write_text("import os\n\n\ndef f():\n    return 1\n")
    await seen(rt, "m.py")
    (ws / "m.py").chmod(0o640)
    out = await call(rt, "edit_file", path="m.py", old_text="return 1", new_text="return 2")
    assert out == "Replaced 1 occurrence in m.py at line 5"
    assert (ws / "m.py").read_text() == "import os\n\n\ndef f():\n    return 2\n"
    assert stat.S_IMODE((ws / "m.py").stat().st_mode) == 0o640
    assert temp_leftovers(ws) == []


async def test_edit_zero_matches_explains(rt: Agent, ws: Path) -> None:
    original = "def f():\n    return 1\n\nclass Thing:\n    pass\n"
    (ws / "m.py").write_text(original)
    await seen(rt, "m.py")
    out = await call(rt, "edit_file", path="m.py", old_text="nothing like it", new_text="x")
    assert is_error(out) and "0 matches" in out and "m.py" in out
    out = await call(rt, "edit_file", path="m.py", old_text="def f():\n  return 1", new_text="x")
    assert is_error(out) and "whitespace" in out and "line 1" in out
    out = await call(rt, "edit_file", path="m.py", old_text="class thing:", new_text="x")
    assert is_error(out) and "letter case" in out and "line 4" in out
    assert (ws / "m.py").read_text() == original


async def test_edit_many_matches_and_replace_all(rt: Agent, ws: Path) -> None:
    (ws / "c.txt").write_text("x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n")
    await seen(rt, "c.txt")
    out = await call(rt, "edit_file", path="c.txt", old_text="x = 1", new_text="x = 9")
    assert is_error(out) and "occurs 3 times" in out and "lines 1, 3, 5" in out
    assert "replace_all" in out
    assert (ws / "c.txt").read_text() == "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n"

    out = await call(
        rt, "edit_file", path="c.txt", old_text="x = 1", new_text="x = 9\n# two", replace_all=True
    )
    # Line numbers are those of the updated file.
    assert out == "Replaced 3 occurrences in c.txt at lines 1, 4, 7"
    assert (ws / "c.txt").read_text() == "x = 9\n# two\ny = 2\nx = 9\n# two\nz = 3\nx = 9\n# two\n"


async def test_edit_overlapping_occurrences_are_ambiguous(rt: Agent, ws: Path) -> None:
    (ws / "o.txt").write_text("aaa\n")
    await seen(rt, "o.txt")
    out = await call(rt, "edit_file", path="o.txt", old_text="aa", new_text="b")
    assert is_error(out) and "occurs 2 times" in out
    out = await call(rt, "edit_file", path="o.txt", old_text="aa", new_text="b", replace_all=True)
    assert out == "Replaced 1 occurrence in o.txt at line 1"
    assert (ws / "o.txt").read_text() == "ba\n"


async def test_edit_preserves_crlf(rt: Agent, ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"first\r\nsecond\r\nthird\r\n")
    await seen(rt, "win.txt")
    out = await call(
        rt, "edit_file", path="win.txt", old_text="first\nsecond\n", new_text="one\ntwo\nmore\n"
    )
    assert out == "Replaced 1 occurrence in win.txt at line 1"
    assert (ws / "win.txt").read_bytes() == b"one\r\ntwo\r\nmore\r\nthird\r\n"
    # A single-line edit inserting newlines takes the file's style too.
    await call(rt, "edit_file", path="win.txt", old_text="third", new_text="3\n3b")
    assert (ws / "win.txt").read_bytes() == b"one\r\ntwo\r\nmore\r\n3\r\n3b\r\n"


async def test_edit_keeps_lf_files_lf_and_mixed_files_mixed(rt: Agent, ws: Path) -> None:
    (ws / "unix.txt").write_bytes(b"a\nb\n")
    await seen(rt, "unix.txt")
    await call(rt, "edit_file", path="unix.txt", old_text="a\r\nb", new_text="A\r\nB")
    assert (ws / "unix.txt").read_bytes() == b"A\nB\n"

    (ws / "mixed.txt").write_bytes(b"l1\nl2\r\nl3\r\nl4\n")
    await seen(rt, "mixed.txt")
    await call(rt, "edit_file", path="mixed.txt", old_text="l2\nl3", new_text="L2\nL3")
    assert (ws / "mixed.txt").read_bytes() == b"l1\nL2\r\nL3\r\nl4\n"


async def test_edit_refuses_no_op(rt: Agent, ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"a\r\nb\r\n")
    await seen(rt, "w.txt")
    out = await call(rt, "edit_file", path="w.txt", old_text="a", new_text="a")
    assert is_error(out) and "identical" in out
    out = await call(rt, "edit_file", path="w.txt", old_text="a\nb", new_text="a\r\nb")
    assert is_error(out) and "identical" in out
    assert (ws / "w.txt").read_bytes() == b"a\r\nb\r\n"


async def test_edit_refuses_binary_non_utf8_missing_and_folder(rt: Agent, ws: Path) -> None:
    (ws / "b.bin").write_bytes(b"abc\x00def")
    await seen(rt, "b.bin")
    (ws / "l.txt").write_bytes("line\nnaïve\n".encode("latin-1"))
    await seen(rt, "l.txt")
    (ws / "d").mkdir()
    out = await call(rt, "edit_file", path="b.bin", old_text="abc", new_text="x")
    assert is_error(out) and "binary" in out
    out = await call(rt, "edit_file", path="l.txt", old_text="line", new_text="x")
    assert is_error(out) and "not valid UTF-8" in out and "line 2" in out
    out = await call(rt, "edit_file", path="gone.txt", old_text="a", new_text="b")
    assert is_error(out) and "not found" in out and "write_file" in out
    out = await call(rt, "edit_file", path="d", old_text="a", new_text="b")
    assert is_error(out) and "folder" in out
    assert (ws / "b.bin").read_bytes() == b"abc\x00def"
    assert (ws / "l.txt").read_bytes() == "line\nnaïve\n".encode("latin-1")


async def test_edit_keeps_bom_and_unicode(rt: Agent, ws: Path) -> None:
    (ws / "u.txt").write_bytes("\ufeffπ = 3.14\n名前 = 'x'\n".encode())
    await seen(rt, "u.txt")
    out = await call(rt, "edit_file", path="u.txt", old_text="名前 = 'x'", new_text="名前 = 'y'")
    assert out == "Replaced 1 occurrence in u.txt at line 2"
    assert (ws / "u.txt").read_bytes() == "\ufeffπ = 3.14\n名前 = 'y'\n".encode()


# --- glob ---------------------------------------------------------------------------


def make_tree(ws: Path, files: list[str]) -> None:
    for name in files:
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)


async def glob_lines(rt: Agent, pattern: str, **extra: object) -> list[str]:
    out = await call(rt, "glob", pattern=pattern, **extra)
    assert not is_error(out), out
    return [] if out.startswith("No files match") else out.splitlines()


async def test_glob_pattern_semantics(rt: Agent, ws: Path) -> None:
    make_tree(
        ws,
        [
            "top.py",
            "B.py",
            ".hidden.py",
            "README.md",
            "src/a.py",
            "src/b.ts",
            "src/c.tsx",
            "src/deep/x/d.py",
            "src/deep/e1.txt",
            "src/deep/e2.txt",
            "docs/a.py",
        ],
    )
    assert await glob_lines(rt, "*.py") == [".hidden.py", "B.py", "top.py"]
    assert await glob_lines(rt, "**/*.py") == [
        ".hidden.py",
        "B.py",
        "docs/a.py",
        "src/a.py",
        "src/deep/x/d.py",
        "top.py",
    ]
    assert await glob_lines(rt, "src/**") == [
        "src/a.py",
        "src/b.ts",
        "src/c.tsx",
        "src/deep/e1.txt",
        "src/deep/e2.txt",
        "src/deep/x/d.py",
    ]
    assert await glob_lines(rt, "src/*.{ts,tsx}") == ["src/b.ts", "src/c.tsx"]
    assert await glob_lines(rt, "src/*.{t{s,sx},py}") == ["src/a.py", "src/b.ts", "src/c.tsx"]
    assert await glob_lines(rt, "{docs,src}/a.py") == ["docs/a.py", "src/a.py"]
    assert await glob_lines(rt, "src/deep/e?.txt") == ["src/deep/e1.txt", "src/deep/e2.txt"]
    assert await glob_lines(rt, "src/deep/e[!1].txt") == ["src/deep/e2.txt"]
    assert await glob_lines(rt, "*/a.py") == ["docs/a.py", "src/a.py"]
    assert await glob_lines(rt, "src/**/x/*.py") == ["src/deep/x/d.py"]
    assert await glob_lines(rt, "./src/../README.md") == ["README.md"]
    assert await glob_lines(rt, "src") == []  # folders are not listed
    assert await glob_lines(rt, "*.py", path="src") == ["src/a.py"]
    assert await glob_lines(rt, "../docs/*.py", path="src") == ["docs/a.py"]
    none = await call(rt, "glob", pattern="**/*.rs")
    assert none.startswith("No files match '**/*.rs' in .") and not is_error(none)


async def test_glob_refuses_bad_patterns_and_paths(rt: Agent, links: Path) -> None:
    cases = [
        ({"pattern": "../*"}, "outside the workspace"),
        ({"pattern": "../outside/*"}, "outside the workspace"),
        ({"pattern": "/etc/*"}, "not absolute"),
        ({"pattern": str(links / "*")}, "not absolute"),
        ({"pattern": "*/../../*"}, "'..'"),
        ({"pattern": "out_dir/*"}, "outside the workspace"),
        ({"pattern": "*", "path": ".."}, "escapes workspace"),
        ({"pattern": "*", "path": "/etc"}, "escapes workspace"),
        ({"pattern": "*", "path": "out_dir"}, "escapes workspace"),
        ({"pattern": "*", "path": "real/inner.txt"}, "not a folder"),
        ({"pattern": "*", "path": "missing"}, "not found"),
        ({"pattern": "."}, "names no files"),
        ({"pattern": "{..,real}/*"}, "'..'"),
        ({"pattern": "[z-a]*"}, "invalid pattern"),
    ]
    for arguments, expected in cases:
        out = await call(rt, "glob", **arguments)
        assert is_error(out) and expected in out, (arguments, out)
        assert "secret" not in out


async def test_glob_does_not_follow_links_outside(rt: Agent, links: Path) -> None:
    found = await glob_lines(rt, "**/*")
    assert "real/inner.txt" in found and "in_file" in found
    assert not any(p.startswith(("out_dir", "out_file", "in_dir")) for p in found)
    assert "secret.txt" not in "\n".join(found)
    found = await glob_lines(rt, "**/*", include_ignored=True)
    assert not any(p.startswith(("out_dir", "out_file")) for p in found)


@needs_git
async def test_glob_in_git_repo_skips_git_and_ignored(rt: Agent, links: Path) -> None:
    ws = links
    git(ws, "init", "-q")
    make_tree(
        ws,
        [
            ".gitignore",
            "app.py",
            "tracked.py",
            "build/out.py",
            "logs/a.log",
            "pkg/mod.py",
            ".venv/lib/site.py",
            "pkg/keep.log",
        ],
    )
    (ws / ".gitignore").write_text(".venv/\nbuild/\n*.log\n!keep.log\n")
    git(ws, "add", "tracked.py", "pkg/mod.py")
    make_tree(ws, ["deleted.py"])
    git(ws, "add", "deleted.py")
    (ws / "deleted.py").unlink()

    found = await glob_lines(rt, "**/*")
    assert found == [
        ".gitignore",
        "app.py",
        "in_file",
        "pkg/keep.log",
        "pkg/mod.py",
        "real/inner.txt",
        "tracked.py",
    ]
    every = await glob_lines(rt, "**/*", include_ignored=True)
    assert {"build/out.py", "logs/a.log", ".venv/lib/site.py"} <= set(every)
    assert any(p.startswith(".git/") for p in every)
    assert await glob_lines(rt, ".venv/**/*.py") == []
    assert await glob_lines(rt, ".venv/**/*.py", include_ignored=True) == [".venv/lib/site.py"]
    assert await glob_lines(rt, "*.py", path="pkg") == ["pkg/mod.py"]
    assert await glob_lines(rt, ".git/*") == []


@needs_git
async def test_glob_lists_untracked_nested_repositories(rt: Agent, ws: Path) -> None:
    git(ws, "init", "-q")
    make_tree(
        ws, ["main.py", "vendor/lib/.gitignore", "vendor/lib/src/x.py", "vendor/lib/gen/y.py"]
    )
    (ws / "vendor/lib/.gitignore").write_text("gen/\n")
    git(ws / "vendor/lib", "init", "-q")
    assert await glob_lines(rt, "**/*.py") == ["main.py", "vendor/lib/src/x.py"]


@needs_git
async def test_glob_in_a_workspace_ignored_by_an_enclosing_repo(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    make_tree(outer, [".gitignore", "ws/a.py", "ws/sub/b.py", "ws/skip/c.py", "ws/.gitignore"])
    (outer / ".gitignore").write_text("ws/\n")
    (outer / "ws/.gitignore").write_text("skip/\n")
    git(outer, "init", "-q")
    assert await glob_lines(Agent(Workspace(outer / "ws")), "**/*.py") == ["a.py", "sub/b.py"]


async def test_glob_without_git_uses_gitignore_files(
    rt: Agent, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(
        ws,
        [
            ".gitignore",
            "a.py",
            "notes.tmp",
            "pkg/.gitignore",
            "pkg/b.py",
            "pkg/gen.py",
            "pkg/keep.tmp",
            "node_modules/x/y.py",
            ".git/hooks/h.py",
        ],
    )
    for i in range(30):
        make_tree(ws, [f"node_modules/dep{i}/index.py"])
    (ws / ".gitignore").write_text("*.tmp\nnode_modules/\n")
    (ws / "pkg/.gitignore").write_text("gen.py\n!keep.tmp\n")

    visited: list[str] = []
    real_scandir = os.scandir

    def spying_scandir(path):  # type: ignore[no-untyped-def]
        visited.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(listing.os, "scandir", spying_scandir)
    found = await glob_lines(rt, "**/*")
    assert found == [".gitignore", "a.py", "pkg/.gitignore", "pkg/b.py", "pkg/keep.tmp"]
    assert not any("node_modules" in v or ".git" in v for v in visited)  # never entered

    every = await glob_lines(rt, "**/*.py", include_ignored=True)
    assert {"pkg/gen.py", "node_modules/x/y.py", ".git/hooks/h.py"} <= set(every)
    assert await glob_lines(rt, "*.py", path="node_modules/x") == []


async def test_glob_caps_results_with_a_count(rt: Agent, ws: Path) -> None:
    make_tree(ws, [f"f/{i:04d}.txt" for i in range(250)])
    out = await call(rt, "glob", pattern="f/*.txt")
    lines = out.splitlines()
    assert len(lines) == MAX_GLOB_RESULTS + 1
    assert lines[0] == "f/0000.txt" and lines[MAX_GLOB_RESULTS - 1] == "f/0199.txt"
    assert lines[-1] == (
        "[200 files shown, sorted by path; 50 more matches not shown: narrow the pattern or path]"
    )
