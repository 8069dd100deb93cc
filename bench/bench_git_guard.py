"""Benchmark: what ``tools/sandbox/git_guard.py`` costs around a bash call, per workspace shape.

The watch takes a fingerprint before and after every bash call; the figures are medians of
interleaved rounds, next to a baseline measured in the same run: spawning ``bash -c true``
(the least a bash call costs). The synthetic trees (100,000 empty files in 10,000 folders,
two shapes) hit the entry budget, so they show its cost ceiling.

    uv run python bench/bench_git_guard.py [--rounds 21]
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import argparse  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from datetime import UTC, datetime  # noqa: E402

from tools.sandbox import git_guard  # noqa: E402

RESULTS = REPO_ROOT / "bench" / "results" / "git_guard.md"
TARGET_MS = 5.0  # for a normal repository, per fingerprint
GIT_ENV = {
    **{key: value for key, value in os.environ.items() if not key.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args],
        cwd=cwd,
        env=GIT_ENV,
        check=True,
        capture_output=True,
    )


def with_submodules(base: Path) -> Path:
    """As in tests/test_git_guard.py: a submodule holding one, a worktree, a nested repo."""
    for name in ("inner", "lib"):
        seed = base / f"{name}.seed"
        git(base, "init", "-q", "-b", "main", str(seed))
        (seed / "file.txt").write_text("seed\n")
        git(seed, "add", "file.txt")
        if name == "lib":
            git(seed, "submodule", "add", "-q", str(base / "inner.git"), "inner")
        git(seed, "commit", "-qm", "seed")
        git(base, "clone", "-q", "--bare", str(seed), str(base / f"{name}.git"))
    root = base / "ws"
    git(base, "init", "-q", "-b", "main", str(root))
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-qm", "first")
    git(root, "submodule", "add", "-q", str(base / "lib.git"), "libs/sub")
    git(root, "submodule", "update", "-q", "--init", "--recursive")
    git(root, "commit", "-qm", "a submodule")
    git(root, "worktree", "add", "-q", str(base / "wt"))
    git(root, "init", "-q", "sub/inner")
    return root


def synthetic(root: Path, fan_out: int, levels: int) -> Path:
    """A git repository whose leaf folders (``fan_out ** levels``) hold 10 files each."""
    git(root.parent, "init", "-q", str(root))
    leaves = [root]
    for _ in range(levels):
        leaves = [leaf / f"d{index}" for leaf in leaves for index in range(fan_out)]
    for leaf in leaves:
        leaf.mkdir(parents=True)
        for index in range(10):
            (leaf / f"f{index}").touch()
    return root


def planted_worktrees(root: Path, count: int) -> Path:
    """A repository with ``count`` empty folders under .git/worktrees (issue 33, finding 5)."""
    git(root.parent, "init", "-q", str(root))
    for index in range(count):
        (root / ".git" / "worktrees" / f"w{index:05}").mkdir(parents=True)
    return root


def spawn_bash() -> None:
    subprocess.run(["bash", "-c", "true"], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="bench-git-guard-")).resolve()
    trees = {
        "this repository": REPO_ROOT,
        "submodule in a submodule, a worktree, a nested repository": with_submodules(scratch),
        "100,000 files in 10,000 folders, 2 levels (100 x 100)": synthetic(
            scratch / "wide", 100, 2
        ),
        "100,000 files in 10,000 folders, 4 levels (10 x 10 x 10 x 10)": synthetic(
            scratch / "deep", 10, 4
        ),
        "25,000 planted folders under .git/worktrees": planted_worktrees(
            scratch / "planted", 25_000
        ),
    }
    # A listing is reused only once its folder's ctime is older than git_guard._RACY_NS.
    time.sleep(git_guard._RACY_NS / 1e9 + 0.5)

    rows = []
    spawn = statistics.median(timed(spawn_bash) for _ in range(args.rounds))
    for label, root in trees.items():
        previous = git_guard.fingerprint(root)
        variants: dict[str, Callable[[], object]] = {
            "fingerprint": lambda root=root: git_guard.fingerprint(root),
            "fingerprint since": lambda root=root, p=previous: git_guard.fingerprint(root, since=p),
            "protected_paths": lambda root=root, p=previous: git_guard.protected_paths(
                root, found=p.found
            ),
        }
        # Since issue 33 (absent from older code, so an older tree can be measured too):
        # the folders bound onto themselves, and a file tool's check of one path.
        if hasattr(git_guard, "pinned_folders"):
            variants["pinned_folders"] = lambda root=root, p=previous: git_guard.pinned_folders(
                root, found=p.found
            )
            variants["obeys"] = lambda root=root, p=previous: git_guard.obeys(
                Path("src/app/config.py"), root, found=git_guard.git_dirs(root, since=p.found)
            )
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, call in variants.items():  # interleaved, so drift affects all alike
                times[name].append(timed(call))
        medians = {name: statistics.median(values) for name, values in times.items()}
        found = previous.found
        mounts = len(git_guard.protected_paths(root, found=found))
        rows.append((label, medians, found, len(found.listings), mounts))

    lines = [
        "## git_guard: the watch around each bash call",
        "",
        f"`uv run python bench/bench_git_guard.py`; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}; "
        f"1-minute load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at "
        f"the end; whole run {time.perf_counter() - started:.0f} s. Medians of "
        f"{args.rounds} interleaved rounds. Baseline: spawning `bash -c true`, "
        f"{spawn * 1e3:.2f} ms in this run.",
        "",
        "| Workspace | fingerprint | ratio to spawn | fingerprint with `since` | ratio "
        "| protected_paths from it (mounts) | pinned_folders from it | obeys, one path "
        "| folders listed | truncated |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def ms(medians: dict[str, float], name: str, digits: int = 3) -> str:
        return f"{medians[name] * 1e3:.{digits}f} ms" if name in medians else "—"

    for label, medians, found, folders, mounts in rows:
        lines.append(
            f"| {label} | {medians['fingerprint'] * 1e3:.2f} ms "
            f"| {medians['fingerprint'] / spawn:.2f}x "
            f"| {medians['fingerprint since'] * 1e3:.2f} ms "
            f"| {medians['fingerprint since'] / spawn:.2f}x "
            f"| {ms(medians, 'protected_paths')} ({mounts:,}) | {ms(medians, 'pinned_folders')} "
            f"| {ms(medians, 'obeys', 2)} | {folders:,} "
            f"| {'yes' if found.truncated else 'no'} |"
        )
    normal = rows[0][1]["fingerprint"] * 1e3
    verdict = "met" if normal <= TARGET_MS else "MISSED"
    lines += [
        "",
        f"Target: a fingerprint of a normal repository (this one) under {TARGET_MS:g} ms: "
        f"{verdict} ({normal:.2f} ms fresh, {rows[0][1]['fingerprint since'] * 1e3:.2f} ms "
        "with `since`). A bash call takes two (before and after); with `since` both reuse "
        "the listings of folders whose ctime has not moved, and stat them instead.",
        f"Reference for this machine: `os.lstat` of a folder {lstat_cost(scratch) * 1e6:.1f} "
        f"us, listing a folder of 10 files {listing_cost(scratch) * 1e6:.1f} us.",
    ]
    table = "\n".join(lines) + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(table)
    print(table, end="")
    subprocess.run(["rm", "-rf", str(scratch)], check=True)


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def lstat_cost(scratch: Path) -> float:
    folders = [str(scratch / "wide" / "d1" / f"d{index}") for index in range(100)]
    start = time.perf_counter()
    for folder in folders:
        os.lstat(folder)
    return (time.perf_counter() - start) / len(folders)


def listing_cost(scratch: Path) -> float:
    folders = [str(scratch / "wide" / "d2" / f"d{index}") for index in range(100)]
    start = time.perf_counter()
    for folder in folders:
        with os.scandir(folder) as listing:
            list(listing)
    return (time.perf_counter() - start) / len(folders)


if __name__ == "__main__":
    main()
