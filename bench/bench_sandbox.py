"""Cost of the Landlock sandbox per ``bash`` call, next to the same call unsandboxed.

Both variants go through the real ``bash`` tool (``runtime.execute``: schema check, private
temp dir, spawn, output, clean-up); the only difference is the policy: ``workspace-write``
(the launcher applies the ruleset, then execs bash) vs ``off`` (bash directly), and
``workspace-write`` hiding agent-lsp's own files as the server does (``hidden_paths`` of a
home folder with 100 entries, ``~/.config`` with 100: the launcher lists the folders on the
way and grants read entry by entry). Calls are interleaved so machine noise hits all alike;
medians. Commands: ``true`` (the fixed cost) and a ``find`` over 1,000 files (the
ruleset's cost on filesystem work).

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

from server.config.own_secrets import hidden_paths  # noqa: E402
from tooling.registry import ToolRegistry  # noqa: E402
from tooling.runtime import ToolRuntime  # noqa: E402
from tooling.workspace import Workspace  # noqa: E402
from tools import landlock_exec, sandbox  # noqa: E402
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


def make_home(root: Path) -> tuple[Path, ...]:
    """A lived-in home folder; the paths the server would hide in it."""
    for folder, entries in ((root, 100), (root / ".config", 100), (root / ".local/state", 30)):
        folder.mkdir(parents=True, exist_ok=True)
        for index in range(entries):
            (folder / f"entry{index:03d}").mkdir()
    (root / ".config" / "agent-lsp").mkdir()
    (root / ".config" / "agent-lsp" / "config.toml").write_text('api_key = "sk-bench"\n')
    return hidden_paths({"HOME": str(root), "AGENT_LSP_ENV_FILE": str(REPO_ROOT / ".env")})


def children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


VARIANTS = ("off", "on", "hidden")
# label, then wall and CPU medians (ms) per variant
Row = tuple[str, dict[str, float], dict[str, float]]


async def measure(calls: int) -> tuple[list[Row], int]:
    root = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    make_tree(root)
    hidden = make_home(Path(tempfile.mkdtemp(prefix="bench-sandbox-home-")))
    workspace = Workspace(root)
    policies = {
        "off": SandboxPolicy("off"),
        "on": SandboxPolicy(),
        "hidden": SandboxPolicy(hidden_paths=hidden),
    }
    runtimes = {
        name: ToolRuntime(ToolRegistry([bash_tool(workspace, policy=policy)]))
        for name, policy in policies.items()
    }
    rules = len(landlock_exec.read_grants([str(p) for p in hidden], [str(root)])[0])
    rows = []
    for label, command in COMMANDS.items():
        arguments = json.dumps({"command": command})
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        cpu: dict[str, list[float]] = {name: [] for name in VARIANTS}
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
                {name: median(values) for name, values in times.items()},
                {name: median(values) for name, values in cpu.items()},
            )
        )
    return rows, rules


def report(rows: list[Row], rules: int, calls: int, load: str) -> str:
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
    for label, wall, cpu in rows:
        for name, what in (("on", ""), ("hidden", ", hiding agent-lsp's files")):
            off, on = wall["off"], wall[name]
            added = on - off
            met = on / off <= TARGET_RATIO or added <= TARGET_ADDED_MS
            lines.append(
                f"| {label}{what} | {off:.1f} ms | {on:.1f} ms | {on / off:.2f}x | "
                f"{added:+.1f} ms | <= {TARGET_RATIO}x or <= {TARGET_ADDED_MS:.0f} ms: "
                f"{'met' if met else 'NOT met'} | {cpu['off']:.1f} ms | {cpu[name]:.1f} ms | "
                f"{cpu[name] - cpu['off']:+.1f} ms |"
            )
    hiding = [(wall["hidden"] - wall["on"], cpu["hidden"] - cpu["on"]) for _, wall, cpu in rows]
    lines += [
        "",
        "Wall time is the call as the model waits for it; CPU is user + system time of the "
        "call's processes (`RUSAGE_CHILDREN`), which machine load inflates far less. The "
        "added cost is the launcher: a second interpreter start (`python -I -S`, ctypes) "
        "that applies the ruleset and execs bash; the ruleset itself adds nothing "
        "measurable to the `find`.",
        "",
        "Hiding agent-lsp's own files (its configuration folder and file, state folder and "
        f"`.env`, in a home of 100 entries whose `~/.config` has 100: {rules} read rules, "
        "listed afresh per call) costs, over the plain sandbox in the same run: "
        + "; ".join(
            f"{label} {w:+.1f} ms wall, {c:+.1f} ms CPU"
            for (label, _, _), (w, c) in zip(rows, hiding, strict=True)
        )
        + ".",
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
    rows, rules = asyncio.run(measure(args.calls))
    table = report(rows, rules, args.calls, load)
    print(table)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(table)


if __name__ == "__main__":
    main()
