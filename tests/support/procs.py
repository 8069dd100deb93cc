"""Look for processes by a unique tag in their command line (Linux /proc)."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path


def unique_tag() -> str:
    return f"agentlsptag{uuid.uuid4().hex[:12]}"


def pids_with(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().split(") ", 1)[1][:1]
        except OSError:
            continue
        if tag.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def root_pids_with(tag: str) -> list[int]:
    """The processes of ``pids_with`` whose parent is not one of them: a process caught
    between fork and exec (the server starting git, say) still shows its parent's command
    line, and is left out."""
    found = pids_with(tag)
    roots = []
    for pid in found:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(") ", 1)[1].split()[1])
        if parent not in found:
            roots.append(pid)
    return roots


def wait_until(predicate, timeout: float, interval: float = 0.05) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


async def until(predicate, within: float = 10.0, interval: float = 0.02) -> None:  # type: ignore[no-untyped-def]
    """Poll ``predicate`` on the event loop until it holds; fail the test if it never does."""
    import asyncio

    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {within} s")
        await asyncio.sleep(interval)
