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


async def lsp_start(cmd: list[str], env: dict[str, str], folder: Path) -> tuple[float, float]:
    session = await spawn(cmd, env, folder, initialized=False)
    await session.close()
    return session.startup_s, session.startup_cpu_s or 0.0


async def run(rounds: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    env = server_env(None)
    with tempfile.TemporaryDirectory(prefix="agent-lsp-bench-start-") as tmp:
        folder = Path(tmp).resolve()
        for i in range(rounds):
            pairs = [
                [("lsp", lsp_start, SERVER_CMD), ("pygls", lsp_start, BARE_CMD)],
                [("acp", spawn_initialize, ACP_CMD), ("bare_acp", spawn_initialize, BARE_ACP_CMD)],
            ]
            for pair in pairs:
                for name, start, cmd in pair if i % 2 == 0 else reversed(pair):
                    wall, cpu = await start(cmd, env, folder)
                    out[name].append(wall)
                    out[f"{name}_cpu"].append(cpu)
            out["load"].append(os.getloadavg()[0])
    return out


def render(out: dict[str, list[float]], rounds: int, seconds: float) -> str:
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
        f"`uv run python bench/bench_startup.py --rounds {rounds}`; "
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}; {rounds} rounds, each spawning the four (each pair's "
        "order reversed every round); 1-minute load average median "
        f"{med(out['load']):.1f} (min {min(out['load']):.1f}, max {max(out['load']):.1f}); "
        f"whole run {seconds:.0f} s. Spawn → `initialize` result, medians; CPU is the agent's "
        "(`/proc/PID/stat`, 10 ms ticks) when the result arrives.",
        "",
        "| face | agent-lsp | baseline (same run) | ratio | CPU agent-lsp / baseline | target |",
        "|---|---:|---:|---:|---:|---|",
        row("LSP (`python -I -m server --stdio`)", "lsp", "pygls", "bare pygls"),
        row("ACP (`python -I -m server acp`)", "acp", "bare_acp", "bare ACP SDK agent"),
        "",
    ]
    return "\n".join(lines)


async def main(rounds: int) -> None:
    began = time.perf_counter()
    out = await run(rounds)
    report = render(out, rounds, time.perf_counter() - began)
    print(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    asyncio.run(main(parser.parse_args().rounds))
