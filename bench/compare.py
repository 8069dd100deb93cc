"""Before/after figures in one run: ``bench/run.py --compare REV``.

A restructuring should cost nothing measurable, and "nothing" only means something next to a
baseline measured on the same machine at the same time (these machines are noisy). So the
benchmarks run one after the other, each first in a detached worktree of REV (its own
``bench/bench_*.py``, importing its own modules) and in this tree, and the first figure and the
ratio of every row both runs report go into one table: ``bench/results/before_after.md``.

Rows are matched by their first cell (the measurement's name), so a benchmark whose rows were
renamed between the two revisions shows only the rows both name.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO_ROOT = BENCH.parent
OUTPUT = BENCH / "results" / "before_after.md"

# Benchmarks of the code paths a restructuring of server/ could slow down. The sandbox, proxy,
# shell and git_guard benchmarks measure the bash sandbox (not moved by a restructuring, and
# changed by other work between revisions); vscode_view measures the chat view's page.
DEFAULT = (
    "server",
    "first_ask",
    "loop",
    "runtime",
    "streaming",
    "checkpoints",
    "compaction",
    "config",
    "filesystem",
)
NUMBER = re.compile(r"^[+-]?\d[\d,]*(\.\d+)?")


@dataclass
class Row:
    figure: str  # the first cell that starts with a number
    ratio: str  # the first cell under a header naming a ratio ("" when there is none)


def parse_tables(markdown: str) -> dict[str, Row]:
    """Every table row of a results file, by its first cell."""
    rows: dict[str, Row] = {}
    header: list[str] | None = None
    for line in markdown.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = [cell.lower() for cell in cells]
            continue
        if all(set(cell) <= set(":- ") for cell in cells):
            continue  # the |---|---:| line
        figure = next((cell for cell in cells[1:] if NUMBER.match(cell)), "")
        ratio_columns = [i for i, name in enumerate(header) if "ratio" in name and i < len(cells)]
        ratio = cells[ratio_columns[0]] if ratio_columns else ""
        if figure:
            rows.setdefault(cells[0], Row(figure, ratio))
    return rows


def number(cell: str) -> float | None:
    match = NUMBER.match(cell.replace("`", ""))
    return float(match.group(0).replace(",", "")) if match else None


def change(before: str, after: str) -> str:
    old, new = number(before), number(after)
    if old is None or new is None or old == 0:
        return ""
    return f"{new / old:.2f}x"


def worktree(rev: str, into: Path) -> Path:
    path = into / "before"
    subprocess.run(
        ["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", "--quiet", str(path), rev],
        check=True,
    )
    return path


def render(rev: str, commit: str, results: dict[str, tuple[str, str]], notes: list[str]) -> str:
    lines = [
        "# Before and after, one run",
        "",
        f"`uv run python bench/run.py --compare {rev}`: each benchmark ran in a worktree of "
        f"`{commit[:10]}` (before) and in this tree (after), alternately, on the same machine "
        f"({time.strftime('%Y-%m-%d %H:%M')}). *figure* is each row's first figure, *ratio* "
        "its ratio to the baseline of its own run; *after/before* compares the figures.",
        "",
        "| benchmark | measurement | before | after | after/before | ratio before | ratio after |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, (before_md, after_md) in results.items():
        before, after = parse_tables(before_md), parse_tables(after_md)
        for label, row in after.items():
            if label not in before:
                continue
            old = before[label]
            cells = [name, label, old.figure, row.figure, change(old.figure, row.figure)]
            cells += [old.ratio, row.ratio]
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    lines += ["", *notes]
    return "\n".join(lines).rstrip() + "\n"


def compare(
    rev: str,
    names: list[str],
    run: Callable[[str, Path], tuple[int, float]],
    scripts: dict[str, Path],
) -> int:
    """Run ``names`` (default :data:`DEFAULT`) before and after; write :data:`OUTPUT`."""
    commit = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", rev], check=True, capture_output=True, text=True
    ).stdout.strip()
    wanted = names or [name for name in DEFAULT if name in scripts]
    results: dict[str, tuple[str, str]] = {}
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="agent-lsp-bench-") as tmp:
        old_tree = worktree(commit, Path(tmp))
        try:
            for name in wanted:
                old_script = old_tree / "bench" / f"bench_{name}.py"
                if not old_script.exists():
                    notes.append(f"- `{name}`: not in `{commit[:10]}`.")
                    continue
                # Before first: the later run gets the warmer page cache, so any bias
                # favours the old code.
                old_code, _ = run(f"{name} (before)", old_script)
                new_code, _ = run(f"{name} (after)", scripts[name])
                if old_code or new_code:
                    notes.append(f"- `{name}`: failed (before {old_code}, after {new_code}).")
                    continue
                old_md = (old_tree / "bench" / "results" / f"{name}.md").read_text("utf-8")
                new_md = (BENCH / "results" / f"{name}.md").read_text("utf-8")
                results[name] = (old_md, new_md)
        finally:
            subprocess.run(
                ["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(old_tree)],
                check=False,
            )
    OUTPUT.write_text(render(rev, commit, results, notes), encoding="utf-8")
    print(f"== wrote {OUTPUT.relative_to(REPO_ROOT)}", flush=True)
    return 1 if any("failed" in note for note in notes) else 0


if __name__ == "__main__":
    sys.exit("run it as: uv run python bench/run.py --compare REV [names]")
