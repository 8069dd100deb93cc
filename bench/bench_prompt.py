"""The system prompt an ask builds anew (issue 24), next to the prompt assembly before it.

    uv run python bench/bench_prompt.py

Since issue 24 every ask runs ``Project.commands(workspace)`` (the prompt files a ``/NAME``
may name; in a thread, as ``AgentEngine.ask`` does) and ``Project.prompt(workspace,
settings, documents)``: the environment block (OS, shell, date, the folder's git branch
and status summary, kept until ``HEAD`` or the index changes or
``STATUS_MAX_AGE_S`` passes), the base prompt, the skills list and the instructions.
Before it, an ask's prompt assembly was ``server.project.prompts.system_prompt(root,
override)`` alone (a string replace): the baseline, timed in the same run, alternating
with the measured call (the order reversed every round).

The workspace: a git repository of 100,000 committed files (1,000 folders of 100, a few
distinct bytes each, written by ``git fast-import`` and checked out) with a 32 KB
``AGENTS.md``, five skills under ``.agents/skills/``, a prompt file under
``.agents/commands/``, 5 modified files and 2 untracked ones. It is kept under
``/var/tmp`` between runs (``BENCH_PROMPT_CACHE`` names another folder; delete it to build
it again). In-process, on one event loop, ``settings = AgentSettings()`` (the default
sandbox and approval), no editor documents, an empty user configuration folder.

1. Cached: the same inputs as the previous ask, a few ms later (the git summary kept).
   Target: <= 5 ms added over the baseline, the git summary included.
2. Nothing changed, but the previous ask was more than ``STATUS_MAX_AGE_S`` ago (the kept
   summary is given with its age while a fresh one is made in the background).
3. The first ask (cold: no summary kept; ``git status`` of the 100,000 files).
4. After an index change (a file staged or unstaged between asks: the summary recomputed).
5. For scale: ``git status --porcelain`` alone, and the server's own git command line.

Writes ``bench/results/prompt.md`` and this benchmark's section of ``bench/README.md``.
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import os
import platform
import pstats
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

from server.project import environment  # noqa: E402
from server.project import instructions as instruction_files  # noqa: E402
from server.project import skills as skill_files  # noqa: E402
from server.project.project import Project  # noqa: E402
from server.project.prompts import system_prompt  # noqa: E402
from server.settings.settings import AgentSettings  # noqa: E402
from tooling.workspace import Workspace  # noqa: E402
from tools.sandbox import SandboxPolicy, support  # noqa: E402
from tools.workspace_git import GitRunner  # noqa: E402

RESULTS = REPO_ROOT / "bench" / "results" / "prompt.md"
README = REPO_ROOT / "bench" / "README.md"
CACHE = Path(os.environ.get("BENCH_PROMPT_CACHE", "/var/tmp/agent-lsp-bench-prompt"))
LAYOUT = "v1"  # bump when the workspace below changes: the cached one is built again
DIRS, FILES_PER_DIR = 1000, 100
AGENTS_BYTES = 32 * 1024
SKILLS = ("code-review", "db-migrations", "release-notes", "perf-triage", "api-docs")
MODIFIED = 5
UNTRACKED = 2
CACHED_ROUNDS = 400
GIT_ROUNDS = 15
TARGET_MS = 5.0
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}
MED = statistics.median


# -- the workspace -----------------------------------------------------------------------


def agents_md() -> bytes:
    """Exactly AGENTS_BYTES of plausible instructions (at the default cap: not cut)."""
    lines = ["# Project instructions", ""]
    n = 0
    while sum(len(line) + 1 for line in lines) < AGENTS_BYTES:
        n += 1
        lines.append(
            f"- Rule {n}: keep module {n % 97} free of import cycles; run `make check-{n % 13}` "
            "before you hand a change back, and say which tests cover it."
        )
    text = "\n".join(lines).encode()[: AGENTS_BYTES - 1] + b"\n"
    assert len(text) == AGENTS_BYTES
    return text


def skill_md(name: str) -> bytes:
    body = "".join(
        f"{n}. Step {n} of the {name} procedure: check, then record.\n" for n in range(60)
    )
    return (
        f"---\nname: {name}\ndescription: >-\n  Use for {name.replace('-', ' ')} tasks: what "
        f"to look at first,\n  which scripts to run and what to report.\nlicense: MIT\n---\n\n"
        f"# {name}\n\n{body}"
    ).encode()


COMMAND_MD = (
    b"---\ndescription: Review the named files for bugs and missing tests\n"
    b"argument-hint: <files>\n---\n\nReview $ARGUMENTS: list bugs first, then missing tests.\n"
)


def project_files() -> dict[str, bytes]:
    files = {
        "AGENTS.md": agents_md(),
        ".agents/commands/review.md": COMMAND_MD,
        ".gitignore": b".venv/\n__pycache__/\n",
    }
    for name in SKILLS:
        files[f".agents/skills/{name}/SKILL.md"] = skill_md(name)
    return files


def tree_path(d: int, f: int) -> str:
    name = f"f{f:03d}.py" if f % 5 else f"notes{f:03d}.md"
    return f"src/pkg{d // 100:02d}/mod{d:03d}/{name}"


def fast_import_stream(out: io.BufferedWriter) -> None:
    """One commit of the 100,000 files and the project's own files."""
    out.write(b"commit refs/heads/main\nmark :1\n")
    out.write(b"author bench <bench@example.com> 1700000000 +0000\n")
    out.write(b"committer bench <bench@example.com> 1700000000 +0000\n")
    out.write(b"data 5\ntree\n")
    entries = [(path, data) for path, data in project_files().items()]
    for d in range(DIRS):
        for f in range(FILES_PER_DIR):
            data = f"# module {d}, file {f}\nVALUE = {d * FILES_PER_DIR + f}\n".encode()
            entries.append((tree_path(d, f), data))
    for path, data in entries:
        out.write(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
    out.write(b"\n")


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=root,
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env=GIT_ENV,
    )
    return done.stdout.decode()


def modified_paths() -> list[str]:
    return [tree_path(100 * n + 7, 11) for n in range(MODIFIED)]


def workspace_state(root: Path) -> None:
    """The few changes an ask would find (idempotent: the same bytes every run)."""
    for n, rel in enumerate(modified_paths()):
        path = root / rel
        path.write_text(f"# module, changed\nVALUE = {n}\nEXTRA = True\n")
    for n in range(UNTRACKED):
        (root / f"scratch{n}.txt").write_text(f"notes {n}\n")


def build(root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    importer = subprocess.Popen(
        ["git", "fast-import", "--quiet"], cwd=root, stdin=subprocess.PIPE, env=GIT_ENV
    )
    assert importer.stdin is not None
    with importer.stdin as pipe:
        fast_import_stream(pipe)  # type: ignore[arg-type]
    if importer.wait() != 0:
        raise SystemExit("git fast-import failed")
    git(root, "reset", "-q", "--hard", "main")  # the working tree and a full index


def prepare() -> tuple[Path, str, float]:
    """The workspace (built, or as kept from an earlier run), how, and how long it took."""
    started = time.perf_counter()
    root = CACHE / "workspace"
    stamp = CACHE / "layout"
    how = "kept from an earlier run"
    try:
        fresh = stamp.read_text() != LAYOUT or not (root / ".git").is_dir()
        if not fresh:
            git(root, "rev-parse", "--verify", "-q", "main")
    except (OSError, subprocess.CalledProcessError):
        fresh = True
    if fresh:
        print(f"building the workspace in {root} (git fast-import) ...", file=sys.stderr)
        CACHE.mkdir(parents=True, exist_ok=True)
        stamp.unlink(missing_ok=True)
        build(root)
        stamp.write_text(LAYOUT)
        how = "built with `git fast-import` + `git reset --hard`"
    git(root, "reset", "-q")  # nothing staged (an interrupted run may have left some)
    workspace_state(root)
    settled = time.time() - 120  # edited a while ago, not racily clean for git
    for rel in [*modified_paths(), *(f"scratch{n}.txt" for n in range(UNTRACKED))]:
        os.utime(root / rel, (settled, settled))
    git(root, "update-index", "-q", "--refresh")  # what the user's own git would leave
    return root, how, time.perf_counter() - started


# -- timing ------------------------------------------------------------------------------


class Bench:
    def __init__(self, root: Path, user_dir: Path) -> None:
        self.root = root
        self.workspace = Workspace(root)
        self.settings = AgentSettings()
        self.warnings: list[str] = []
        self.project = Project(user_dir, self.warnings.append)
        self.loop = asyncio.new_event_loop()
        self.last_system = ""

    def run(self, work: Awaitable[float]) -> float:
        return self.loop.run_until_complete(work)  # type: ignore[arg-type]

    async def ask(self) -> float:
        """What an ask spends on its prompt since issue 24, as ``AgentEngine.ask`` runs it."""
        started = time.perf_counter()
        commands = await asyncio.to_thread(self.project.commands, self.workspace)
        told = await self.project.prompt(self.workspace, self.settings, None)
        elapsed = time.perf_counter() - started
        assert "review" in commands.commands
        self.last_system = told.system
        return elapsed

    async def baseline(self) -> float:
        """What it spent before: the base prompt with the folder filled in."""
        started = time.perf_counter()
        text = system_prompt(self.workspace.root, self.settings.system_prompt)
        elapsed = time.perf_counter() - started
        assert text
        return elapsed

    def pair(self, round_: int, before: Callable[[], None] | None = None) -> tuple[float, float]:
        """(ask, baseline), in the order of the round; ``before`` runs untimed before the ask."""
        out: dict[str, float] = {}
        order = ("ask", "baseline") if round_ % 2 == 0 else ("baseline", "ask")
        for name in order:
            if before is not None and name == "ask":
                before()
            out[name] = self.run(self.ask() if name == "ask" else self.baseline())
        return out["ask"], out["baseline"]

    def summary(self) -> environment.GitSummary:
        return environment._cache[self.root]

    def part(self, name: str) -> float:
        """One component of ``Project.prompt``, as it runs there (for the breakdown)."""

        async def timed() -> float:
            ws, settings = self.workspace, self.settings
            started = time.perf_counter()
            if name == "commands":
                await asyncio.to_thread(self.project.commands, ws)
            elif name == "environment":
                await asyncio.to_thread(
                    environment.environment_block,
                    [ws.root],
                    settings.sandbox,
                    settings.approval.approval,
                )
            elif name == "instructions":
                await instruction_files.project_instructions(
                    self.project.user_dir,
                    ws,
                    settings.instruction_files,
                    settings.instructions_max_bytes,
                    None,
                )
            elif name == "skills":
                await asyncio.to_thread(skill_files.discover, self.project.skills_dir, ws)
            elif name == "hop":
                await asyncio.to_thread(int)
            return time.perf_counter() - started

        return self.run(timed())


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def plain_status(root: Path) -> None:
    subprocess.run(
        ["git", "status", "--porcelain"],
        cwd=root,
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )


def server_status(root: Path) -> None:
    """What ``environment._status`` runs: the status, confined (``tools.workspace_git``)."""
    done = GitRunner.of(root, SandboxPolicy()).run_sync(root, *environment.STATUS_ARGS, timeout=30)
    assert done is not None and done[0] == 0, done


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.2f} ms" if seconds < 0.1 else f"{seconds * 1000:,.0f} ms"


def p90(values: list[float]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))]


def profile_cached(bench: Bench) -> tuple[float, list[tuple[str, float]], str]:
    """Where a cached ask's time goes: cProfile of what its threads run, called here in
    sequence (cProfile sees one thread). Returns the seconds per ask under the profiler,
    own time per group of code, and the top functions by own time."""
    ws, settings, project = bench.workspace, bench.settings, bench.project
    agents = ws.root / "AGENTS.md"

    def one_ask() -> None:
        project.commands(ws)
        environment.environment_block([ws.root], settings.sandbox, settings.approval.approval)
        instruction_files._read_disk(project.user_dir / "AGENTS.md")  # type: ignore[operator]
        text = instruction_files._read_disk(agents)
        found = skill_files.discover(project.skills_dir, ws)
        system_prompt(ws.root, settings.system_prompt)
        skill_files.render(found.skills)
        assert text is not None

    count = 100
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for _ in range(count):
        one_ask()
    profiler.disable()
    per_ask = (time.perf_counter() - started) / count
    stats = pstats.Stats(profiler)
    groups: dict[str, float] = {}
    rows = []
    for (filename, line, function), entry in stats.stats.items():  # type: ignore[attr-defined]
        own = entry[2] / count
        groups[group_of(filename)] = groups.get(group_of(filename), 0.0) + own
        rows.append((own, f"{short(filename)}:{line}({function})", entry[1] // count))
    rows.sort(reverse=True)
    top = "\n".join(
        f"{own * 1e6:8.1f} µs  {calls:5d} calls  {name}" for own, name, calls in rows[:12]
    )
    return per_ask, sorted(groups.items(), key=lambda kv: -kv[1]), top


def group_of(filename: str) -> str:
    if "/yaml/" in filename:
        return "PyYAML (the front matter)"
    if filename.endswith("pathlib.py"):
        return "pathlib"
    if "/server/" in filename or "/tooling/" in filename:
        return "agent-lsp's own code (server/, tooling/)"
    if filename == "~":
        return "built-ins (open, read, stat, iterdir, str methods)"
    return "other standard library"


def short(filename: str) -> str:
    for prefix in (str(REPO_ROOT) + "/", os.path.dirname(os.__file__) + "/"):
        filename = filename.removeprefix(prefix)
    return filename.split("site-packages/")[-1]


def yaml_costs(root: Path) -> tuple[float, float | None]:
    """One skill's front matter: PyYAML's pure-Python safe loader and libyaml's
    ``CSafeLoader`` (what the server runs where PyYAML has it; None when it has not)."""
    import yaml

    text = (root / ".agents" / "skills" / SKILLS[0] / "SKILL.md").read_text()
    head = text.split("---\n")[1]
    count = 500

    def per_call(call: Callable[[], object]) -> float:
        started = time.perf_counter()
        for _ in range(count):
            call()
        return (time.perf_counter() - started) / count

    pure = per_call(lambda: yaml.safe_load(head))
    fast = None
    if getattr(yaml, "__with_libyaml__", False):
        fast = per_call(lambda: yaml.load(head, Loader=yaml.CSafeLoader))
    return pure, fast


def main() -> None:
    if shutil.which("git") is None:
        sys.exit("git is required for this benchmark")
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    root, how, setup_s = prepare()
    with tempfile.TemporaryDirectory(prefix="bench-prompt-") as tmp:
        user_dir = Path(tmp) / "agent-lsp"  # the user's configuration folder, empty
        user_dir.mkdir()
        bench = Bench(root, user_dir)

        # Once per process (for information): the sandbox probe, then the first ask (it
        # also starts the thread pool).
        environment._cache.clear()
        probe = timed(support)
        very_first = bench.run(bench.ask())
        first_system = bench.last_system
        assert "# Instructions from AGENTS.md" in first_system, first_system[:500]
        assert all(f"- {name}:" in first_system for name in SKILLS)
        assert not bench.warnings, bench.warnings
        git_line = next(
            line for line in first_system.splitlines() if line.startswith("Workspace folder")
        )

        # 1. Cached, alternating with the baseline.
        print("cached asks ...", file=sys.stderr)
        for round_ in range(20):  # warm-up
            bench.pair(round_)
        cached: list[float] = []
        cached_base: list[float] = []
        refreshed = 0

        def fresh_enough() -> None:
            nonlocal refreshed
            if time.monotonic() - bench.summary().at > environment.STATUS_MAX_AGE_S - 2:
                refreshed += 1  # untimed: the next ask is to find the summary kept
                bench.run(bench.ask())

        for round_ in range(CACHED_ROUNDS):
            fresh_enough()
            kept = bench.summary()
            ours, base = bench.pair(round_)
            assert bench.summary() is kept, "the summary was recomputed in a cached round"
            cached.append(ours)
            cached_base.append(base)

        # Breakdown of a cached ask (interleaved, for where the time goes).
        parts = ("commands", "environment", "instructions", "skills", "hop")
        breakdown: dict[str, list[float]] = {name: [] for name in parts}
        for round_ in range(100):
            fresh_enough()
            for name in parts if round_ % 2 else reversed(parts):
                breakdown[name].append(bench.part(name))
        fresh_enough()
        profile = profile_cached(bench)
        yaml_pure, yaml_fast = yaml_costs(root)

        # 2.-5. Asks that run git status, and git status alone.
        print("asks that run git status ...", file=sys.stderr)
        staged = [False]
        target = modified_paths()[0]

        def expire() -> None:  # the previous ask was longer ago than STATUS_MAX_AGE_S
            kept = bench.summary()
            old = kept.at - environment.STATUS_MAX_AGE_S - 1
            environment._cache[root] = environment.GitSummary(kept.text, old, kept.key)

        def cold() -> None:  # the first ask of a server process
            environment._cache.clear()

        def index_change() -> None:  # the user staged or unstaged a file since
            git(root, "reset", "-q", "--", target) if staged[0] else git(root, "add", target)
            staged[0] = not staged[0]

        slow: dict[str, tuple[list[float], list[float]]] = {
            "expired": ([], []),
            "cold": ([], []),
            "index": ([], []),
        }
        befores = {"expired": expire, "cold": cold, "index": index_change}
        status_plain: list[float] = []
        status_server: list[float] = []
        texts: set[str] = set()
        for round_ in range(GIT_ROUNDS):
            names = list(slow) if round_ % 2 == 0 else list(reversed(slow))
            for name in names:
                ours, base = bench.pair(round_, befores[name])
                slow[name][0].append(ours)
                slow[name][1].append(base)
                texts.add(bench.summary().text)
            if round_ % 2:
                status_plain.append(timed(lambda: plain_status(root)))
                status_server.append(timed(lambda: server_status(root)))
            else:
                status_server.append(timed(lambda: server_status(root)))
                status_plain.append(timed(lambda: plain_status(root)))
        if staged[0]:
            index_change()
        bench.loop.close()
    total = time.perf_counter() - started
    load_end = os.getloadavg()[0]
    skipped = [t for t in texts if "skipped" in t or "unknown" in t]
    write(
        dict(
            root=root,
            how=how,
            setup_s=setup_s,
            very_first=very_first,
            probe=probe,
            git_line=git_line,
            system_chars=len(first_system),
            cached=cached,
            cached_base=cached_base,
            refreshed=refreshed,
            breakdown=breakdown,
            profile=profile,
            yaml_pure=yaml_pure,
            yaml_fast=yaml_fast,
            slow=slow,
            status_plain=status_plain,
            status_server=status_server,
            skipped=skipped,
            total=total,
            load_start=load_start,
            load_end=load_end,
        )
    )


def write(r: dict[str, object]) -> None:
    cached: list[float] = r["cached"]  # type: ignore[assignment]
    cached_base: list[float] = r["cached_base"]  # type: ignore[assignment]
    slow: dict[str, tuple[list[float], list[float]]] = r["slow"]  # type: ignore[assignment]
    breakdown: dict[str, list[float]] = r["breakdown"]  # type: ignore[assignment]
    status_plain: list[float] = r["status_plain"]  # type: ignore[assignment]
    status_server: list[float] = r["status_server"]  # type: ignore[assignment]
    base = MED(cached_base)
    per_ask, groups, top = r["profile"]  # type: ignore[misc]
    yaml_pure, yaml_fast = float(r["yaml_pure"]), r["yaml_fast"]  # type: ignore[arg-type]
    yaml_line = (
        f"One SKILL.md's front matter: PyYAML's pure-Python `SafeLoader` "
        f"{yaml_pure * 1e6:.0f} µs"
        + (
            f"; libyaml's `CSafeLoader` (what `frontmatter.split` runs where PyYAML has it, "
            f"as here) {float(yaml_fast) * 1e6:.0f} µs, "  # type: ignore[arg-type]
            f"{yaml_pure / float(yaml_fast):.0f}x less"  # type: ignore[arg-type]
            if yaml_fast is not None
            else "; PyYAML here has no libyaml (`CSafeLoader`)"
        )
        + f". An ask parses {len(SKILLS) + 1} (the skills and the prompt file)."
    )
    added = MED(cached) - base
    met = added * 1000 <= TARGET_MS
    status = MED(status_plain)

    rows = [
        (
            "cached: same inputs as the previous ask (git summary kept)",
            cached,
            cached_base,
            f"≤ {TARGET_MS:g} ms added: {'met' if met else 'NOT met'}",
        ),
        (
            "nothing changed, previous ask > "
            f"{environment.STATUS_MAX_AGE_S:g} s ago (summary given, refreshed behind)",
            *slow["expired"],
            "(for information)",
        ),
        ("first ask (cold: no summary kept; git status)", *slow["cold"], "(for information)"),
        (
            "after an index change (a file staged/unstaged: summary recomputed)",
            *slow["index"],
            "(for information)",
        ),
    ]
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    lines = [
        "# System prompt per ask (issue 24)",
        "",
        f"`uv run python bench/bench_prompt.py`; {time.strftime('%Y-%m-%d %H:%M')}, "
        f"{os.cpu_count()} CPUs (shared with other jobs), Python {platform.python_version()}, "
        f"{git_version.strip()}; 1-minute load average {r['load_start']:.1f} at the start, "
        f"{r['load_end']:.1f} at the end; whole run {r['total']:.0f} s (workspace "
        f"{r['how']}: {r['setup_s']:.0f} s).",
        "",
        f"Workspace: a git repository of {DIRS * FILES_PER_DIR:,} committed files, a "
        f"{AGENTS_BYTES:,}-byte `AGENTS.md`, {len(SKILLS)} skills in `.agents/skills/`, one "
        f"prompt file in `.agents/commands/`, {MODIFIED} modified and {UNTRACKED} untracked "
        f"files. *Ask*: `await asyncio.to_thread(project.commands, workspace)` then `await "
        "project.prompt(workspace, AgentSettings(), None)`, on one event loop, as "
        "`AgentEngine.ask` runs them. *Baseline*: `system_prompt(root, None)`, what an ask "
        "ran before issue 24, alternating with the ask (order reversed every round). "
        f"Medians (p90); {len(cached)} rounds cached, {GIT_ROUNDS} of each case that runs git. "
        f"The system prompt is {r['system_chars']:,} characters (the baseline's "
        f"{len(system_prompt(Path(str(r['root']))))}); its git line: `{r['git_line']}`.",
        "",
        "| measurement | ask (issue 24) | baseline | added | target |",
        "|---|---:|---:|---:|---|",
    ]
    for what, ours, theirs, target in rows:
        lines.append(
            f"| {what} | {ms(MED(ours))} (p90 {ms(p90(ours))}) | {MED(theirs) * 1e6:.1f} µs | "
            f"+{ms(MED(ours) - MED(theirs))} | {target} |"
        )
    lines += [
        f"| for scale: `git status --porcelain` alone | {ms(status)} (p90 "
        f"{ms(p90(status_plain))}) | | | |",
        "| for scale: the server's git command (`-c core.fsmonitor=false status "
        "--porcelain=v1 --no-renames`, `GIT_OPTIONAL_LOCKS=0`) | "
        f"{ms(MED(status_server))} (p90 {ms(p90(status_server))}) | | | |",
        "",
        "#### Where a cached ask's time goes",
        "",
        "Each part timed on its own as `Project.prompt` runs it (100 interleaved rounds, "
        "medians): ",
        "",
        "| part | median | p90 |",
        "|---|---:|---:|",
    ]
    labels = {
        "commands": "`Project.commands` (built-ins, `.agents/commands/`), in a thread",
        "environment": "`environment_block` (git summary kept: 2 stats, `HEAD` read), in a thread",
        "instructions": "`project_instructions` (user `AGENTS.md` absent, 32 KB `AGENTS.md`), "
        "2 thread hops",
        "skills": f"`skills.discover` ({len(SKILLS)} SKILL.md, YAML front matter), in a thread",
        "hop": "one empty `asyncio.to_thread` hop (for scale)",
    }
    for name, values in breakdown.items():
        lines.append(f"| {labels[name]} | {ms(MED(values))} | {ms(p90(values))} |")
    lines += [
        "",
        f"The parts, each timed alone, add up to "
        f"{ms(sum(MED(v) for k, v in breakdown.items() if k != 'hop'))} (the whole ask: "
        f"{ms(MED(cached))}). A cached ask makes 5 `asyncio.to_thread` hops in sequence (commands, "
        "environment, the user's and the folder's instruction file, skills): under load, "
        "waiting for a thread to be scheduled is much of its p90.",
        "",
        f"cProfile of the same work called in sequence in one thread (100 asks; "
        f"{ms(per_ask)} per ask under the profiler, which inflates code of many small calls "
        "such as PyYAML's), own time per ask by code:",
        "",
        "| code | own time per ask |",
        "|---|---:|",
        *[f"| {name} | {ms(own)} |" for name, own in groups],
        "",
        "Top functions by own time per ask:",
        "",
        "```",
        *top.splitlines(),
        "```",
        "",
        yaml_line,
        "",
        "#### Verdict",
        "",
    ]
    expired = MED(slow["expired"][0])
    slowest = max(max(v[0]) for v in slow.values())
    verdict = (
        f"- Cached ask (≤ {TARGET_MS:g} ms added, git summary included): "
        f"{'met' if met else 'NOT met'} (+{ms(added)}; p90 +{ms(p90(cached) - base)})."
    )
    if not met:
        verdict += " See the breakdown above for where it goes."
    lines.append(verdict)
    lines.append(
        f"- An ask more than {environment.STATUS_MAX_AGE_S:g} s after the previous one "
        "(`STATUS_MAX_AGE_S`; the common case, with the model's answer and the user's reading "
        "and typing between) with nothing changed gets the kept summary with its age while a "
        f"thread makes a fresh one for the next ask: {ms(expired)}, "
        f"{expired / status:.2f}x `git status --porcelain` alone."
    )
    lines.append(
        f"- First ask {ms(MED(slow['cold'][0]))} and after an index change "
        f"{ms(MED(slow['index'][0]))}: {MED(slow['cold'][0]) / status:.2f}x and "
        f"{MED(slow['index'][0]) / status:.2f}x `git status --porcelain` alone, within the "
        f"{environment.GIT_BUDGET_S:g} s git budget (slowest ask: {ms(slowest)}, "
        f"{environment.GIT_BUDGET_S / slowest:.1f}x under the budget at this load)"
        + (
            "."
            if not r["skipped"]
            else f" -- NOT always: the summary said {sorted(r['skipped'])!r}."  # type: ignore[arg-type]
        )
    )
    lines.append(
        f"- Once per process (for information): the sandbox probe the environment block's "
        f"sandbox line needs (`tools.sandbox.support()`, cached) {ms(float(r['probe']))}; "
        f"then the process's first ask (git status, the thread pool's start) "
        f"{ms(float(r['very_first']))}."  # type: ignore[arg-type]
    )
    if int(r["refreshed"]):  # type: ignore[call-overload]
        lines.append(
            f"- The cached rounds refreshed the summary {r['refreshed']} times, untimed, "
            f"so that no timed round found it older than {environment.STATUS_MAX_AGE_S:g} s."
        )
    lines.append("")
    text = "\n".join(lines)
    print(text)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    readme_section()


def readme_section() -> None:
    """This benchmark's section of bench/README.md, as ``bench/run.py`` renders it; the
    other sections are left as they are."""
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    from run import nest

    written = time.strftime("%Y-%m-%d %H:%M", time.localtime(RESULTS.stat().st_mtime))
    section = [
        "## prompt",
        "",
        f"From `bench/bench_prompt.py`; `bench/results/prompt.md` written {written}.",
        "",
        nest(RESULTS.read_text(encoding="utf-8").strip(), 3),
        "",
    ]
    lines = README.read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("## ")]
    mine = [i for i in starts if lines[i] == "## prompt"]
    if mine:
        begin = mine[0]
        end = next((i for i in starts if i > begin), len(lines))
    else:  # before the first section whose name sorts after ours
        begin = next((i for i in starts if lines[i][3:] > "prompt"), len(lines))
        end = begin
    lines[begin:end] = "\n".join(section).splitlines()
    README.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
