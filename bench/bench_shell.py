"""Benchmark: the ``bash`` tool vs ``subprocess.run(capture_output=True)`` on 200 MB of output.

Each measurement runs in a fresh child Python process, so ``ru_maxrss`` (the peak RSS
of that process) belongs to one variant only; the growth is the peak after the call
minus the peak after imports and a warm-up call. Reports medians over the runs, the
ratios tool / baseline, as a markdown table on stdout and in ``bench/results/shell.md``.

    uv run python bench/bench_shell.py [--runs 3] [--megabytes 200]
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import UTC, datetime  # noqa: E402

RESULTS = REPO_ROOT / "bench" / "results" / "shell.md"
VARIANTS = {
    "tool": "bash tool (`tools/shell.py`)",
    "subprocess": "`subprocess.run(capture_output=True)`",
}
TARGET_RSS_MB = 50


def command_for(megabytes: int) -> str:
    return f"head -c {megabytes * 1_000_000} /dev/zero | tr '\\0' a"


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return peak / 1e6 if sys.platform == "darwin" else peak * 1024 / 1e6


def measure(variant: str, megabytes: int) -> dict[str, float]:
    """One measurement, in this (child) process."""
    command = command_for(megabytes)
    workdir = tempfile.mkdtemp(prefix="bench-shell-")
    if variant == "tool":
        from tooling.registry import ToolRegistry
        from tooling.runtime import ToolRuntime
        from tooling.workspace import Workspace
        from tools.shell import bash_tool

        runtime = ToolRuntime(ToolRegistry([bash_tool(Workspace(workdir))]))
        loop = asyncio.new_event_loop()

        def call(cmd: str) -> str:
            arguments = json.dumps({"command": cmd, "timeout_seconds": 600})
            return loop.run_until_complete(runtime.execute("bash", arguments))

    else:

        def call(cmd: str) -> str:
            done = subprocess.run(
                ["bash", "-c", cmd],
                cwd=workdir,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                check=False,
            )
            return (done.stdout + done.stderr).decode("utf-8", errors="replace")

    call("echo warm-up")  # lazy imports, watcher threads, allocator arenas
    baseline = peak_rss_mb()
    start = time.perf_counter()
    output = call(command)
    wall = time.perf_counter() - start
    growth = peak_rss_mb() - baseline
    os.rmdir(workdir)
    if output.startswith("Error:"):
        raise SystemExit(f"{variant}: the command failed: {output[:200]}")
    return {"wall_s": wall, "rss_growth_mb": growth, "result_chars": len(output)}


def run_child(variant: str, megabytes: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", variant, "--megabytes", str(megabytes)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def render(results: dict[str, list[dict[str, float]]], runs: int, megabytes: int) -> str:
    med = {
        variant: {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        for variant, rows in results.items()
    }
    tool, base = med["tool"], med["subprocess"]
    lines = [
        f"# bash tool: {megabytes} MB of output",
        "",
        f"Command: `{command_for(megabytes)}`; medians of {runs} runs, each in a fresh "
        "child process; peak RSS growth = `ru_maxrss` after the call minus after warm-up.",
        f"Machine: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        "",
        "| variant | wall time (s) | peak RSS growth (MB) | result size (chars) |",
        "|---|---:|---:|---:|",
    ]
    for variant, label in VARIANTS.items():
        m = med[variant]
        lines.append(
            f"| {label} | {m['wall_s']:.3f} | {m['rss_growth_mb']:.2f} | {m['result_chars']:,.0f} |"
        )
    rss_ratio = tool["rss_growth_mb"] / base["rss_growth_mb"] if base["rss_growth_mb"] else 0.0
    lines.append(
        f"| ratio tool / baseline | {tool['wall_s'] / base['wall_s']:.2f}x | "
        f"{rss_ratio:.4f}x | {tool['result_chars'] / base['result_chars']:.5f}x |"
    )
    verdict = "met" if tool["rss_growth_mb"] < TARGET_RSS_MB else "MISSED"
    lines += [
        "",
        f"Target: tool peak RSS growth < {TARGET_RSS_MB} MB — {verdict} "
        f"({tool['rss_growth_mb']:.2f} MB).",
        "",
        "Per run (tool / baseline): "
        + "; ".join(
            f"{t['wall_s']:.3f} s, {t['rss_growth_mb']:.2f} MB / "
            f"{b['wall_s']:.3f} s, {b['rss_growth_mb']:.1f} MB"
            for t, b in zip(results["tool"], results["subprocess"], strict=True)
        ),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--child", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.megabytes)))
        return

    results: dict[str, list[dict[str, float]]] = {variant: [] for variant in VARIANTS}
    for _ in range(args.runs):
        for variant in VARIANTS:  # interleaved, so drift affects both alike
            results[variant].append(run_child(variant, args.megabytes))
    table = render(results, args.runs, args.megabytes)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(table)
    print(table, end="")


if __name__ == "__main__":
    main()
