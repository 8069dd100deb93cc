"""Start-up of both faces next to their bare baselines, in one run.

- LSP: ``python -I -m server --stdio`` vs ``bench/bare_pygls_server.py`` (pygls 2 and
  lsprotocol's converter, nothing else), spawn -> ``initialize`` result.
- ACP: ``python -I -m server acp`` vs ``bench/bare_acp_agent.py`` (the ACP SDK's
  ``run_agent`` and an ``initialize`` built from its schema types), the same measurement.

Each round spawns the four, the order of each pair reversed every round (drift and
load bursts from other processes hit both alike); medians, the agent's CPU time
(``/proc/PID/stat``) when the result arrives, and the 1-minute load average.
Target (issue 37): each face <= 1.1x its baseline.

Run: ``uv run python bench/bench_startup.py [--rounds N]`` (writes ``bench/results/startup.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench_acp import ACP_CMD, BARE_ACP_CMD, spawn_initialize  # the script's folder is on sys.path
from bench_server import BARE_CMD, REPO_ROOT, SERVER_CMD, server_env, spawn

RESULTS = REPO_ROOT / "bench" / "results" / "startup.md"
ROUNDS = 15
TARGET = 1.1


async def lsp_start(
    cmd: list[str], env: dict[str, str], folder: Path, cwd: Path
) -> tuple[float, float, float]:
    session = await spawn(cmd, env, folder, initialized=False, cwd=cwd)
    await session.close()
    return session.startup_s, session.startup_cpu_s or 0.0, 0.0


def _commands(tree: Path | None) -> dict[str, tuple[list[str], Path]]:
    """The four processes (and the baseline tree's two agents), with their folders."""
    found = {
        "lsp": (SERVER_CMD, REPO_ROOT),
        "pygls": (BARE_CMD, REPO_ROOT),
        "acp": (ACP_CMD, REPO_ROOT),
        "bare_acp": (BARE_ACP_CMD, REPO_ROOT),
    }
    if tree is not None:  # not -I: its packages come from its folder (the working directory)
        found["lsp_before"] = ([sys.executable, "-m", "server", "--stdio"], tree)
        found["acp_before"] = ([sys.executable, "-m", "server", "acp"], tree)
    return found


async def run(rounds: int, tree: Path | None) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    # A model endpoint that is never reached: session/new needs one configured.
    env = server_env("http://127.0.0.1:9/v1")
    commands = _commands(tree)
    with tempfile.TemporaryDirectory(prefix="agent-lsp-bench-start-") as tmp:
        folder = Path(tmp).resolve()
        for i in range(rounds):
            groups = [["lsp", "pygls", "lsp_before"], ["acp", "bare_acp", "acp_before"]]
            for group in groups:
                names = [n for n in group if n in commands]
                for name in names if i % 2 == 0 else reversed(names):
                    cmd, cwd = commands[name]
                    start = (
                        lsp_start if name in ("lsp", "pygls", "lsp_before") else spawn_initialize
                    )
                    run_env = env if cwd == REPO_ROOT else {**env, "PYTHONPATH": str(cwd)}
                    wall, cpu, session = await start(cmd, run_env, folder, cwd)
                    out[name].append(wall)
                    out[f"{name}_cpu"].append(cpu)
                    out[f"{name}_session"].append(session)
            out["load"].append(os.getloadavg()[0])
    return out


def render(out: dict[str, list[float]], rounds: int, seconds: float, tree: bool) -> str:
    med = statistics.median
    ms = 1000

    def row(what: str, ours: str, bare: str, base: str) -> str:
        ratio = med(out[ours]) / med(out[bare])
        per_round = med(a / b for a, b in zip(out[ours], out[bare], strict=True))
        cpu = med(out[f"{ours}_cpu"]) / max(med(out[f"{bare}_cpu"]), 1e-9)
        verdict = "met" if ratio <= TARGET else "**not met**"
        return (
            f"| {what} | {med(out[ours]) * ms:.0f} ms | {base} {med(out[bare]) * ms:.0f} ms "
            f"| {ratio:.2f}x (per round {per_round:.2f}x) | {med(out[f'{ours}_cpu']) * ms:.0f} / "
            f"{med(out[f'{bare}_cpu']) * ms:.0f} ms ({cpu:.2f}x) | <= {TARGET}x: {verdict} |"
        )

    lines = [
        "## Start-up",
        "",
        f"`uv run python bench/bench_startup.py --rounds {rounds}"
        + (" --baseline-tree DIR`" if tree else "`")
        + f"; {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}; {rounds} rounds, each spawning every process once "
        "(the order reversed every round); 1-minute load average median "
        f"{med(out['load']):.1f} (min {min(out['load']):.1f}, max {max(out['load']):.1f}); "
        f"whole run {seconds:.0f} s. Spawn → `initialize` result, medians; CPU is the agent's "
        "(`/proc/PID/stat`, 10 ms ticks) when the result arrives.",
        "",
        "| face | agent-lsp | baseline (same run) | ratio | CPU agent-lsp / baseline | target |",
        "|---|---:|---:|---:|---:|---|",
        row("LSP (`python -I -m server --stdio`)", "lsp", "pygls", "bare pygls"),
        row("ACP (`python -I -m server acp`)", "acp", "bare_acp", "bare ACP SDK agent"),
        "",
        "ACP, spawn → `session/new` result (what a client waits for before its first prompt; "
        f"agent-lsp loads its engine between the two): agent-lsp {med(out['acp_session']) * ms:.0f}"
        f" ms, the bare agent {med(out['bare_acp_session']) * ms:.0f} ms.",
        "",
    ]
    if tree:
        lines += [
            "### This tree vs the baseline tree (same run, alternating)",
            "",
            "| measurement | this tree | baseline tree | this / baseline |",
            "|---|---:|---:|---:|",
        ]
        for what, key in (
            ("LSP spawn → `initialize`", "lsp"),
            ("LSP CPU by then", "lsp_cpu"),
            ("ACP spawn → `initialize`", "acp"),
            ("ACP CPU by then", "acp_cpu"),
            ("ACP spawn → `session/new`", "acp_session"),
        ):
            before = key.replace("lsp", "lsp_before", 1).replace("acp", "acp_before", 1)
            a, b = med(out[key]), med(out[before])
            lines.append(f"| {what} | {a * ms:.0f} ms | {b * ms:.0f} ms | {a / b:.2f}x |")
        lines.append("")
    return "\n".join(lines)


# What each process imports before it can answer `initialize` (the faces' start paths).
IMPORTS = {
    "pygls": ["pygls.lsp.server", "lsprotocol.converters"],
    # The terminal's config and mcp commands: the parser (built at every start) names them.
    "lsp": [
        "server.cli",
        "server.stdio",
        "server.config.own_secrets",
        "server.terminal.config_command",
        "server.terminal.mcp_command",
        "server.lsp.server",
    ],
    "bare_acp": ["acp", "acp.schema"],
    "acp": ["server.cli", "server.stdio", "server.config.own_secrets", "server.acp.serve"],
}


def import_self_times(modules: list[str]) -> dict[str, int]:
    """``-X importtime`` self time (µs) of every module ``modules`` pull in."""
    import subprocess

    code = "; ".join(f"import {m}" for m in modules)
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    found: dict[str, int] = {}
    for line in err.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            own, _, name = line.removeprefix("import time:").split("|")
            found[name.strip()] = int(own)
    return found


def where_the_time_goes() -> list[str]:
    lines = [
        "### Where the time goes",
        "",
        "`python -X importtime` self times (one run each; they inflate what they time, so "
        "only the shares count): what each agent-lsp face imports before `initialize` beyond "
        "what its bare baseline imports, by top-level package.",
        "",
    ]
    for ours, bare, face in (("lsp", "pygls", "LSP"), ("acp", "bare_acp", "ACP")):
        a, b = import_self_times(IMPORTS[ours]), import_self_times(IMPORTS[bare])
        extra = {k: v for k, v in a.items() if k not in b}
        by_package: dict[str, int] = defaultdict(int)
        for name, own in extra.items():
            by_package[name.split(".")[0]] += own
        top = sorted(by_package.items(), key=lambda kv: -kv[1])[:6]
        total_extra, total_bare = sum(extra.values()), sum(b.values())
        lines.append(
            f"- {face}: the baseline's imports {total_bare / 1000:.0f} ms, agent-lsp's on top "
            f"{total_extra / 1000:.0f} ms ({total_extra / total_bare:.0%}): "
            + ", ".join(f"`{k}` {v / 1000:.0f} ms" for k, v in top)
            + "."
        )
    return [*lines, ""]


async def main(rounds: int, tree: Path | None) -> None:
    began = time.perf_counter()
    out = await run(rounds, tree)
    report = render(out, rounds, time.perf_counter() - began, tree is not None)
    report += "\n".join(where_the_time_goes())
    print(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument(
        "--baseline-tree", type=Path, help="a checkout to measure alternately (git archive)"
    )
    options = parser.parse_args()
    asyncio.run(main(options.rounds, options.baseline_tree))
