"""Checkpoints on the 100,000-file tree, each figure next to git on the same tree.

    uv run python bench/bench_checkpoints.py

The tree is the filesystem benchmark's (``bench/bench_filesystem.py``): 1,000 folders of
100 files (4 in 5 ``.py``) plus a 50,000-file ``.venv`` that ``.gitignore`` lists -- but
every file holds a few distinct bytes here (an empty tree would be one blob), and the
tree is a git repository with everything committed, as a user's project would be.

1. The checkpoint an ask waits for (``CheckpointService.begin`` + ``ready``: the shadow
   repository's ``git add -A`` and ``write-tree``, the checkpoint's ref and log) when
   nothing changed since the last one, and after a 10-file change, next to
   ``git status --porcelain`` in the user's repository (target: <= 2x).
2. The first checkpoint of a fresh workspace (no shadow repository yet) next to
   ``git add -A`` into a fresh repository.
3. For information: the end of an ask that changed 10 files (``recorder.finish()``: the
   second snapshot, the diff, line counts, the log), and the store's size on disk.

Medians of interleaved runs after a warm-up. Writes ``bench/results/checkpoints.md``.
"""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from server.checkpoints.service import CheckpointService  # noqa: E402

TREE_DIRS, FILES_PER_DIR = 1000, 100  # as bench_filesystem.py
VENV_DIRS = 500
REPEATS = 7
FIRST_REPEATS = 3
RESULTS = REPO_ROOT / "bench" / "results" / "checkpoints.md"
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def make_tree(root: Path) -> list[Path]:
    """The tree, with a few distinct bytes per file; returns the project's files."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    files = []
    for d in range(TREE_DIRS):
        folder = root / "src" / f"pkg{d // 100:02d}" / f"mod{d:03d}"
        folder.mkdir(parents=True)
        for f in range(FILES_PER_DIR):
            path = folder / (f"f{f:03d}.py" if f % 5 else f"notes{f:03d}.md")
            fd = os.open(path, flags, 0o644)
            os.write(fd, f"# module {d}, file {f}\nVALUE = {d * FILES_PER_DIR + f}\n".encode())
            os.close(fd)
            files.append(path)
    for d in range(VENV_DIRS):
        folder = root / ".venv" / "lib" / f"site{d:03d}"
        folder.mkdir(parents=True)
        for f in range(FILES_PER_DIR):
            os.close(os.open(folder / f"m{f:03d}.py", flags, 0o644))
    (root / ".gitignore").write_text(".venv/\n")
    return files


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(
        ["git", *args],
        cwd=root,
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env=env or GIT_ENV,
    )


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def du(path: Path) -> int:
    return sum(p.lstat().st_blocks * 512 for p in path.rglob("*"))


class Bench:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.tree = work / "tree"
        self.tree.mkdir()
        self.loop = asyncio.new_event_loop()
        self.asks = 0

    def run(self, work: Awaitable[object]) -> object:
        return self.loop.run_until_complete(work)

    def status(self) -> None:
        git(self.tree, "status", "--porcelain")

    def checkpoint(self, service: CheckpointService, *, finish: bool = True) -> float:
        """Seconds until the ask's first tool may run; the ask is then finished."""

        async def ask() -> float:
            self.asks += 1
            started = time.perf_counter()
            recorder = await service.begin(self.tree, "bench", f"ask {self.asks}", "request")
            await recorder.ready()
            elapsed = time.perf_counter() - started
            if finish:
                await recorder.finish()
            return elapsed

        return float(self.run(ask()))  # type: ignore[arg-type]

    def finish_after(self, service: CheckpointService, change: Callable[[], None]) -> float:
        async def ask() -> float:
            self.asks += 1
            recorder = await service.begin(self.tree, "bench", f"ask {self.asks}", "request")
            await recorder.ready()
            change()
            started = time.perf_counter()
            await recorder.finish()
            return time.perf_counter() - started

        return float(self.run(ask()))  # type: ignore[arg-type]


def main() -> None:
    if shutil.which("git") is None:
        sys.exit("git is required for this benchmark")
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-checkpoints-") as tmp:
        work = Path(tmp)
        os.environ["GIT_CEILING_DIRECTORIES"] = str(work)
        bench = Bench(work)
        print("generating the tree ...", file=sys.stderr)
        files = make_tree(bench.tree)
        git(bench.tree, "init", "-q")
        git(bench.tree, "add", "-A")
        git(bench.tree, "commit", "-qm", "tree")
        bench.status()

        # 2. First checkpoint of a fresh workspace vs git add -A into a fresh repository.
        print("first checkpoints ...", file=sys.stderr)
        first: list[float] = []
        fresh_add: list[float] = []
        sizes: list[int] = []
        for n in range(FIRST_REPEATS):
            state = work / f"state-{n}"
            service = CheckpointService(state)
            first.append(bench.checkpoint(service, finish=False))
            sizes.append(du(state))
            bench.run(service.aclose())
            shutil.rmtree(state)
            fresh = work / f"fresh-{n}.git"
            git(work, "init", "-q", "--bare", str(fresh))
            env = {**GIT_ENV, "GIT_DIR": str(fresh), "GIT_WORK_TREE": str(bench.tree)}
            fresh_add.append(timed(lambda env=env: git(bench.tree, "add", "-A", env=env)))
            shutil.rmtree(fresh)

        # 1. Warm: nothing changed, and a 10-file change, each next to git status.
        print("warm checkpoints ...", file=sys.stderr)
        service = CheckpointService(work / "state")
        bench.checkpoint(service)  # the shadow repository, warm
        bench.run(service.settled())  # its first packing of 100,000 loose objects
        bench.checkpoint(service)
        unchanged: list[float] = []
        unchanged_status: list[float] = []
        changed: list[float] = []
        changed_status: list[float] = []
        for round_ in range(REPEATS):
            unchanged_status.append(timed(bench.status))
            unchanged.append(bench.checkpoint(service))
            for path in files[round_ * 10 : round_ * 10 + 10]:
                path.write_text(path.read_text() + f"# changed in round {round_}\n")
            # Alternate which goes first, so caches favour neither.
            if round_ % 2:
                changed_status.append(timed(bench.status))
                changed.append(bench.checkpoint(service))
            else:
                changed.append(bench.checkpoint(service))
                changed_status.append(timed(bench.status))

        # 3. For information: the end of an ask that changed 10 files.
        print("ask ends ...", file=sys.stderr)
        finishes: list[float] = []
        for round_ in range(REPEATS):
            batch = files[5000 + round_ * 10 : 5000 + round_ * 10 + 10]

            def change(batch: list[Path] = batch) -> None:
                for path in batch:
                    path.write_text(path.read_text().replace("VALUE", "RESULT"))

            finishes.append(bench.finish_after(service, change))
        store = du(work / "state")
        bench.run(service.aclose())
        bench.loop.close()
    total = time.perf_counter() - started
    load_end = os.getloadavg()[0]

    med = statistics.median
    rows = []

    def row(what: str, ours: float, base_name: str, base: float, target: bool) -> None:
        ratio = ours / base
        verdict = f" (target <= 2x: {'met' if ratio <= 2 else 'MISSED'})" if target else ""
        rows.append([what, fmt_s(ours), base_name, fmt_s(base), f"{ratio:.2f}x{verdict}"])

    row("checkpoint, nothing changed", med(unchanged), "`git status --porcelain`",
        med(unchanged_status), True)  # fmt: skip
    row("checkpoint after a 10-file change", med(changed), "`git status --porcelain`",
        med(changed_status), True)  # fmt: skip
    row("first checkpoint of a fresh workspace", med(first),
        "`git add -A` into a fresh repository", med(fresh_add), False)  # fmt: skip
    row("end of an ask that changed 10 files (snapshot, diff, line counts, log)",
        med(finishes), "`git status --porcelain`", med(changed_status), False)  # fmt: skip

    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    header = ["Measurement", "agent-lsp", "Baseline", "Baseline figure", "Ratio"]
    lines = [
        "# Checkpoints benchmark",
        "",
        f"`uv run python bench/bench_checkpoints.py`; {time.strftime('%Y-%m-%d %H:%M')}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, {git_version.strip()}; "
        f"1-minute load average {load_start:.1f} at the start, {load_end:.1f} at the end; "
        f"whole run {total:.0f} s. Tree: {TREE_DIRS * FILES_PER_DIR:,} files of a few "
        f"distinct bytes, committed, plus {VENV_DIRS * FILES_PER_DIR:,} files in an ignored "
        f"`.venv`. Medians of {REPEATS} interleaved runs ({FIRST_REPEATS} for first "
        "checkpoints). A checkpoint is what the ask's first tool waits for: the shadow "
        "repository's `git add -A` and `write-tree` plus the checkpoint's ref and log; it "
        "runs while the model answers the first request, so an ask only waits for it when "
        "the model calls a tool sooner.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
        f"Store size on disk: {med(sizes) / 2**20:,.0f} MB right after the first checkpoint "
        f"(one loose object per file), {store / 2**20:,.0f} MB after "
        f"{bench.asks - FIRST_REPEATS} asks (packed in the background by `git gc --auto`).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()
