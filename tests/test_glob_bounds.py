"""glob does bounded work whatever the pattern, the tree or git do, and says when it
could not look everywhere."""

from __future__ import annotations

import asyncio
import errno
import fnmatch
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.support.procs import pids_with, unique_tag, wait_until
from tooling.context import ToolContext
from tooling.contract import is_error
from tooling.registry import ToolRegistry
from tooling.runtime import ToolRuntime
from tooling.workspace import Workspace
from tools.glob import glob_tool
from tools.globbing import Matcher, expand_braces


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    root = tmp_path / "ws"
    root.mkdir()
    return root


def make_tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)


async def glob(ws: Path, context: ToolContext | None = None, **arguments: object) -> str:
    options = arguments.pop("options", {})
    assert isinstance(options, dict)
    rt = ToolRuntime(ToolRegistry([glob_tool(Workspace(ws), **options)]))
    return await rt.execute("glob", json.dumps(arguments), context)


# --- matching is linear in the name -------------------------------------------------


def matcher(pattern: str) -> Matcher:
    return Matcher(pattern.split("/"))


@pytest.mark.parametrize(
    ("pattern", "name"),
    [
        ("*a*a*a*a*a*a*b", "a" * 5000),
        ("*a*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 5000),
        ("*?*?*?*?*?*?*?*?*[b]", "a" * 5000),
        ("**/a*/**/a*/**/a*/**/a*/**/b", "/".join(["a"] * 400) + "/c"),
        ("**/*a*a*a*/**/*a*a*a*/**/*b", "/".join(["a" * 50] * 60)),
        ("{*a*a*a*a*b,*a*a*a*a*c,**/*a*a*a*a*d}", "a" * 5000),
    ],
)
def test_no_pattern_makes_matching_super_linear(pattern: str, name: str) -> None:
    compiled = matcher(pattern)
    started = time.perf_counter()
    for _ in range(20):
        assert not compiled.matches(name)
    # A backtracking translation takes hours here; a linear matcher microseconds.
    assert time.perf_counter() - started < 2.0


def reference_matches(pattern: str, path: str) -> bool:
    """Glob semantics written out naively (exponential; fine for tiny inputs)."""

    def segments(p: list[str], s: list[str]) -> bool:
        if not p:
            return not s
        if p[0] == "**":
            if len(p) == 1:
                return len(s) >= 1  # a trailing ** matches one or more names below
            return any(segments(p[1:], s[i:]) for i in range(len(s) + 1))
        return bool(s) and fnmatch.fnmatchcase(s[0], p[0]) and segments(p[1:], s[1:])

    return any(
        segments([x for x in alt.split("/") if x not in ("", ".")], path.split("/"))
        for alt in expand_braces(pattern)
    )


def test_matching_agrees_with_the_naive_semantics() -> None:
    rng = random.Random(20261130)
    pieces = ["a", "b", "ab", "*", "?", "[ab]", "[!a]", "*a", "b*"]
    for _ in range(4000):
        segs = []
        for _ in range(rng.randint(1, 4)):
            if rng.random() < 0.25:
                segs.append("**")
            else:
                segs.append("".join(rng.choice(pieces) for _ in range(rng.randint(1, 4))))
        pattern = "/".join(segs)
        if rng.random() < 0.2:
            pattern = "{" + pattern + "," + rng.choice(["a*", "**/b", "?"]) + "}"
        path = "/".join(
            "".join(rng.choice("ab") for _ in range(rng.randint(1, 5)))
            for _ in range(rng.randint(1, 4))
        )
        assert matcher(pattern).matches(path) == reference_matches(pattern, path), (pattern, path)


async def test_a_pathological_pattern_on_long_names_returns_quickly(ws: Path) -> None:
    make_tree(ws, [f"{'a' * 200}{i}" for i in range(50)] + ["xaaaaaab"])
    started = time.perf_counter()
    out = await glob(ws, pattern="*a*a*a*a*a*a*b")
    assert out == "xaaaaaab"
    assert time.perf_counter() - started < 5.0


def test_patterns_are_bounded_in_length() -> None:
    with pytest.raises(ValueError, match="longer than"):
        matcher("{" * 3000 + "a" + "}" * 3000)


# --- git that does not answer -------------------------------------------------------


@pytest.fixture
def hanging_git(tmp_path: Path) -> tuple[str, str]:
    """A ``git`` that never answers (and leaves a child holding its pipe), and its tag.
    Given to the tool explicitly: one in a temp dir on PATH would never be chosen."""
    tag = unique_tag()
    fake = tmp_path / f"bin-{tag}"
    fake.mkdir()
    script = fake / "git"
    script.write_text(
        f"#!/bin/sh\n{sys.executable} -c 'import time; time.sleep(600)' {tag} &\nwait\n"
    )
    script.chmod(0o755)
    return str(script), tag


async def test_a_git_that_hangs_falls_back_to_the_walk(
    ws: Path, hanging_git: tuple[str, str]
) -> None:
    script, tag = hanging_git
    make_tree(ws, ["a.py", "pkg/b.py", "notes.md"])
    (ws / ".git").mkdir()  # looks like a repository: git is asked first
    started = time.monotonic()
    out = await glob(ws, pattern="**/*.py", options={"git_timeout": 0.5, "git": script})
    elapsed = time.monotonic() - started
    assert out.splitlines() == ["a.py", "pkg/b.py"]
    assert elapsed < 5
    # Nothing git started is left running.
    assert wait_until(lambda: not pids_with(tag), timeout=5)


# --- time budget and cancellation -----------------------------------------------------


async def test_a_walk_over_budget_returns_what_it_found_and_says_so(ws: Path) -> None:
    make_tree(ws, [f"d{i:02d}/f.txt" for i in range(40)])
    out = await glob(ws, pattern="**/*.txt", options={"time_budget": 0.0})
    assert not is_error(out)
    lines = out.splitlines()
    assert "stopped after" in lines[-1] and "partial" in lines[-1]
    assert len(lines) - 1 < 40


async def test_cancelling_a_glob_stops_its_walk(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folders = 400
    make_tree(ws, [f"d{i:03d}/f.txt" for i in range(folders)])
    real_scandir = os.scandir
    scanned = 0

    def slow_scandir(path):  # type: ignore[no-untyped-def]
        nonlocal scanned
        scanned += 1
        time.sleep(0.005)  # a slow disk
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", slow_scandir)
    context = ToolContext()
    task = asyncio.ensure_future(glob(ws, context, pattern="**/*.txt", include_ignored=True))
    assert await asyncio.to_thread(wait_until, lambda: scanned > 5, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert context.cancelled.is_set()

    def settled() -> bool:
        before = scanned
        time.sleep(0.05)
        return scanned == before

    assert await asyncio.to_thread(wait_until, settled, 5)
    assert scanned < folders / 2


# --- what the environment refuses ---------------------------------------------------


def refuse(monkeypatch: pytest.MonkeyPatch, locked: Path, code: int) -> None:
    """Make ``locked`` behave like a folder this process may not read (as root, permission
    bits do not apply, so the refusal is injected at the ``os`` calls)."""
    real_scandir, real_stat = os.scandir, os.stat

    def under(path: object) -> bool:
        p = Path(os.fsdecode(path)) if isinstance(path, str | bytes | os.PathLike) else None
        return p is not None and (p == locked or locked in p.parents)

    def scandir(path):  # type: ignore[no-untyped-def]
        if under(path):
            raise OSError(code, os.strerror(code), os.fsdecode(path))
        return real_scandir(path)

    def stat_(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if under(path) and Path(os.fsdecode(path)) != locked:
            raise OSError(code, os.strerror(code), os.fsdecode(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", stat_)


@pytest.mark.parametrize(("code", "reason"), [(errno.EACCES, "permission denied"), (errno.EIO, "")])
async def test_an_unreadable_folder_is_skipped_and_named(
    ws: Path, monkeypatch: pytest.MonkeyPatch, code: int, reason: str
) -> None:
    make_tree(ws, ["a.py", "locked/b.py", "locked/sub/c.py", "open/d.py"])
    refuse(monkeypatch, ws / "locked", code)
    out = await glob(ws, pattern="**/*.py")
    lines = out.splitlines()
    assert lines[:2] == ["a.py", "open/d.py"]
    assert "could not be read" in lines[-1] and "locked" in lines[-1]
    assert reason in lines[-1].lower()
    out = await glob(ws, pattern="*.py", path="locked/sub")
    assert is_error(out) and "locked/sub" in out


async def test_files_and_folders_removed_mid_walk_are_no_error(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_tree(ws, ["a/1.py", "a/2.py", "b/3.py", "c/4.py"])
    real_scandir = os.scandir

    def removing_scandir(path):  # type: ignore[no-untyped-def]
        listing = real_scandir(path)
        if not isinstance(path, int) and Path(os.fsdecode(path)) == ws:
            # Another process cleans up right after the workspace was listed.
            shutil.rmtree(ws / "b")
            (ws / "a" / "2.py").unlink()
        return listing

    monkeypatch.setattr(os, "scandir", removing_scandir)
    out = await glob(ws, pattern="**/*.py", include_ignored=True)
    assert out.splitlines() == ["a/1.py", "c/4.py"]
