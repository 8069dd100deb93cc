"""Cost of the Landlock sandbox per ``bash`` call, next to the same call unsandboxed.

Both variants go through the real ``bash`` tool (``runtime.execute``: schema check, private
temp dir, spawn, output, clean-up); the only difference is the policy: ``workspace-write``
(the launcher applies the ruleset, then execs bash) vs ``off`` (bash directly). Calls are
interleaved so machine noise hits both alike; medians. Commands: ``true`` (the fixed cost)
and a ``find`` over 1,000 files (the ruleset's cost on filesystem work).

Run: ``uv run python bench/bench_sandbox.py [--calls 60]`` (writes
``bench/results/sandbox.md``). Target: at most 1.15x or at most 20 ms added, whichever
allows more.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from tooling.registry import ToolRegistry  # noqa: E402
from tooling.runtime import ToolRuntime  # noqa: E402
from tooling.workspace import Workspace  # noqa: E402
from tools import sandbox  # noqa: E402
from tools.sandbox import SandboxPolicy  # noqa: E402
from tools.shell import bash_tool  # noqa: E402

RESULTS = REPO_ROOT / "bench" / "results" / "sandbox.md"
TARGET_RATIO = 1.15
TARGET_ADDED_MS = 20.0
COMMANDS = {"`true`": "true", "`find . -type f | wc -l` (1,000 files)": "find . -type f | wc -l"}


def make_tree(root: Path, files: int = 1000) -> None:
    for index in range(files):
        folder = root / f"d{index // 50:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{index:04d}.txt").write_text("x")


def children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


Row = tuple[str, float, float, float, float]  # label, wall off/on, CPU off/on (ms)


async def measure(calls: int) -> list[Row]:
    root = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    make_tree(root)
    workspace = Workspace(root)
    runtimes = {
        "off": ToolRuntime(ToolRegistry([bash_tool(workspace, policy=SandboxPolicy("off"))])),
        "on": ToolRuntime(ToolRegistry([bash_tool(workspace, policy=SandboxPolicy())])),
    }
    rows = []
    for label, command in COMMANDS.items():
        arguments = json.dumps({"command": command})
        times: dict[str, list[float]] = {"off": [], "on": []}
        cpu: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(3):  # warm-up: page cache, interpreter files
            for runtime in runtimes.values():
                await runtime.execute("bash", arguments)
        for _ in range(calls):
            for name, runtime in runtimes.items():
                cpu_before = children_cpu_ms()
                started = time.perf_counter()
                result = await runtime.execute("bash", arguments)
                times[name].append((time.perf_counter() - started) * 1000)
                cpu[name].append(children_cpu_ms() - cpu_before)
                assert not result.startswith("Error"), result
        median = statistics.median
        rows.append(
            (
                label,
                median(times["off"]),
                median(times["on"]),
                median(cpu["off"]),
                median(cpu["on"]),
            )
        )
    return rows


def report(rows: list[Row], calls: int, load: str) -> str:
    lines = [
        "## Bash sandbox (Landlock) cost per call",
        "",
        f"`uv run python bench/bench_sandbox.py`; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} CPUs, load average before the run {load}, Linux "
        f"{platform.release()}, Landlock ABI {sandbox.support().abi}, Python "
        f"{platform.python_version()}. Medians of {calls} interleaved calls per variant "
        "through the real bash tool.",
        "",
        "| command | unsandboxed (baseline) | sandboxed | ratio | added | target | "
        "CPU unsandboxed | CPU sandboxed | CPU added |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for label, off, on, cpu_off, cpu_on in rows:
        added = on - off
        met = on / off <= TARGET_RATIO or added <= TARGET_ADDED_MS
        lines.append(
            f"| {label} | {off:.1f} ms | {on:.1f} ms | {on / off:.2f}x | {added:+.1f} ms | "
            f"<= {TARGET_RATIO}x or <= {TARGET_ADDED_MS:.0f} ms: {'met' if met else 'NOT met'} | "
            f"{cpu_off:.1f} ms | {cpu_on:.1f} ms | {cpu_on - cpu_off:+.1f} ms |"
        )
    lines += [
        "",
        "Wall time is the call as the model waits for it; CPU is user + system time of the "
        "call's processes (`RUSAGE_CHILDREN`), which machine load inflates far less. The "
        "added cost is the launcher: a second interpreter start (`python -I -S`, ctypes) "
        "that applies the ruleset and execs bash; the ruleset itself adds nothing "
        "measurable to the `find`.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60)
    args = parser.parse_args()
    if not sandbox.support().available:
        raise SystemExit(f"bench_sandbox: {sandbox.support().reason()}")
    load = " / ".join(f"{value:.2f}" for value in os.getloadavg())
    table = report(asyncio.run(measure(args.calls)), args.calls, load)
    print(table)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(table)


if __name__ == "__main__":
    main()
