"""What confining the server's own git costs (issue 33): glob and the environment block.

    uv run python bench/bench_server_git.py

On a generated git work tree of 100,000 files (1,000 folders of 100), once with every
file untracked and once after ``git add -A``:

1. ``glob('**/*.py')`` (the real tool through a ``ToolRuntime``): **after** = git run
   inside the bash sandbox, read-only (``tools.workspace_git``, the default policy);
   **before** = the same git command line run unconfined (the policy ``off``: what the
   tool did before, plus the hardening ``-c`` options, which cost nothing measurable);
   baseline = the plain ``git ls-files --cached --others --exclude-standard -z``.
   Target: after ≤ 2x git.
2. The environment block's status (``environment.git_summary``, its cache cleared each
   time so git really runs): after (confined) vs before (unconfined, policy ``off``) vs
   the plain ``git status --porcelain``.
3. For scale: one confined ``git --version`` (the sandbox's own cost per git call).

Medians over ``REPEATS`` runs after one warm-up, variants interleaved so that load from
other processes affects them alike. Writes ``bench/results/server_git.md``.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from server.project import environment  # noqa: E402
from tooling.registry import ToolRegistry  # noqa: E402
from tooling.runtime import ToolRuntime  # noqa: E402
from tooling.workspace import Workspace  # noqa: E402
from tools import sandbox  # noqa: E402
from tools.glob import glob_tool  # noqa: E402
from tools.sandbox import SandboxPolicy  # noqa: E402
from tools.workspace_git import GitRunner  # noqa: E402

REPEATS = 7
FOLDERS, PER_FOLDER = 1000, 100
CONFINED = SandboxPolicy()
UNCONFINED = SandboxPolicy(mode="off")


def make_tree(root: Path) -> None:
    for i in range(FOLDERS):
        folder = root / f"pkg{i:04d}"
        folder.mkdir(parents=True)
        for j in range(PER_FOLDER):
            suffix = ".py" if j % 4 == 0 else ".txt"
            (folder / f"f{j:03d}{suffix}").write_text(f"{i} {j}\n")


def git(root: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, stdin=subprocess.DEVNULL
    ).stdout


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def measure(variants: dict[str, Callable[[], object]]) -> dict[str, float]:
    for fn in variants.values():
        fn()  # warm-up
    runs: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(REPEATS):
        for name, fn in variants.items():
            runs[name].append(timed(fn))
    return {name: statistics.median(values) for name, values in runs.items()}


def glob_call(root: Path, policy: SandboxPolicy) -> Callable[[], str]:
    runtime = ToolRuntime(ToolRegistry([glob_tool(Workspace(root), policy=policy)]))
    arguments = json.dumps({"pattern": "**/*.py"})

    def call() -> str:
        out = asyncio.run(runtime.execute("glob", arguments))
        assert out.startswith("pkg0000/f000.py"), out[:200]
        return out

    return call


def status_call(root: Path, policy: SandboxPolicy) -> Callable[[], str]:
    # Measured whole: the server's 1 s budget would cut a loaded machine's 100k status.
    environment.GIT_BUDGET_S = 60.0

    def call() -> str:
        environment._cache.clear()
        summary = environment.git_summary(root, None, policy)
        assert "git repository" in summary and "skipped" not in summary, summary
        assert "unknown" not in summary and "not read" not in summary, summary
        return summary

    return call


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def rows_for(root: Path, label: str) -> list[list[str]]:
    glob_t = measure(
        {
            "git": lambda: git(
                root, "ls-files", "--cached", "--others", "--exclude-standard", "-z"
            ),
            "before": glob_call(root, UNCONFINED),
            "after": glob_call(root, CONFINED),
        }
    )
    status_t = measure(
        {
            "git": lambda: git(root, "status", "--porcelain"),
            "before": status_call(root, UNCONFINED),
            "after": status_call(root, CONFINED),
        }
    )
    rows = []
    for what, t, baseline, target in (
        ("`glob('**/*.py')`", glob_t, "`git ls-files --cached --others --exclude-standard -z`",
         2.0),
        ("environment block's status", status_t, "`git status --porcelain`", None),
    ):  # fmt: skip
        ratio = t["after"] / t["git"]
        verdict = (
            f"≤ {target:g}x: {'met' if ratio <= target else 'NOT met'}" if target else "(for scale)"
        )
        rows.append(
            [
                f"{what}, {label}",
                ms(t["after"]),
                ms(t["before"]),
                f"{baseline}: {ms(t['git'])}",
                f"{ratio:.2f}x",
                f"+{ms(t['after'] - t['before'])}",
                verdict,
            ]
        )
    return rows


def main() -> None:
    if shutil.which("git") is None:
        sys.exit("git is required for this benchmark")
    state = sandbox.support()
    if not state.available:
        sys.exit(f"this benchmark needs the sandbox: {state.reason()}")
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-server-git-", dir="/var/tmp") as work:
        root = Path(work) / "ws"
        make_tree(root)
        git(root, "init", "-q")
        rows = rows_for(root, "100k untracked files")
        git(root, "add", "-A")
        rows += rows_for(root, "100k tracked files")
        runner = GitRunner.of(root, CONFINED)
        per_call = measure(
            {
                "plain": lambda: git(root, "--version"),
                "confined": lambda: runner.run_sync(root, "--version", timeout=30),
            }
        )
    load_end = os.getloadavg()[0]
    git_version = git(Path("/"), "--version").decode().strip()
    ns = state.namespaces
    layers = (
        f"bubblewrap {ns.bwrap} (network namespace {ns.net}), Landlock ABI {state.abi}, "
        f"seccomp {state.seccomp}"
        if ns
        else f"no namespaces, Landlock ABI {state.abi}, seccomp {state.seccomp}"
    )
    lines = [
        "# The server's own git, confined (issue 33)",
        "",
        f"`uv run python bench/bench_server_git.py`; {time.strftime('%Y-%m-%d %H:%M')}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {git_version}; sandbox: "
        f"{layers}; 1-minute load average {load_start:.1f} at the start, {load_end:.1f} at "
        f"the end; whole run {time.perf_counter() - started:.0f} s.",
        "",
        f"A git work tree of {FOLDERS * PER_FOLDER:,} files ({FOLDERS:,} folders of "
        f"{PER_FOLDER}, a quarter `.py`). **After**: git run inside the bash sandbox, "
        "read-only, no network, private `/tmp`, hardened command line (`tools.workspace_git`)"
        "; **before**: the same git unconfined (sandbox `off`), as the server ran it before "
        "issue 33; baseline: the plain git command in the same run. The glob figures are "
        "the whole tool call (git, matching, sorting, checking the 200 files shown); the "
        "status figures are `environment.git_summary` with its cache cleared. Medians of "
        f"{REPEATS} after one warm-up, variants interleaved.",
        "",
        "| measurement | after (confined) | before (unconfined) | baseline | after / baseline "
        "| confinement adds | target |",
        "|---|---:|---:|---|---:|---:|---|",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        f"For scale, `git --version`: plain {ms(per_call['plain'])}, confined "
        f"{ms(per_call['confined'])} (+{ms(per_call['confined'] - per_call['plain'])}: the "
        "sandbox's own cost per git call, paid once per glob call or status).",
        "",
    ]
    out = REPO_ROOT / "bench" / "results" / "server_git.md"
    out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
