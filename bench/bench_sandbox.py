"""Cost of the bash sandbox per call, each form next to the same call unsandboxed.

Every variant goes through the real ``bash`` tool (``runtime.execute``: schema check, git
fingerprint before and after, private temp dir, spawn, output, clean-up); what differs is
the confinement:

- ``off``: bash directly (``sandbox: off``, the baseline);
- ``full``: bubblewrap alone (own user, PID, IPC, UTS, network namespace; read-only root,
  private read-only ``/tmp``, agent-lsp's files covered, what git obeys read-only; seccomp
  on a descriptor; limits set before exec), in the call's cgroups (taken from the pool);
- ``full-nocgroup``: the same without cgroups (a server that may make none: most users);
- ``launcher``: bubblewrap around the Python launcher (Landlock, seccomp, limits inside),
  what every call ran before issue 37 and what the proxy's calls still run;
- ``fallback``: no namespaces (``AGENT_LSP_BWRAP=none``): the launcher with Landlock,
  seccomp, the limits, supervising the call's processes.

The ``SandboxSupport`` and confinement of each variant are swapped in per call (the tool
looks them up per call). Rounds alternate the variants, rotating their order; medians.

Run: ``uv run python bench/bench_sandbox.py [--rounds 40]`` (writes
``bench/results/sandbox.md``). Targets (issue 37): +10 ms with namespaces, +25 ms without.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from server.config.own_secrets import hidden_paths  # noqa: E402
from tooling.registry import ToolRegistry  # noqa: E402
from tooling.runtime import ToolRuntime  # noqa: E402
from tooling.workspace import Workspace  # noqa: E402
from tools import sandbox, sandbox_limits  # noqa: E402
from tools.sandbox import SandboxPolicy  # noqa: E402
from tools.shell import bash_tool  # noqa: E402

RESULTS = REPO_ROOT / "bench" / "results" / "sandbox.md"
TARGETS = {"full": 10.0, "full-nocgroup": 10.0, "fallback": 25.0}
COMMANDS = {"`true`": "true", "`python3 -c pass`": "python3 -c pass"}
LABELS = {
    "off": "no sandbox (`sandbox: off`, baseline)",
    "full": "namespaces: bubblewrap alone, seccomp on a descriptor, call cgroups (pids, memory)",
    "full-nocgroup": "namespaces, no cgroup (a server that may make none)",
    "launcher": "namespaces + the launcher inside (Landlock; as before issue 37)",
    "fallback": "no namespaces: launcher with Landlock, seccomp, limits, supervision",
}
VARIANTS = tuple(LABELS)


@contextlib.contextmanager
def variant(name: str, full: sandbox.SandboxSupport) -> Iterator[None]:
    saved = (sandbox.support, sandbox.confinement, sandbox_limits.POOL.take)
    state = dataclasses.replace(full, namespaces=None) if name == "fallback" else full
    original = sandbox.confinement

    def confinement(*args: object, **kwargs: object) -> sandbox.Confinement | None:
        found = original(*args, **kwargs)  # type: ignore[arg-type]
        if found is not None and name == "launcher":
            found = dataclasses.replace(found, launcher=True, landlock=True)
        return found

    sandbox.support = lambda: state  # type: ignore[assignment]
    sandbox.confinement = confinement  # type: ignore[assignment]
    if name == "full-nocgroup":
        sandbox_limits.POOL.take = lambda limits: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        sandbox.support, sandbox.confinement, sandbox_limits.POOL.take = saved  # type: ignore[method-assign]


async def measure(rounds: int) -> dict[str, dict[str, float]]:
    full = sandbox.support()
    assert full.namespaces is not None and full.namespaces.net, full
    with tempfile.TemporaryDirectory(prefix="agent-lsp-bench-") as folder:
        root = Path(folder) / "ws"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)  # noqa: ASYNC221
        home = Path(folder) / "home"
        (home / ".config" / "agent-lsp").mkdir(parents=True)
        (home / ".config" / "agent-lsp" / "config.toml").write_text("api_key = 'x'\n")
        hidden = hidden_paths({"HOME": str(home)})
        runtimes = {
            name: ToolRuntime(ToolRegistry([bash_tool(Workspace(root), policy=SandboxPolicy(
                "off" if name == "off" else "workspace-write", hidden_paths=hidden))]))
            for name in VARIANTS
        }  # fmt: skip
        samples: dict[str, dict[str, list[float]]] = {
            c: {v: [] for v in VARIANTS} for c in COMMANDS
        }
        for index in range(rounds + 2):
            order = VARIANTS[index % len(VARIANTS) :] + VARIANTS[: index % len(VARIANTS)]
            for name in order:
                for label, command in COMMANDS.items():
                    with variant(name, full):
                        started = time.perf_counter()
                        out = await runtimes[name].execute("bash", json.dumps({"command": command}))
                        wall = (time.perf_counter() - started) * 1000
                    assert out.startswith("(no output)"), (name, out)
                    if index >= 2:  # the first rounds warm up (pool, caches)
                        samples[label][name].append(wall)
                    await asyncio.sleep(0.05)  # calls are seconds apart in real use
        return {c: {v: statistics.median(s) for v, s in by.items()} for c, by in samples.items()}


def report(
    medians: dict[str, dict[str, float]], rounds: int, load: tuple[float, float], took: float
) -> str:
    lines = [
        "### Bash sandbox cost per call",
        "",
        f"`uv run python bench/bench_sandbox.py --rounds {rounds}`; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs, 1-minute load average "
        f"{load[0]:.2f} at the start, {load[1]:.2f} at the end (other jobs ran on the machine); "
        f"whole run {took:.0f} s; Linux {platform.release()}, "
        f"Landlock ABI {sandbox.support().abi}, "
        f"cgroups: pids {'yes' if sandbox_limits.pids_base() else 'no'}, memory "
        f"{'yes' if sandbox_limits.memory_base() else 'no'}; Python {platform.python_version()}. "
        "Medians of the rounds; each round runs every variant once per command through the "
        "real bash tool, in an order rotated round by round, 50 ms apart.",
        "",
        "| command | sandbox | wall | no sandbox (same run) | added | target |",
        "|---|---|---|---|---|---|",
    ]
    for command, by in medians.items():
        base = by["off"]
        for name in VARIANTS:
            added = by[name] - base
            target = TARGETS.get(name)
            met = "met" if target is not None and added <= target else "NOT met"
            verdict = "baseline" if name == "off" else f"<= {target:g} ms: {met}" if target else ""
            lines.append(f"| {command} | {LABELS[name]} | {by[name]:.1f} ms | {base:.1f} ms | "
                         f"{added:+.1f} ms | {verdict} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    medians = asyncio.run(measure(args.rounds))
    text = report(medians, args.rounds, (load, os.getloadavg()[0]), time.perf_counter() - started)
    RESULTS.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
